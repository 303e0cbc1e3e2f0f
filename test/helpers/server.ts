import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer, type VopServer } from '../../server/app.js';
import type { ServerOptionsInput } from '../../server/config.js';
import { isWarningLine } from '../../server/core/logLines.js';
import { build } from 'esbuild';
import { CLI_BUNDLE, SERVER_BUNDLE, startNodeFlags } from '../../scripts/build-server.mjs';
import { AdminClient, SpecClient } from './client.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * What a server started as a process runs: `npm start`'s bundle with `npm start`'s Node flags,
 * built if stale by the run's global setup (test/globalSetup.ts). It starts on half the CPU that
 * server/main.ts under tsx takes (its loader resolves and reads each of some 300 modules), and
 * the tests start about 150 servers.
 */
export const SERVER_ENTRY = path.relative(ROOT, SERVER_BUNDLE);
/** The command line's bundle, built with the server's (scripts/vop.mjs runs it for `npm run vop`). */
export const CLI_ENTRY = path.relative(ROOT, CLI_BUNDLE);

/**
 * `npm start`'s flags and one more, `--liftoff-only`: V8 then runs sql.js's WebAssembly as its
 * baseline compiler makes it and never optimises it. A test's server lives seconds on a database
 * of a few rows, and the optimising compiler spent about 0.2 s of CPU on sql.js at each start
 * (0.56 against 0.34 s a start, six starts each), which such a server never earns back. Not for
 * `npm start`: a real database's snapshots and writes need the optimised code (`npm run bench --
 * api` registered a third fewer videos a second with it). The wasm compiler changes how fast,
 * not what: a test about the start flags themselves passes `startNodeFlags()` (startup, upload-gc).
 */
const SERVER_FLAGS: string[] = [...startNodeFlags(), '--liftoff-only'];

/** A fresh data directory under the OS temp folder. */
export function tempDataDir(prefix = 'vop-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface TestServer {
  vop: VopServer;
  baseUrl: string;
  dataDir: string;
  admin: AdminClient;
  /** What the server logged (warnings, unexpected errors with their stacks). */
  logs: string[];
  /** Creates an application and returns a spec client for it. */
  newApp(name?: string): Promise<SpecClient>;
  close(): Promise<void>;
}

/**
 * Boots the real server in this process on an ephemeral port against a real data dir. Pass
 * `adminToken: undefined` to have the server generate one (the admin client then uses it).
 */
export async function startServer(options: Partial<ServerOptionsInput> = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? tempDataDir();
  const logs: string[] = [];
  const vop = await createServer({ adminToken: ADMIN_TOKEN, log: (l) => logs.push(l), ...options, dataDir });
  const { port } = await vop.listen(0, '127.0.0.1');
  const baseUrl = `http://127.0.0.1:${port}`;
  const admin = new AdminClient(baseUrl, vop.adminToken);
  return {
    vop,
    baseUrl,
    dataDir,
    admin,
    logs,
    async newApp(name) {
      const { appId, appSecret } = await admin.createApp(name);
      return new SpecClient(baseUrl, appId, appSecret);
    },
    close: () => vop.close(500),
  };
}

/**
 * The warnings `t` logged that a test caused: all but what the machine's ffmpeg lacks, which is
 * warned of in the background once the tools are resolved and shows or not by how fast that was
 * (cached by an earlier file of the worker).
 */
export async function warningsLogged(t: TestServer): Promise<string[]> {
  const lacking = (await t.vop.services.processing.tools.toneMapping()).warning;
  return t.logs.filter((l) => isWarningLine(l) && !(lacking && l.includes(lacking)));
}

export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  /** Resolves with the exit code once the process ends (null if a signal ended it). */
  exited: Promise<number | null>;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Every child started here, so a failed test cannot leave a server running. */
const children = new Set<ChildProcess>();

/** Kills (SIGKILL) every child process these helpers started that is still running. */
export function killStrayProcesses(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children.clear();
}

/**
 * Node's arguments for an entry point (a path in the repository, or an absolute one): a TypeScript
 * file with tsx; a plain script (`.mjs`) or the command line's bundle ({@link CLI_ENTRY}) with
 * plain Node and no flag, as `npm run vop` runs them; another built `.js` file with plain Node and
 * `nodeFlags` (default: the server bundle's, {@link SERVER_ENTRY}).
 */
