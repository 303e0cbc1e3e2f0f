/**
 * Shared helpers of the benchmarks: child servers, load, tokens, memory and the printed lines.
 * The load generator (this process) and every server under test are separate processes, so
 * each gets its own core on a two-core machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { startNodeFlags } from '../scripts/build-server.mjs';

export const ROOT = path.resolve(import.meta.dirname, '..');

/** Progress for people watching; the figures themselves go to stdout. */
export function progress(line: string): void {
  process.stderr.write(`  … ${line}\n`);
}

// ---------------------------------------------------------------------------------------------
// Child servers

/** A server under test, running as its own process. */
export interface ChildServer {
  name: string;
  child: ChildProcess;
  pid: number;
  baseUrl: string;
  /** Milliseconds from spawn until `GET /healthz` first answered 200. */
  startupMs: number;
  /** CPU time the process had used by then (all its threads), in milliseconds. */
  startupCpuMs: number;
  /** Everything the process printed so far. */
  output(): string;
  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** How to start a server and recognise that it listens. */
export interface SpawnSpec {
  name: string;
  /**
   * The entry, relative to the repository root: a TypeScript file, run with `node --import tsx`,
   * or a built `.js` file ({@link VOP_SERVER}), run with plain Node as `npm start` runs it.
   */
  script: string;
  args: string[];
  /** Matches the line that announces the address; group 1 is the base URL. */
  listening: RegExp;
  /** Give up after this long. */
  timeoutMs?: number;
  /** Environment added to this process's (VOP_* settings: the cluster bench's database and bucket). */
  env?: NodeJS.ProcessEnv;
  /** Another checkout to run the script from (a baseline build); default this repository. */
  root?: string;
}

/** The server as `npm start` runs it: the bundle scripts/build-server.mjs makes (bench/run.ts builds it first). */
export const VOP_SERVER = 'dist/server/main.js';

/**
 * Spawns the script (see {@link SpawnSpec.script}) and times it from the spawn until
 * `GET /healthz` answers 200: that is what a supervisor or a user waits for.
 */
export async function spawnServer(spec: SpawnSpec): Promise<ChildServer> {
  const started = performance.now();
  // The flags npm start runs the bundle with, read from package.json so that the two cannot differ.
  const runner = spec.script.endsWith('.js') ? startNodeFlags() : ['--import', 'tsx'];
  // VOP_BENCH_NODE_FLAGS: extra flags for every server the bench starts (`--cpu-prof
  // --cpu-prof-dir=/tmp/prof` to see where a request's time goes).
  runner.push(...(process.env.VOP_BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean));
  const root = spec.root ?? ROOT;
  const child = spawn(process.execPath, [...runner, path.join(root, spec.script), ...spec.args], {
    cwd: root,
    env: { ...process.env, ...spec.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let hasExited = false;
  void exited.then(() => (hasExited = true));

  const deadline = started + (spec.timeoutMs ?? 60_000);
  const fail = (why: string) => {
    child.kill('SIGKILL');
    return new Error(`${spec.name} ${why}:\n${out}`);
  };

  let baseUrl: string | undefined;
  while (!baseUrl) {
    if (hasExited) throw fail('exited before listening');
    if (performance.now() > deadline) throw fail('did not listen in time');
    baseUrl = spec.listening.exec(out)?.[1];
    if (!baseUrl) await sleep(2);
  }
  for (;;) {
    if (hasExited) throw fail('exited before /healthz answered');
    if (performance.now() > deadline) throw fail('did not answer /healthz in time');
    const ok = await fetch(`${baseUrl}/healthz`).then(
      async (r) => (await r.arrayBuffer(), r.status === 200),
      () => false,
    );
    if (ok) break;
    await sleep(5);
  }
  const startupMs = performance.now() - started;
  const startupCpuMs = cpuTimeMs(child.pid!);

  return {
    name: spec.name,
    child,
    pid: child.pid!,
    baseUrl,
    startupMs,
    startupCpuMs,
    output: () => out,
    async stop(graceMs = 30_000) {
      if (hasExited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The child servers a section started, so that all of them are stopped whatever happens. */
export class ServerFleet {
  private readonly running = new Set<ChildServer>();

  async start(spec: SpawnSpec): Promise<ChildServer> {
    const server = await spawnServer(spec);
    this.running.add(server);
    return server;
  }

  async stop(server: ChildServer): Promise<void> {
    await server.stop();
    this.running.delete(server);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.running].map((server) => this.stop(server)));
  }

  /**
   * Starts a server `runs` times (stopping each but the last) and returns the last one with the
   * start-up figures of every run: start-up varies from one run to the next, so report a median.
   */
  async timeStartups(spec: SpawnSpec, runs: number): Promise<{ server: ChildServer; wallMs: number[]; cpuMs: number[] }> {
    const wallMs: number[] = [];
    const cpuMs: number[] = [];
    let server: ChildServer | undefined;
    for (let i = 0; i < runs; i++) {
      if (server) await this.stop(server);
      server = await this.start(spec);
      wallMs.push(server.startupMs);
      cpuMs.push(server.startupCpuMs);
    }
    return { server: server!, wallMs, cpuMs };
  }
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------------------------
// Memory

/** Resident memory of a process from /proc/<pid>/status, in MiB: now (VmRSS) and peak (VmHWM). */
export function residentMemory(pid: number): { rssMb: number; peakMb: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    if (!m) throw new Error(`/proc/${pid}/status has no ${field}`);
    return Number(m[1]) / 1024;
  };
  return { rssMb: kb('VmRSS'), peakMb: kb('VmHWM') };
}

/**
 * CPU time a process has used so far (user plus system), in milliseconds, from /proc/<pid>/stat.
 * CPU per request says what a server costs even when other work shares the machine (it is far
 * less disturbed by it than requests per second or wall-clock time are).
 */
export function cpuTimeMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at field 3; utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** USER_HZ: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** Load average over the last minute; above the core count, figures are shared with other work. */
export function loadAverage(): number {
  return os.loadavg()[0]!;
}

// ---------------------------------------------------------------------------------------------
// Spec section 5 tokens

/**
 * Timestamp and Token of spec section 5 for one secret, as an application server computes them
 * (lowercase hex MD5 of Timestamp followed by the secret). Computed once per second, so the load
 * generator spends its time sending requests rather than hashing.
 */
export function tokenSource(secret: string): () => { timestamp: string; token: string } {
  let second = -1;
  let current = { timestamp: '', token: '' };
  return () => {
    const now = Math.floor(Date.now() / 1000);
    if (now !== second) {
      second = now;
      const timestamp = String(now);
      current = { timestamp, token: crypto.createHash('md5').update(timestamp + secret, 'utf8').digest('hex') };
    }
    return current;
  };
}

// ---------------------------------------------------------------------------------------------
// Load

/** One request as the load generator sends it. */
export interface LoadRequest {
  method?: 'GET' | 'POST' | 'HEAD';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/** Options of {@link runLoad}. */
export interface LoadOptions {
  url: string;
  /** Concurrent keep-alive connections. */
  connections: number;
  /** Run for this many seconds... */
  durationS?: number;
  /** ...or until this many responses have arrived. */
  amount?: number;
  /** Called for every request, so each carries a fresh Timestamp and Token... */
  next?: () => LoadRequest;
  /** ...or these requests, which every connection sends in turn, from the first again after the last (a player walking an HLS rendition). */
  sequence?: LoadRequest[];
  /** Every request is a HEAD: the answers' Content-Length announces no body to wait for. */
  head?: boolean;
  /** The server's process, to measure its CPU time per response. */
  serverPid?: number;
}

/** What a load run measured. */
export interface LoadResult {
  /** Responses per second over the whole run. */
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  responses: number;
  /** Responses with a status outside 2xx, connection errors and timeouts: all should be 0. */
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Mean bytes received per response, headers included: a check that the answers were the real ones. */
  bytesPerResponse: number;
  /** Server CPU time per response, in microseconds (NaN without `serverPid`). */
  cpuUsPerResponse: number;
}

/**
 * wrk (Debian's `wrk` package), if installed: a load generator in C that spends a fraction of
 * autocannon's CPU per request, so that on two cores the server under test, not the generator,
 * sets the rate and the latency (autocannon held nginx to about 12,000 1 KiB answers a second
 * where wrk gets 40,000 and more). `VOP_BENCH_LOAD=autocannon` keeps autocannon.
 */
export const WRK: string | undefined =
  process.env.VOP_BENCH_LOAD === 'autocannon' ? undefined : ['/usr/bin/wrk', '/usr/local/bin/wrk'].find((f) => fs.existsSync(f));

/** The load generator {@link runLoad} uses for `opts`. */
export function loadGenerator(opts: Pick<LoadOptions, 'sequence' | 'head' | 'amount'>): 'wrk' | 'autocannon' {
  // wrk waits for the body a HEAD answer's Content-Length announces (it never comes), has no
  // per-request hook from this process and runs for a time, not a count: HEAD, generated
  // requests and counted runs stay with autocannon.
  return WRK && opts.sequence && !opts.head && opts.amount === undefined ? 'wrk' : 'autocannon';
}

/**
 * Runs the load against `url`: with wrk for a fixed sequence of GETs when it is installed
 * ({@link loadGenerator}), otherwise autocannon, each request built by `next()` or taken in turn from `sequence`.
 */
export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  if (loadGenerator(opts) === 'wrk') return runWrk(opts);
  const cpuBefore = opts.serverPid !== undefined ? cpuTimeMs(opts.serverPid) : NaN;
  const r = await autocannon({
    url: opts.url,
    connections: opts.connections,
    ...(opts.amount !== undefined ? { amount: opts.amount } : { duration: opts.durationS ?? 10 }),
    timeout: 10,
    requests: opts.sequence
      ? opts.sequence.map((n) => ({ method: n.method ?? 'GET', path: n.path, headers: n.headers ?? {}, ...(n.body ? { body: n.body } : {}) }))
      : [
          {
            setupRequest: (req) => {
              const n = opts.next!();
              return { ...req, method: n.method ?? 'GET', path: n.path, headers: { ...req.headers, ...n.headers }, body: n.body ?? '' };
            },
          },
        ],
    // autocannon's parser (http-parser-js) would wait for the body a HEAD answer's Content-Length
    // announces: told from the headers-complete hook that there is none, as Node's client is.
    ...(opts.head ? { setupClient: skipBodies } : {}),
  });
  const responses = r.requests.total;
  return {
    reqPerSec: responses / r.duration,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    responses,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    bytesPerResponse: responses > 0 ? r.throughput.total / responses : 0,
    cpuUsPerResponse: opts.serverPid !== undefined ? ((cpuTimeMs(opts.serverPid) - cpuBefore) * 1000) / responses : NaN,
  };
}

/**
 * Runs wrk (one thread: one core, as autocannon took) with a Lua script that sends `sequence` in
 * turn and prints its summary as JSON. wrk has no per-connection state in Lua, so the turn is
 * shared by the connections of its thread: the mix of requests is the sequence's, and each
 * connection walks it in steps of the number of connections rather than one by one (which file
 * comes next matters little to a server with them all in the page cache).
 */
async function runWrk(opts: LoadOptions): Promise<LoadResult> {
  const url = new URL(opts.url);
  const lua = (v: string) => JSON.stringify(v); // a JSON string is a valid Lua string literal here (ASCII)
  const requests = opts.sequence!.map((n) => {
    const headers = { Host: url.host, ...(n.headers ?? {}) };
    const fields = Object.entries(headers).map(([k, v]) => `[${lua(k)}]=${lua(v)}`).join(',');
    return `wrk.format(${lua(n.method ?? 'GET')}, ${lua(n.path)}, {${fields}}${n.body ? `, ${lua(n.body)}` : ''})`;
  });
  const script = path.join(os.tmpdir(), `vop-bench-wrk-${process.pid}-${crypto.randomBytes(4).toString('hex')}.lua`);
  fs.writeFileSync(
    script,
    `local reqs = {${requests.join(',\n')}}
local i = 0
request = function() i = i % #reqs + 1; return reqs[i] end
done = function(s, latency, r)
  io.write(string.format('WRK-JSON {"requests":%d,"durationUs":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50Us":%d,"p99Us":%d}\\n',
    s.requests, s.duration, s.bytes, s.errors.connect, s.errors.read, s.errors.write, s.errors.status, s.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`,
  );
  const seconds = opts.durationS ?? 10;
  const cpuBefore = opts.serverPid !== undefined ? cpuTimeMs(opts.serverPid) : NaN;
  try {
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(WRK!, ['-t1', `-c${opts.connections}`, `-d${Math.max(1, Math.round(seconds))}s`, '--timeout', '10s', '-s', script, opts.url], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout!.on('data', (c: Buffer) => (text += c));
      child.stderr!.on('data', (c: Buffer) => (text += c));
      child.once('error', reject);
      child.once('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited with ${code}: ${text}`))));
    });
    const json = /^WRK-JSON (\{.*\})$/m.exec(out)?.[1];
    if (!json) throw new Error(`wrk printed no summary: ${out}`);
    const w = JSON.parse(json) as Record<string, number>;
    const responses = w.requests!;
    return {
      reqPerSec: responses / (w.durationUs! / 1e6),
      p50Ms: w.p50Us! / 1000,
      p99Ms: w.p99Us! / 1000,
      responses,
      // wrk counts statuses over 399 as errors; 206 and 304 are answers.
      non2xx: w.status!,
      errors: w.connect! + w.read! + w.write!,
      timeouts: w.timeout!,
      bytesPerResponse: responses > 0 ? w.bytes! / responses : 0,
      cpuUsPerResponse: opts.serverPid !== undefined ? ((cpuTimeMs(opts.serverPid) - cpuBefore) * 1000) / responses : NaN,
    };
  } finally {
    fs.rmSync(script, { force: true });
  }
}

/**
 * Makes an autocannon client's parser skip every answer's body (HEAD). The client sets its
 * parser's hooks after calling setupClient, in the same turn: they are wrapped right after it,
 * long before the first answer can arrive.
 */
function skipBodies(client: unknown): void {
  queueMicrotask(() => {
    const parser = (client as { parser: Record<number, (...args: unknown[]) => unknown> }).parser;
    const headersComplete = parser[HEADERS_COMPLETE]!;
    parser[HEADERS_COMPLETE] = (...args: unknown[]) => (headersComplete(...args), true);
  });
}

/** http-parser-js's HTTPParser.kOnHeadersComplete: the hook whose true return means "no body". */
const HEADERS_COMPLETE = 2;

/** Throws if a run saw failures or answers much smaller than the real body (failed auth, say). */
export function assertHealthyRun(label: string, r: LoadResult, expectedBodyBytes: number): void {
  if (r.responses === 0 || r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) {
    throw new Error(`${label}: ${r.responses} responses, ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  }
  if (r.bytesPerResponse < expectedBodyBytes * 0.9) {
    throw new Error(`${label}: ${Math.round(r.bytesPerResponse)} bytes per response, expected at least the ${expectedBodyBytes}-byte body`);
  }
}

// ---------------------------------------------------------------------------------------------
// Printing

/** A target a figure is held to. */
export interface Target {
  /** What is measured, as printed: "detail/bare ratio". */
  what: string;
  /** The target as printed: "≥ 0.50". */
  text: string;
  met: boolean;
}

export function verdict(met: boolean): string {
  return met ? 'PASS' : 'MISS';
}

/** 12345.6 → "12,346". */
export function whole(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function ms(n: number): string {
  return n >= 100 ? `${Math.round(n)} ms` : `${n.toFixed(1)} ms`;
}

export function mb(n: number): string {
  return `${Math.round(n)} MB`;
}

/** One named part of `npm run bench`: prints its figures, returns the targets it checked. */
export interface BenchSection {
  name: string;
  /** One line for `npm run bench -- --help`. */
  about: string;
  run(): Promise<Target[]>;
}
