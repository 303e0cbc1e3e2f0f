import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';
import { notYet, waitUntil } from './wait.js';

/**
 * A real S3 server: Ceph RGW from Debian's packages (`ceph-mon ceph-osd
 * radosgw`; npm test and .ci/run install them), as a one-node cluster in a temporary folder — one
 * monitor, one OSD on memstore (objects in memory), radosgw on 127.0.0.1 — with cephx off and an
 * S3 user whose keys the test uses. Started in about ten seconds; {@link TestCeph.stop} ends the
 * three daemons and removes the folder. No service of the machine's own, nothing outlives the run.
 * In a vitest run, one such cluster serves the whole run and each test file makes its own buckets
 * on it (see {@link startCeph}).
 *
 * s3rver is not enough: it has no ListParts, which tus on S3 needs (issue 11).
 */
export interface TestCeph {
  /** `http://127.0.0.1:<port>`: radosgw's S3 endpoint. */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** How long the start took, in ms. */
  startMs: number;
  /** The cluster's folder (logs under `log/`). */
  dir: string;
  /** Kills the daemons, waits (bounded) until they are gone and removes the folder; on the run's shared cluster, does nothing (it stops when the run ends). */
  stop(): Promise<void>;
}

/** Options of {@link startOwnCeph}. */
export interface OwnCephOptions {
  /** What the OSD's memstore may hold, in bytes (objects live in memory). Default 512 MiB. */
  memstoreBytes?: number;
}

/** Bounds of every wait here: a broken install fails the test file, it does not hang it. */
const COMMAND_TIMEOUT_MS = 30_000;
const RGW_READY_MS = 60_000;
const STOP_WAIT_MS = 5_000;
const DAEMONS = ['mon.a', 'osd.0', 'client.rgw'] as const;

/** The binaries these tests need, or the ones missing. */
export function missingCephBinaries(): string[] {
  return ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'monmaptool', 'ceph-authtool', 'ceph'].filter(
    (b) => !['/usr/bin', '/usr/sbin', '/bin'].some((d) => fs.existsSync(path.join(d, b))),
  );
}


/**
 * The Ceph RGW of the calling test file; call `stop()` in afterAll. In a vitest worker: the run's
 * one cluster (started by test/helpers/serviceBroker.ts when a file first asks), in which the file
 * makes its own buckets; starting a cluster per file cost some 15 s a file. Anywhere else (the
 * benches): a throwaway cluster of its own, as {@link startOwnCeph}.
 */
export async function startCeph(): Promise<TestCeph> {
  if (process.env.VITEST_WORKER_ID) return (await import('./sharedServices.js')).sharedCeph();
  return startOwnCeph();
}