function nodeArgs(script: string, nodeFlags?: string[]): string[] {
  const plain = script.endsWith('.mjs') || script === CLI_ENTRY;
  const runner = plain ? [] : script.endsWith('.js') ? (nodeFlags ?? SERVER_FLAGS) : ['--import', 'tsx'];
  return [...runner, path.resolve(ROOT, script)];
}

/**
 * A test's own entry point (`test/helpers/<name>.ts`) built by esbuild into one script under
 * dist/, where the packages it leaves in node_modules are found, to start with plain Node: through
 * tsx every start transforms what it loads again (0.3 CPU-s for a lock starter, 0.8 for a node
 * of the server). Resolves with the script's path and a `remove` for the file's afterAll.
 */
export async function buildEntry(name: string): Promise<{ file: string; remove: () => void }> {
  const dir = path.join(ROOT, 'dist', `test-${name}-${process.pid}`);
  const file = path.join(dir, `${name}.js`);
  await build({ entryPoints: [path.join(ROOT, 'test/helpers', `${name}.ts`)], outfile: file, bundle: true, platform: 'node', target: 'node20', format: 'esm', packages: 'external', logLevel: 'warning' });
  return { file, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Starts an entry point of the repository ({@link nodeArgs}), its output collected. */
export function spawnTs(script: string, args: string[], env: NodeJS.ProcessEnv = {}, nodeFlags?: string[]) {
  const child = spawn(process.execPath, [...nodeArgs(script, nodeFlags), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) =>
    // 'close', not 'exit': the output is complete only once stdout and stderr have closed.
    child.on('close', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  return { child, output: () => out, exited };
}

/**
 * Starts the server as a child process (as `npm start` does) and waits for its listening line.
 * `script` swaps in another entry point (a test fixture with other storage settings).
 */
export async function startServerProcess(args: string[], env: NodeJS.ProcessEnv = {}, script = SERVER_ENTRY, nodeFlags?: string[]): Promise<ServerProcess> {
  const { child, output, exited } = spawnTs(script, args, env, nodeFlags);
  const baseUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in time:\n${output()}`)), 30_000);
    const onData = () => {
      const m = /vop listening on (http:\/\/[^\s"]+)/.exec(output());
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output()}`));
    });
  });
  return {
    child,
    baseUrl,
    output,
    exited,
    stop(signal = 'SIGTERM') {
      child.kill(signal);
      return exited;
    },
  };
}

/** Runs `script` to its end (for start-up failures and the CLI); resolves with its exit code and output. */
export async function runToExit(args: string[], env: NodeJS.ProcessEnv = {}, script = SERVER_ENTRY, timeoutMs = 30_000): Promise<{ code: number | null; output: string }> {
  const { child, output, exited } = spawnTs(script, args, env);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await exited;
  clearTimeout(timer);
  return { code, output: output() };
}

/** A node started by {@link startNodeGroup}. */
export interface GroupNode {
  name: string;
  child: ChildProcess;
  /** Its pid, which is also its process group's id. */
  pid: number;
  baseUrl: string;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * The server as a supervisor starts it: a process group of its own (so that a test can signal
 * the whole group, ffmpeg included, as supervisors do), its output collected; resolves once it
 * says it listens. The caller stops it ({@link signalGroup}).
 */
export async function startNodeGroup(name: string, args: string[], env: NodeJS.ProcessEnv = {}, script = SERVER_ENTRY): Promise<GroupNode> {
  const child = spawn(process.execPath, [...nodeArgs(script), ...args], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const node: GroupNode = { name, child, pid: child.pid!, baseUrl: '', output: () => out, exited };
  try {
    node.baseUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} did not start in time:\n${out}`)), 60_000);
      child.stdout!.on('data', () => {
        const m = /vop listening on (http:\/\/[^\s"]+)/.exec(out);
        if (m) (clearTimeout(timer), resolve(m[1]!));
      });
      void exited.then((code) => (clearTimeout(timer), reject(new Error(`${name} exited with ${code} before listening:\n${out}`))));
    });
  } catch (err) {
    signalGroup(node.pid, 'SIGKILL');
    throw err;
  }
  return node;
}

/** Sends `signal` to a whole process group, if it is still there. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // The group is gone already.
  }
}
