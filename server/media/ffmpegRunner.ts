/**
 * The one place that runs ffmpeg: progress, cancellation, and no process left behind.
 *
 * Argument lists (the output of the pure builders in this folder) are spawned with child_process
 * rather than through fluent-ffmpeg, for reasons specific to fluent-ffmpeg 2.1.3:
 *  - its `setFfmpegPath()` is not per command: it writes a module-wide cache (lib/capabilities.js),
 *    so two commands cannot use two binaries and the "per command" call leaks into every other;
 *  - it spawns the binary itself, so we could not start ffmpeg under `setpriv --pdeathsig`;
 *  - its progress comes from scraping the stderr status line; `-progress pipe:3` gives us
 *    machine-readable blocks on a descriptor of their own, leaving stdout free for data (raw frames).
 * A fluent-ffmpeg command is still accepted, for callers that prefer building one: it gets the
 * same progress, cancellation, tracking and PID file, all but the parent-death signal and the
 * confinement (below): vop's own runs all pass argument lists.
 *
 * No orphan after `kill -9` of the server: on Linux, when util-linux's `setpriv` is available,
 * ffmpeg is started as `setpriv --pdeathsig KILL -- ffmpeg …`; setpriv sets PR_SET_PDEATHSIG and
 * execs ffmpeg in place (same PID), so the kernel kills ffmpeg when its parent dies, however it
 * dies. Node cannot call prctl itself, and ffmpeg ignores SIGPIPE, so a closed progress pipe does
 * not stop it either (both tried). The signal fires when the *thread* that spawned the child
 * exits: run ffmpeg from the main thread, not from a worker that may end first. Elsewhere, and as
 * a second line everywhere, `pidFile` records live children so `killOrphans(pidFile)` at the
 * next start ends what a crash left running.
 *
 * The same wrapper confines ffmpeg (confinement.ts): no new privileges, no capabilities, and
 * with `memoryLimitBytes` an address-space cap (`prlimit --as`), whose refusals end the run with
 * a {@link FfmpegMemoryError} that says so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type Ffmpeg from 'fluent-ffmpeg';
import { forgetChild, recordChild } from './childPidFile.js';
import { confine, confinementSupport, formatCap, looksLikeMemoryCap } from './confinement.js';
import { defaultFfmpegBinaries } from './ffmpegBinaries.js';
import { parseTimemark, ProgressParser, type FfmpegProgress } from './ffmpegProgress.js';
import type { PauseGroup } from './pauseGroup.js';

export { killOrphans } from './childPidFile.js';
export type { FfmpegProgress } from './ffmpegProgress.js';

/** Options of one {@link run}. */
export interface RunOptions {
  /** ffmpeg executable. Default: the one {@link defaultFfmpegBinaries} resolves. */
  ffmpegPath?: string;
  /** Called about twice a second while ffmpeg works, and once at the end. */
  onProgress?: (progress: FfmpegProgress) => void;
  /** Called once ffmpeg is spawned, with its PID (e.g. to store it beside the job). */
  onSpawn?: (pid: number) => void;
  /** Aborting it stops ffmpeg (SIGTERM, then SIGKILL after `killGraceMs`) and rejects with {@link FfmpegAbortError}. */
  signal?: AbortSignal;
  /** Media duration of the run, in seconds, so progress can be a percentage with a time left. */
  durationSeconds?: number;
  /** File recording the live ffmpeg PIDs, for {@link killOrphans} at the next start. Default: none. */
  pidFile?: string;
  /** Milliseconds between the SIGTERM and the SIGKILL of a cancelled run. */
  killGraceMs: number;
  /** How much of the end of stderr to keep for error messages, in bytes. */
  stderrTailBytes: number;
  /** Stops the run while the group is held (pauseGroup.ts: the ladder's encodes give way to first renditions). */
  pauseGroup?: PauseGroup;
  /** Collect at most this many bytes of stdout into the result (for `pipe:1` outputs); 0 discards it. */
  maxStdoutBytes: number;
  /** Have the kernel kill ffmpeg if this process dies (Linux with setpriv; see the file comment). */
  dieWithParent: boolean;
  /** Cap on ffmpeg's address space in bytes (Linux with prlimit); 0: none. */
  memoryLimitBytes: number;
  /** CPU niceness (`nice -n`), 1 to 19: the run takes the CPU others leave. Absent: the server's own. */
  niceness?: number;
}