/** Starts a throwaway Ceph cluster with radosgw of the caller's own; call `stop()` when done. */
export async function startOwnCeph(options: OwnCephOptions = {}): Promise<TestCeph> {
  const missing = missingCephBinaries();
  if (missing.length) {
    throw new Error(
      `These tests need Ceph's binaries (${missing.join(', ')} missing). npm test installs Debian's packages when run as root; otherwise: sudo apt-get install -y ceph-mon ceph-osd radosgw`,
    );
  }
  const started = performance.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-ceph-'));
  for (const sub of ['run', 'log', 'mon.a', 'osd.0']) fs.mkdirSync(path.join(dir, sub));
  const conf = path.join(dir, 'ceph.conf');
  const fsid = crypto.randomUUID();
  const monPort = await freePort();
  const rgwPort = await freePort();
  fs.writeFileSync(conf, cephConf(dir, fsid, monPort, rgwPort, options.memstoreBytes ?? 512 * 1024 ** 2));
  const ceph = (cmd: string, args: string[]) => run(cmd, ['-c', conf, ...args]);

  const stop = async () => {
    process.off('exit', killNow);
    // KILL at once: the cluster is thrown away (memstore keeps nothing), and an OSD asked to stop
    // politely takes seconds.
    const pids = DAEMONS.map((d) => readPid(dir, d)).filter((p): p is number => p !== undefined);
    for (const pid of pids) signal(pid, 'SIGKILL');
    const deadline = Date.now() + STOP_WAIT_MS;
    while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  // A test process that ends without afterAll (a crash, a timeout) takes its daemons with it.
  const killNow = () => {
    for (const d of DAEMONS) {
      const pid = readPid(dir, d);
      if (pid !== undefined) signal(pid, 'SIGKILL');
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', killNow);

  try {
    // The monitor: a map with itself alone, then the daemon (it forks once it listens).
    run('ceph-authtool', ['--create-keyring', path.join(dir, 'keyring'), '--gen-key', '-n', 'mon.', '--cap', 'mon', 'allow *']);
    run('monmaptool', ['--create', '--fsid', fsid, '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, path.join(dir, 'monmap')]);
    ceph('ceph-mon', ['-i', 'a', '--mkfs', '--monmap', path.join(dir, 'monmap'), '--keyring', path.join(dir, 'keyring')]);
    ceph('ceph-mon', ['-i', 'a']);
    // The OSD: registered with the monitor under a new uuid, made, started.
    const osdUuid = crypto.randomUUID();
    const id = ceph('ceph', ['--connect-timeout', '20', 'osd', 'new', osdUuid]).trim();
    if (id !== '0') throw new Error(`ceph osd new gave id ${JSON.stringify(id)}, not 0`);
    ceph('ceph-osd', ['-i', '0', '--mkfs', '--osd-uuid', osdUuid]);
    ceph('ceph-osd', ['-i', '0']);
    // radosgw makes its pools as it starts; the user's keys sign the tests' requests.
    ceph('radosgw', ['-n', 'client.rgw']);
    const accessKeyId = `VOP${crypto.randomBytes(8).toString('hex').toUpperCase()}`;
    const secretAccessKey = crypto.randomBytes(20).toString('hex');
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    await waitForHttp(endpoint, dir);
    ceph('radosgw-admin', ['user', 'create', '--uid=vop-test', '--display-name=vop test', `--access-key=${accessKeyId}`, `--secret=${secretAccessKey}`]);
    return { endpoint, accessKeyId, secretAccessKey, dir, startMs: Math.round(performance.now() - started), stop };
  } catch (err) {
    const logs = tailLogs(dir);
    await stop();
    throw new Error(`${(err as Error).message}\n--- Ceph logs ---\n${logs}`);
  }
}

/**
 * One node, no cephx: the daemons speak only to each other and the tests on loopback. `crc`
 * connection modes because the default for monitor clients (`secure`) needs cephx, and radosgw
 * would wait for its mount timeout instead. Pools of one replica and eight placement groups.
 */
function cephConf(dir: string, fsid: string, monPort: number, rgwPort: number, memstoreBytes: number): string {
  return `[global]
fsid = ${fsid}
mon host = v2:127.0.0.1:${monPort}
public addr = 127.0.0.1
ms bind ipv6 = false
ms bind msgr1 = false
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms client mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
ms cluster mode = crc
ms service mode = crc
client mount timeout = 20
run dir = ${dir}/run
admin socket = ${dir}/run/$name.asok
pid file = ${dir}/run/$name.pid
log file = ${dir}/log/$name.log
keyring = ${dir}/keyring
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
osd objectstore = memstore
memstore device bytes = ${memstoreBytes}
[mon.a]
mon data = ${dir}/mon.a
[osd.0]
osd data = ${dir}/osd.0
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${rgwPort}
rgw data = ${dir}/rgw
`;
}

/** Waits (bounded) until radosgw answers HTTP at all. */
async function waitForHttp(endpoint: string, dir: string): Promise<void> {
  await waitUntil(`radosgw to answer at ${endpoint} (logs in ${dir}/log)`, async () => {
    try {
      const r = await fetch(endpoint, { signal: AbortSignal.timeout(1000) });
      await r.arrayBuffer();
      return true;
    } catch (err) {
      if (readPid(dir, 'client.rgw') !== undefined && !alive(readPid(dir, 'client.rgw')!)) throw new Error('radosgw exited during start-up');
      return notYet(err);
    }
  }, { timeoutMs: RGW_READY_MS, pollMs: 250 });
}

function readPid(dir: string, daemon: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, 'run', `${daemon}.pid`), 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 1 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Gone already.
  }
}

function tailLogs(dir: string): string {
  const logDir = path.join(dir, 'log');
  if (!fs.existsSync(logDir)) return '(none)';
  return fs
    .readdirSync(logDir)
    .map((f) => `${f}:\n${fs.readFileSync(path.join(logDir, f), 'utf8').split('\n').slice(-15).join('\n')}`)
    .join('\n');
}

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS, cwd: '/' });
  if (r.error || r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout ?? ''}${r.stderr ?? ''}`);
  }
  return r.stdout;
}

/**
 * The environment of a cluster node process (`npm start`'s settings, as an operator sets them)
 * on `databaseUrl` and a bucket of `ceph`, with the test admin token and a job lease of `leaseMs`.
 */
export function clusterNodeEnv(o: { databaseUrl: string; ceph: TestCeph; bucket: string; adminToken: string; leaseMs: number }): NodeJS.ProcessEnv {
  return {
    VOP_DATABASE_URL: o.databaseUrl,
    VOP_S3_ENDPOINT: o.ceph.endpoint,
    VOP_S3_BUCKET: o.bucket,
    VOP_S3_ACCESS_KEY_ID: o.ceph.accessKeyId,
    VOP_S3_SECRET_ACCESS_KEY: o.ceph.secretAccessKey,
    VOP_S3_FORCE_PATH_STYLE: '1',
    VOP_ADMIN_TOKEN: o.adminToken,
    VOP_JOB_LEASE_MS: String(o.leaseMs),
  };
}
