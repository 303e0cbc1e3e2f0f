/**
 * `npm start`: the headless server on its embedded defaults, built by bootstrap.ts as the desktop
 * shell builds its own. package.json runs it through scripts/start.mjs, which imports the bundle
 * of this file (dist/server/main.js); it can also be run directly.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { VopServer } from './app.js';
import { bootstrapServer } from './bootstrap.js';
import { createLogger, lineLog, type VopLogger } from './logging/logger.js';
import { HelpRequested, START_USAGE, parseStartArgs, servedAddresses, type StartConfig } from './startArgs.js';

/**
 * Where everything this process says goes once its flags are read: with `--log-format json`
 * every line it prints is a record. Until then (a bad flag, --help), plain text.
 */
let logger: VopLogger | undefined;

/**
 * A second signal this soon after the first is the same request delivered twice, not a demand to
 * exit now: a terminal's Ctrl-C reaches npm and the server (one process group), and npm forwards
 * its copy; a supervisor that signals the whole group (systemd's default) does the same with
 * SIGTERM.
 */
const SAME_REQUEST_MS = 1000;

async function main(): Promise<void> {
  let config;
  try {
    config = parseStartArgs(process.argv.slice(2));
  } catch (err) {
    if (err instanceof HelpRequested) {
      console.log(START_USAGE);
      return;
    }
    console.error(`${(err as Error).message}\n\n${START_USAGE}`);
    process.exitCode = 2;
    return;
  }
  const log = (logger = startLogger(config));
  // The server's own lines, and its operator's lines (uploads, transcodes, callbacks), go to it.
  config.options.log = lineLog(log);
  config.options.operatorLog = { logger: log, requests: config.logging?.requests ?? false };
  // What the process says of itself (its addresses, that it stops) is said whatever the level:
  // supervisors, scripts and tests read the listening line for the port.
  const say = log.isLevelEnabled('info') ? log : log.child({}, { level: 'info' });
  if (config.adminTokenFromFlag) {
    // Never the token itself: this line ends up in logs too.
    log.warn(
      'WARNING: --admin-token is on the command line, where every local user can read it (ps, /proc/<pid>/cmdline) and npm prints it. ' +
        'Set VOP_ADMIN_TOKEN instead, or leave it out: the token is then kept in <data dir>/admin-token (readable by its owner only).',
    );
  }
  // Signals are handled from the start: one that arrives while the server starts (or just as it
  // says it is listening) must still shut it down cleanly, not kill it mid-write.
  let vop: VopServer | undefined;
  let stopSignal: string | undefined;
  let stopAt = 0;
  const stop = (signal: string) => {
    if (stopSignal) {
      if (Date.now() - stopAt < SAME_REQUEST_MS) return;
      say.info(`${signal} again: exiting now.`);
      process.exit(1);
    }
    stopSignal = signal;
    stopAt = Date.now();
    say.info(`${signal}: shutting down…`);
    if (vop) shutDown(vop);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // The terminal it ran in went away: stop cleanly too, rather than die mid-write (Node's default).
  process.on('SIGHUP', () => stop('SIGHUP'));

  // A port taken is said before anything is made: a first start must not leave a data folder
  // and an admin token behind for a server that never ran. (With a folder there already, its
  // saved settings may choose the port: then the listen below says it.)
  if (config.port !== 0 && (config.portGiven || !fs.existsSync(config.options.dataDir!)) && (await portTaken(config.port, config.host))) {
    log.error(portTakenMessage(config.port, config.host));
    process.exitCode = 1;
    return;
  }
  // Settings saved from the console's Settings page apply under the flags given here.
  ({ vop, config } = await bootstrapServer(config));
  if (stopSignal) return shutDown(vop);
  let address;
  try {
    address = await vop.listen(config.port, config.host);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    log.error(portTakenMessage(config.port, config.host));
    await vop.close();
    process.exitCode = 1;
    return;
  }
  const addresses = servedAddresses(config.host, address.port).filter((a) => a.served).map((a) => a.url);
  if (config.logging?.format === 'json') {
    // One record whose fields are the addresses: a log shipper reads them, not indented lines.
    const metricsPort = vop.metricsAddress();
    say.info(
      {
        dataDir: vop.options.dataDir,
        role: vop.options.role ?? 'all',
        addresses,
        ...(vop.options.role === 'worker'
          ? { health: `${addresses[0]}/healthz` }
          : { api: addresses.map((a) => `${a}/Api/Video`), console: `${addresses[0]}/console`, adminApi: `${addresses[0]}/admin/api`, adminApiFrom: vop.options.adminRemote ? 'any address' : 'loopback only' }),
        ...(vop.metrics ? { metrics: `${addresses[0]}/metrics` } : {}),
        ...(metricsPort ? { metricsPort: `http://127.0.0.1:${metricsPort.port}/metrics` } : {}),
        adminToken: config.options.adminToken ? 'as given' : path.join(vop.options.dataDir, 'admin-token'),
      },
      vop.options.role === 'worker' ? 'vop worker started' : 'vop serving the Video Open Platform API',
    );
    for (const w of vop.stores.warnings()) log.warn(`WARNING: ${w}`);
    say.info({ url: addresses[0] }, `vop listening on ${addresses[0]}`);
    return;
  }
  if (vop.options.role === 'worker') {
    // A worker serves no API and no console (issue 11): its port answers /healthz only.
    say.info(`vop worker (--role worker) transcoding and pulling from the shared queue; scratch in ${vop.options.dataDir}`);
    say.info(`  health: ${addresses[0]}/healthz`);
  } else {
    const role = vop.options.role === 'api' ? ' (--role api: the workers transcode)' : '';
    say.info(`vop serving the Video Open Platform API from ${vop.options.dataDir}${role}`);
    for (const a of addresses) say.info(`  ${a}/Api/Video`);
    say.info(`  console: ${addresses[0]}/console`);
    say.info(`  admin API: ${addresses[0]}/admin/api (${vop.options.adminRemote ? 'any address' : 'loopback only'})`);
  }
  if (vop.metrics) say.info(`  metrics: ${addresses[0]}/metrics (with the admin token)`);
  const metricsPort = vop.metricsAddress();
  if (metricsPort) say.info(`  metrics: http://127.0.0.1:${metricsPort.port}/metrics (this machine only, no token)`);
  say.info(
    config.options.adminToken ? '  admin token: as given' : `  admin token: in ${path.join(vop.options.dataDir, 'admin-token')}`,
  );
  for (const w of vop.stores.warnings()) log.warn(`  WARNING: ${w}`);
  // Tests and scripts read this line for the port.
  say.info(`vop listening on ${addresses[0]}`);
}

/**
 * The log `config` asks for (--log-format, --log-level); in cluster mode each line names the node,
 * by its host name and role, so that lines gathered from several nodes say whose they are.
 */
function startLogger(config: StartConfig): VopLogger {
  const cluster = config.options.databaseUrl !== undefined;
  return createLogger({
    format: config.logging?.format ?? 'text',
    level: config.logging?.level ?? 'info',
    node: cluster ? `${os.hostname()}/${config.options.role ?? 'all'}` : undefined,
  });
}

function shutDown(vop: VopServer): void {
  vop.close().then(
    () => {
      logger!.child({}, { level: 'info' }).info('vop stopped cleanly.');
      process.exit(0);
    },
    (err) => {
      logger!.error(`Shutdown failed: ${(err as Error).stack ?? String(err)}`);
      process.exit(1);
    },
  );
}

/** Whether `port` on `host` is taken: a listen there fails with EADDRINUSE. */
function portTaken(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE'));
    probe.listen(port, host, () => probe.close(() => resolve(false)));
  });
}

function portTakenMessage(port: number, host: string): string {
  return (
    `vop could not start: port ${port} on ${host} is in use (another vop, or another program). ` +
    `Start it on another port: npm start -- --port ${port === 8080 ? 8081 : port + 1} (or VOP_PORT), or stop what holds ${port}.`
  );
}

main().catch((err) => {
  const line = `vop could not start: ${(err as Error).message}`;
  if (logger) logger.error(line);
  else console.error(line);
  process.exit(1);
});
