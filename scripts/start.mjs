#!/usr/bin/env node
// `npm start`: builds what is stale (the console, then the server bundle), each in a child
// process, then runs the server bundle (dist/server/main.js) in this very process.
//
// Why one process: supervisors (systemd, Docker, runit, a CI job's timeout) stop a service by
// signalling the process they started, npm here. npm forwards SIGTERM and SIGINT to its script's
// process, which package.json makes this one: its start script is `exec node <flags> scripts/start.mjs`,
// and the `exec` matters, because Debian's dash does not exec even a lone command of `sh -c` by
// itself. When the script was `build && build && node … main.js`, npm's signal went to sh, which
// died of it without passing it on, and the server carried on under PID 1, holding its port and
// the data-dir lock. The Node flags on that line are the server's (scripts/build-server.mjs
// startNodeFlags() reads them from there).
//
// The builds run as child processes so that Vite and esbuild leave nothing in the server's memory.
// A signal that arrives during a build goes to the build too, and this process then ends by the
// same signal, before any server has started. One that arrives while the bundle loads is passed to
// the server's own handlers once they are in place, so it stops cleanly too.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BUILDS = ['scripts/build-console.mjs', 'scripts/build-server.mjs'];
const SERVER_BUNDLE = path.join(ROOT, 'dist/server/main.js');
const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/** The first stop signal received before the server took over, and the build running then. */
let stopSignal;
let building;
const onSignal = (signal) => {
  stopSignal ??= signal;
  building?.kill(signal);
};
for (const s of SIGNALS) process.on(s, onSignal);

/** Ends this process by the signal received (no listener is left, so the default action runs). */
async function endBySignal() {
  for (const s of SIGNALS) process.off(s, onSignal);
  process.kill(process.pid, stopSignal);
  await new Promise(() => {});
}

// With `--log-format json` (or VOP_LOG_FORMAT=json) every line is a record, the builds' too.
const args = process.argv.slice(2);
const formatAt = args.findIndex((a) => a === '--log-format' || a.startsWith('--log-format='));
const format = formatAt < 0 ? process.env.VOP_LOG_FORMAT : args[formatAt].includes('=') ? args[formatAt].split('=')[1] : args[formatAt + 1];
const buildEnv = format === 'json' ? { ...process.env, VOP_BUILD_LOG: 'json' } : process.env;

for (const script of BUILDS) {
  const code = await new Promise((resolve, reject) => {
    building = spawn(process.execPath, [path.join(ROOT, script), '--if-stale'], { cwd: ROOT, stdio: 'inherit', env: buildEnv });
    building.on('error', reject);
    building.on('close', (c) => resolve(c ?? 1));
  });
  building = undefined;
  if (stopSignal) await endBySignal();
  if (code !== 0) process.exit(code);
}

// The server reads its flags from process.argv.slice(2), npm start's arguments here too, and its
// module puts its own SIGTERM and SIGINT handlers in place as it is evaluated.
await import(pathToFileURL(SERVER_BUNDLE).href);
for (const s of SIGNALS) process.off(s, onSignal);
if (stopSignal) process.kill(process.pid, stopSignal);