const DEFAULT_RUN_OPTIONS = {
  killGraceMs: 2000,
  stderrTailBytes: 16 * 1024,
  maxStdoutBytes: 0,
  dieWithParent: true,
  memoryLimitBytes: 0,
} satisfies Partial<RunOptions>;

/** What a successful run leaves. */
export interface RunResult {
  /** stdout, up to `maxStdoutBytes` (empty when that is 0 or for fluent-ffmpeg commands). */
  stdout: Buffer;
  /** The end of stderr (warnings, even on success). */
  stderrTail: string;
}

/** ffmpeg ended with a non-zero status or a signal we did not send. */
export class FfmpegExitError extends Error {
  override name = 'FfmpegExitError';
  constructor(
    message: string,
    /** Exit status, or null when killed by a signal. */
    readonly exitCode: number | null,
    /** Signal that ended it, if any. */
    readonly signal: NodeJS.Signals | null,
    /** The end of stderr, where ffmpeg says what went wrong. */
    readonly stderrTail: string,
  ) {
    super(message);
  }
}

/** ffmpeg failed under its memory cap, by the look of it because the cap refused an allocation. */
export class FfmpegMemoryError extends FfmpegExitError {
  override name = 'FfmpegMemoryError';
  constructor(
    message: string,
    exitCode: number | null,
    signal: NodeJS.Signals | null,
    stderrTail: string,
    /** The cap it ran under, in bytes. */
    readonly memoryCapBytes: number,
  ) {
    super(message, exitCode, signal, stderrTail);
  }
}

/** The run was cancelled through its AbortSignal; the process has exited by the time this is thrown. */
export class FfmpegAbortError extends Error {
  override name = 'AbortError';
  readonly code = 'ABORT_ERR';
}

/** A fluent-ffmpeg command, as accepted by {@link run}. */
export type FluentCommand = Ffmpeg.FfmpegCommand;

interface LiveChild {
  kill(signal: NodeJS.Signals): void;
  exited: Promise<void>;
}

const liveChildren = new Set<LiveChild>();

/** Validates options, filling defaults; throws an Error naming the bad option. */
function resolveRunOptions(input: Partial<RunOptions> = {}): RunOptions {
  const o: RunOptions = { ...DEFAULT_RUN_OPTIONS, ...stripUndefined(input) };
  if (!(Number.isFinite(o.killGraceMs) && o.killGraceMs >= 0)) throw new Error('Option killGraceMs must be 0 or more.');
  if (!(Number.isInteger(o.stderrTailBytes) && o.stderrTailBytes >= 0)) throw new Error('Option stderrTailBytes must be a whole number, 0 or more.');
  if (!(Number.isInteger(o.maxStdoutBytes) && o.maxStdoutBytes >= 0)) throw new Error('Option maxStdoutBytes must be a whole number, 0 or more.');
  if (o.durationSeconds !== undefined && !(o.durationSeconds >= 0)) throw new Error('Option durationSeconds must be 0 or more.');
  if (!(Number.isFinite(o.memoryLimitBytes) && o.memoryLimitBytes >= 0)) throw new Error('Option memoryLimitBytes must be 0 (none) or more.');
  return o;
}

/**
 * Runs ffmpeg with `args` (without the binary; global flags `-hide_banner -nostdin -nostats
 * -progress pipe:3` are added) or runs a fluent-ffmpeg command. Resolves when ffmpeg exits 0.
 */
export async function run(command: readonly string[] | FluentCommand, options: Partial<RunOptions> = {}): Promise<RunResult> {
  const o = resolveRunOptions(options);
  if (o.signal?.aborted) throw new FfmpegAbortError('ffmpeg run cancelled before it started.');
  const ffmpegPath = o.ffmpegPath ?? (await defaultFfmpegBinaries()).ffmpeg.path;
  if (o.signal?.aborted) throw new FfmpegAbortError('ffmpeg run cancelled before it started.');
  return isArgs(command) ? runArgs(command, ffmpegPath, o) : runFluent(command, ffmpegPath, o);
}

/** SIGKILLs every ffmpeg started by this process and still running; resolves once all have exited. */
export async function killAll(): Promise<number> {
  const children = [...liveChildren];
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exited));
  return children.length;
}

/** How many ffmpeg processes this process is running now. */
export function liveProcessCount(): number {
  return liveChildren.size;
}

