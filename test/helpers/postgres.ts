import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './ports.js';

/**
 * A real PostgreSQL: Debian's `postgresql` package (npm test and .ci/run install it), a cluster
 * made by initdb in a temporary folder, listening on 127.0.0.1 on a free port with its socket in
 * that folder, stopped and removed by {@link TestPostgres.stop}. No container, no service of the
 * machine's own: nothing outlives the test run. In a vitest run, one such server serves the whole
 * run and each test file makes its own databases on it (see {@link startPostgres}).
 */
export interface TestPostgres {
  host: string;
  port: number;
  /** The address of database `name` (`postgres://postgres@127.0.0.1:<port>/<name>`). */
  url(name: string): string;
  /** Creates a new, empty database and resolves with its address. */
  createDatabase(name?: string): Promise<string>;
  /** How long making the cluster (a copy of the run's template, see clusterTemplate) and pg_ctl start took, in ms. */
  startMs: number;
  /**
   * Stops the server (immediate shutdown) and removes its folder; on the run's shared server,
   * drops the databases this handle created instead (the server stops when the run ends).
   */
  stop(): void | Promise<void>;
}

/** Options of {@link startOwnPostgres}. */
export interface OwnPostgresOptions {
  /** The server's max_connections. Default: PostgreSQL's own (100). */
  maxConnections?: number;
  /**
   * More server settings, each passed as `-c name=value` (the cluster bench's
   * `shared_preload_libraries=pg_stat_statements`). Default: none; tests get the server as above.
   */
  settings?: Record<string, string>;
}

/** Bounds of every wait here: a broken install fails the test file, it does not hang it. */
const PG_CTL_WAIT_SECONDS = 20;
const COMMAND_TIMEOUT_MS = 30_000;

/** The newest PostgreSQL server binaries of Debian's layout, /usr/lib/postgresql/<major>/bin. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (process.env.VOP_TEST_PG_BIN) return process.env.VOP_TEST_PG_BIN;
  const majors = fs.existsSync(root) ? fs.readdirSync(root).filter((d) => fs.existsSync(path.join(root, d, 'bin', 'pg_ctl'))) : [];
  majors.sort((a, b) => Number(b) - Number(a));
  return majors[0] ? path.join(root, majors[0], 'bin') : undefined;
}


let databases = 0;

/**
 * The PostgreSQL of the calling test file; call `stop()` in afterAll. In a vitest worker: the
 * run's one server (started by test/helpers/serviceBroker.ts when a file first asks), on which the
 * file makes its own databases; starting one server per file cost some 15 s a file. Anywhere else
 * (the benches): a throwaway server of its own, as {@link startOwnPostgres}.
 */
export async function startPostgres(): Promise<TestPostgres> {
  if (process.env.VITEST_WORKER_ID) return (await import('./sharedServices.js')).sharedPostgres();
  return startOwnPostgres();
}

/** Starts a throwaway PostgreSQL server of the caller's own; call `stop()` when done. */
export async function startOwnPostgres(options: OwnPostgresOptions = {}): Promise<TestPostgres> {
  const bin = postgresBinDir();
  if (!bin) {
    throw new Error(
      'These tests need PostgreSQL server binaries (initdb, pg_ctl) and none were found under /usr/lib/postgresql/*/bin. ' +
        'npm test installs Debian\'s package when run as root; otherwise: sudo apt-get install -y postgresql (or set VOP_TEST_PG_BIN).',
    );
  }
  const started = performance.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-pg-'));
  const dataDir = path.join(dir, 'data');
  // PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` user.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) fs.chownSync(dir, Number(run('id', ['-u', 'postgres']).trim()), Number(run('id', ['-g', 'postgres']).trim()));
  const pgRun = (cmd: string, args: string[]) => (asRoot ? run('runuser', ['-u', 'postgres', '--', path.join(bin, cmd), ...args]) : run(path.join(bin, cmd), args));

  // initdb takes seconds (most of it its post-bootstrap step); a copy of a cluster it made once
  // per test run takes a tenth of one.
  run('cp', ['-a', clusterTemplate(bin, pgRun), dataDir]);
  const port = await freePort();
  const serverOptions = ['-c listen_addresses=127.0.0.1', `-p ${port}`, `-k ${dir}`, '-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off'];
  if (options.maxConnections) serverOptions.push(`-c max_connections=${options.maxConnections}`);
  for (const [name, value] of Object.entries(options.settings ?? {})) {
    // pg_ctl passes -o through a shell: names and values stay plain words.
    if (!/^[a-z_.]+$/.test(name) || !/^[\w.,-]+$/.test(value)) throw new Error(`unsupported PostgreSQL setting ${name}=${value}`);
    serverOptions.push(`-c ${name}=${value}`);
  }
  pgRun('pg_ctl', ['start', '-D', dataDir, '-l', path.join(dir, 'server.log'), '-w', '-t', String(PG_CTL_WAIT_SECONDS), '-o', serverOptions.join(' ')]);
  const startMs = Math.round(performance.now() - started);

  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    process.off('exit', stop);
    try {
      pgRun('pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-w', '-t', String(PG_CTL_WAIT_SECONDS)]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  // A test process that ends without afterAll (a crash, a timeout) takes its server with it.
  process.on('exit', stop);

  const host = '127.0.0.1';
  const url = (name: string) => `postgres://postgres@${host}:${port}/${name}`;
  return {
    host,
    port,
    url,
    startMs,
    stop,
    async createDatabase(name = `vop_${process.pid}_${++databases}`) {
      const client = new pg.Client({ connectionString: url('postgres'), connectionTimeoutMillis: 10_000 });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
  };
}

/**
 * A freshly initialised cluster, made once per test run under the run's temporary folder (every
 * test file's copy starts from it). Made aside and renamed into place, so that two test files
 * starting at once cannot see half of one; the loser of that race throws its own away.
 */
function clusterTemplate(bin: string, pgRun: (cmd: string, args: string[]) => string): string {
  const template = path.join(os.tmpdir(), `vop-pg-template-${path.basename(path.dirname(bin))}`);
  if (fs.existsSync(template)) return template;
  const aside = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-pg-initdb-'));
  if (process.getuid?.() === 0) run('chown', ['postgres:', aside]);
  // Trust on loopback and the socket: a throwaway cluster that only the test processes reach.
  // No fsync: the cluster dies with the run (the server's own durability is not under test here).
  pgRun('initdb', ['-D', path.join(aside, 'data'), '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions']);
  try {
    fs.renameSync(path.join(aside, 'data'), template);
  } catch (err) {
    if (!fs.existsSync(template)) throw err;
  } finally {
    fs.rmSync(aside, { recursive: true, force: true });
  }
  return template;
}

function run(cmd: string, args: string[]): string {
  const opts: SpawnSyncOptions = { encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS, cwd: '/' };
  const r = spawnSync(cmd, args, opts);
  if (r.error || r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}):\n${String(r.stdout ?? '')}${String(r.stderr ?? '')}`);
  }
  return String(r.stdout);
}