/** Whether ffmpeg children die with this process (setpriv --pdeathsig works here); checked once. */
export function parentDeathSignalSupported(): boolean {
  return confinementSupport().parentDeathSignal;
}

function runArgs(args: readonly string[], ffmpegPath: string, o: RunOptions): Promise<RunResult> {
  const ffArgs = ['-hide_banner', '-nostdin', '-nostats', '-progress', 'pipe:3', ...args];
  // fd 3 carries -progress, so stdout stays free for data (raw frames) when a caller wants it.
  const command = confine(ffmpegPath, ffArgs, { dieWithParent: o.dieWithParent, memoryLimitBytes: o.memoryLimitBytes, niceness: o.niceness });
  const spawnOptions = { stdio: ['ignore', o.maxStdoutBytes > 0 ? 'pipe' : 'ignore', 'pipe', 'pipe'] as ('ignore' | 'pipe')[], windowsHide: true, env: command.env };
  const child = spawn(command.file, command.args, spawnOptions);

  return new Promise<RunResult>((resolve, reject) => {
    const stderr = new TailBuffer(o.stderrTailBytes);
    const stdoutChunks: Buffer[] = [];
    let stdoutBytes = 0;
    const parser = new ProgressParser(o.durationSeconds);
    let settled = false;
    let markExited!: () => void;
    const entry: LiveChild = { kill: (sig) => child.kill(sig), exited: new Promise<void>((r) => (markExited = r)) };
    // A child its pause group stopped is continued first: stopped, it could not act on SIGTERM.
    const polite = () => {
      if (o.pauseGroup?.paused) child.kill('SIGCONT');
      child.kill('SIGTERM');
    };
    const cancel = startCancellation(o, polite, () => child.kill('SIGKILL'));
    const leaveGroup = o.pauseGroup && child.pid !== undefined ? o.pauseGroup.add(child) : undefined;

    liveChildren.add(entry);
    if (child.pid !== undefined) {
      if (o.pidFile) recordChild(o.pidFile, child.pid, ffmpegPath);
      safeCall(o.onSpawn, child.pid);
    }

    child.stdout?.on('data', (chunk: Buffer) => {
      if (stdoutBytes >= o.maxStdoutBytes) return;
      const part = chunk.subarray(0, o.maxStdoutBytes - stdoutBytes);
      stdoutChunks.push(part);
      stdoutBytes += part.length;
    });
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    const progressPipe = child.stdio[3] as NodeJS.ReadableStream | null;
    progressPipe?.setEncoding('utf8');
    progressPipe?.on('data', (chunk: string) => {
      for (const p of parser.push(chunk)) safeCall(o.onProgress, p);
    });

    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      cancel.dispose();
      leaveGroup?.();
      liveChildren.delete(entry);
      if (o.pidFile && child.pid !== undefined) forgetChild(o.pidFile, child.pid);
      markExited();
      if (err) reject(err);
      else resolve({ stdout: Buffer.concat(stdoutChunks), stderrTail: stderr.text() });
    };
    child.on('error', (err) => {
      // Spawn failures (ENOENT, EACCES) never produce a 'close' with a status worth waiting for.
      if (child.pid === undefined) finish(new FfmpegExitError(`Could not start ffmpeg "${ffmpegPath}": ${err.message}`, null, null, ''));
    });
    child.on('close', (code, signal) => {
      if (cancel.aborted) return finish(new FfmpegAbortError('ffmpeg run cancelled.'));
      if (code === 0) return finish(null);
      finish(exitError(code, signal, stderr.text(), command.memoryCapBytes));
    });
  });
}

function runFluent(command: FluentCommand, ffmpegPath: string, o: RunOptions): Promise<RunResult> {
  return new Promise<RunResult>((resolve, reject) => {
    const parser = new ProgressParser(o.durationSeconds);
    const startedAt = Date.now();
    let pid: number | undefined;
    let settled = false;
    let markExited!: () => void;
    const entry: LiveChild = { kill: (sig) => killFluent(command, sig), exited: new Promise<void>((r) => (markExited = r)) };
    const cancel = startCancellation(o, () => killFluent(command, 'SIGTERM'), () => killFluent(command, 'SIGKILL'));
    liveChildren.add(entry);

    const finish = (err: Error | null, stderrText: string | null) => {
      if (settled) return;
      settled = true;
      cancel.dispose();
      liveChildren.delete(entry);
      if (o.pidFile && pid !== undefined) forgetChild(o.pidFile, pid);
      markExited();
      const tail = (stderrText ?? '').slice(-o.stderrTailBytes);
      if (cancel.aborted) reject(new FfmpegAbortError('ffmpeg run cancelled.'));
      else if (err) reject(new FfmpegExitError(`ffmpeg failed: ${err.message.split('\n')[0]}`, null, null, tail));
      else resolve({ stdout: Buffer.alloc(0), stderrTail: tail });
    };
    command.on('start', () => {
      pid = (command as unknown as { ffmpegProc?: ChildProcess }).ffmpegProc?.pid;
      if (pid === undefined) return;
      if (o.pidFile) recordChild(o.pidFile, pid, ffmpegPath);
      safeCall(o.onSpawn, pid);
    });
    command.on('progress', (p: { timemark?: string; currentFps?: number }) => {
      // fluent-ffmpeg reports the media time reached; the average speed so far gives the time left.
      const t = parseTimemark(p.timemark ?? '') ?? 0;
      const wall = (Date.now() - startedAt) / 1000;
      const speed = wall > 0 && t > 0 ? t / wall : 0;
      for (const r of parser.push(`out_time_us=${Math.round(t * 1e6)}\nfps=${p.currentFps ?? 0}\nspeed=${speed}x\nprogress=continue\n`)) safeCall(o.onProgress, r);
    });
    command.on('end', (_stdout: string | null, stderrText: string | null) => {
      for (const r of parser.push('progress=end\n')) safeCall(o.onProgress, r);
      finish(null, stderrText);
    });
    command.on('error', (err: Error, _stdout: string | null, stderrText: string | null) => finish(err, stderrText));
    // Module-wide in fluent-ffmpeg 2.1.3 (see the file comment); set on every run so ours is the one used.
    command.setFfmpegPath(ffmpegPath);
    command.run();
  });
}

/** AbortSignal → SIGTERM now, SIGKILL after the grace period. */
function startCancellation(o: RunOptions, term: () => void, kill: () => void) {
  let killTimer: NodeJS.Timeout | undefined;
  const state = {
    aborted: false,
    dispose() {
      if (killTimer) clearTimeout(killTimer);
      o.signal?.removeEventListener('abort', onAbort);
    },
  };
  const onAbort = () => {
    state.aborted = true;
    term();
    killTimer = setTimeout(kill, o.killGraceMs);
  };
  o.signal?.addEventListener('abort', onAbort, { once: true });
  return state;
}

function killFluent(command: FluentCommand, signal: NodeJS.Signals): void {
  try {
    command.kill(signal);
  } catch {
    // not started yet, or already gone
  }
}

function exitError(code: number | null, signal: NodeJS.Signals | null, tail: string, memoryCapBytes: number): FfmpegExitError {
  const lastLine = tail.trim().split('\n').pop() ?? '';
  const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
  if (looksLikeMemoryCap(memoryCapBytes, signal, tail)) {
    const message = `ffmpeg needed more memory than its cap of ${formatCap(memoryCapBytes)} (processing.memoryLimitBytes) and ${how}${lastLine ? `: ${lastLine}` : ''}`;
    return new FfmpegMemoryError(message, code, signal, tail, memoryCapBytes);
  }
  return new FfmpegExitError(`ffmpeg ${how}${lastLine ? `: ${lastLine}` : ''}`, code, signal, tail);
}

/** A callback that throws must not break the run (nor leave ffmpeg running untracked). */
function safeCall<T>(fn: ((value: T) => void) | undefined, value: T): void {
  try {
    fn?.(value);
  } catch {
    // the caller's bug; ffmpeg carries on
  }
}

function isArgs(command: readonly string[] | FluentCommand): command is readonly string[] {
  return Array.isArray(command);
}

/**
 * `o` without its undefined fields, so that spreading it over defaults keeps a default where an
 * option was passed as undefined (as optional fields often are).
 */
export function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** Keeps the last `limit` bytes written to it. */
class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly limit: number) {}
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size - (this.chunks[0]?.length ?? 0) >= this.limit && this.chunks.length > 1) this.size -= this.chunks.shift()!.length;
  }
  text(): string {
    return Buffer.concat(this.chunks).subarray(-this.limit || this.size).toString('utf8');
  }
}
