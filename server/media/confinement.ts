/**
 * How ffmpeg and ffprobe are started: with the least privilege and the resources the OS lets us
 * bound (issue 12, items 8 and 11). Decoders of untrusted files are where memory bugs live; if
 * one is exploited, or a file simply asks for gigabytes, the damage stays inside these bounds.
 *
 * On Linux, with util-linux (the `setpriv` and `prlimit` commands, which exec the program in
 * place, so the PID is ffmpeg's):
 *  - `setpriv --pdeathsig KILL`: the kernel kills ffmpeg when its parent dies (ffmpegRunner.ts);
 *  - `setpriv --no-new-privs`: nothing ffmpeg execs can gain privileges (set-uid programs);
 *  - `setpriv --bounding-set -all --inh-caps -all`, where we hold capabilities (vop run as root,
 *    as in many containers): ffmpeg runs with none, so a root-owned process cannot override file
 *    permissions, load modules or open raw sockets;
 *  - `prlimit --as=<bytes>`: a cap on ffmpeg's address space, so a file that asks for more
 *    memory fails (allocation refused) instead of taking the machine; `--core=0`: a crashing
 *    decoder does not write gigabytes of core dump.
 * Each is checked once by running it on `true`; what does not work here is left out, and
 * {@link confinementSupport} says so (/healthz shows it, the log warns at start).
 * Elsewhere (macOS, Windows) ffmpeg runs as it is.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { findExecutable } from './findExecutable.js';

/** What this machine offers, checked once. */
export interface ConfinementSupport {
  /** `setpriv --pdeathsig KILL` works: ffmpeg dies with the server. */
  parentDeathSignal: boolean;
  /** `setpriv --no-new-privs` works. */
  noNewPrivileges: boolean;
  /** Capabilities are dropped (only possible, and only needed, where the server holds some). */
  dropCapabilities: boolean;
  /** `prlimit` works: the memory cap can be applied. */
  memoryCap: boolean;
}

let support: ConfinementSupport | undefined;
/** The wrappers' absolute paths, found once: a later change of PATH must not break every run. */
let setprivPath = 'setpriv';
let prlimitPath = 'prlimit';
/** `nice`, where it runs (coreutils: every Linux and macOS); undefined: niceness is not applied. */
let nicePath: string | undefined;

/** Checks (once) which confinements this machine offers; see the file comment. */
export function confinementSupport(): ConfinementSupport {
  if (support) return support;
  const linux = process.platform === 'linux';
  setprivPath = (linux && findExecutable('setpriv')) || 'setpriv';
  prlimitPath = (linux && findExecutable('prlimit')) || 'prlimit';
  const works = (cmd: string, args: string[]) => spawnSync(cmd, [...args, '--', 'true'], { stdio: 'ignore', timeout: 5000 }).status === 0;
  const parentDeathSignal = linux && works(setprivPath, ['--pdeathsig', 'KILL']);
  const noNewPrivileges = parentDeathSignal && works(setprivPath, ['--no-new-privs']);
  // Dropping the bounding set needs CAP_SETPCAP: it works as root, fails (and is moot) otherwise.
  const dropCapabilities = parentDeathSignal && holdsCapabilities() && works(setprivPath, DROP_CAPABILITIES);
  const memoryCap = linux && works(prlimitPath, ['--as=1073741824', '--core=0']);
  const nice = process.platform !== 'win32' ? findExecutable('nice') : undefined;
  nicePath = nice && works(nice, ['-n', '1']) ? nice : undefined;
  support = { parentDeathSignal, noNewPrivileges, dropCapabilities, memoryCap };
  return support;
}


const DROP_CAPABILITIES = ['--inh-caps', '-all', '--bounding-set', '-all'];

/** Options of {@link confine}. */
export interface ConfineOptions {
  /** Have the kernel kill the program when this process dies. */
  dieWithParent: boolean;
  /** Address-space cap in bytes; 0: none. */
  memoryLimitBytes: number;
  /**
   * CPU niceness, 1 to 19 (`nice -n`, where the machine has it): the program gets the CPU that
   * programs at the server's own niceness leave. Absent or 0: the server's.
   */
  niceness?: number;
}

/** The command to spawn: the program itself, or the wrappers that confine it, then it. */
export interface ConfinedCommand {
  file: string;
  args: string[];
  /** The environment to spawn it with: {@link toolEnvironment}, never the server's own. */
  env: NodeJS.ProcessEnv;
  /** The memory cap applied, in bytes; 0 when none was (not asked for, or no prlimit here). */
  memoryCapBytes: number;
}

/** Wraps `program args` in what this machine offers (see the file comment). */
export function confine(program: string, args: readonly string[], o: ConfineOptions): ConfinedCommand {
  const s = confinementSupport();
  let command = [program, ...args];
  let memoryCapBytes = 0;
  // Innermost: nice sets the niceness and execs the program, whose threads all inherit it.
  if (o.niceness && nicePath) command = [nicePath, '-n', String(o.niceness), ...command];
  if (o.memoryLimitBytes > 0 && s.memoryCap) {
    memoryCapBytes = Math.floor(o.memoryLimitBytes);
    command = [prlimitPath, `--as=${memoryCapBytes}`, '--core=0', '--', ...command];
  }
  const setpriv: string[] = [];
  if (o.dieWithParent && s.parentDeathSignal) setpriv.push('--pdeathsig', 'KILL');
  if (s.noNewPrivileges) setpriv.push('--no-new-privs');
  if (s.dropCapabilities) setpriv.push(...DROP_CAPABILITIES);
  // setpriv outermost: the parent-death signal must be set on the process node spawned; it
  // survives the execs of prlimit and ffmpeg (none is set-uid).
  if (setpriv.length > 0) command = [setprivPath, ...setpriv, '--', ...command];
  return { file: command[0]!, args: command.slice(1), env: toolEnvironment(), memoryCapBytes };
}

/** What of the server's environment a tool may need to start: where programs and libraries are. */
const TOOL_ENVIRONMENT =
  process.platform === 'win32'
    ? ['PATH', 'PATHEXT', 'SystemRoot', 'windir', 'TEMP', 'TMP']
    : ['PATH', 'LD_LIBRARY_PATH', 'DYLD_LIBRARY_PATH', 'TMPDIR'];

/**
 * The environment ffmpeg and ffprobe run with: the few variables they need to start, and nothing
 * else. The server's holds the admin token (VOP_ADMIN_TOKEN) and, in cluster mode, the database
 * address and the S3 keys; a tool working on a file crafted for it must not be able to read them.
 */
export function toolEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const kept: NodeJS.ProcessEnv = {};
  for (const name of TOOL_ENVIRONMENT) if (env[name] !== undefined) kept[name] = env[name];
  return kept;
}

/**
 * Whether a failed run looks like the memory cap refusing an allocation: ffmpeg reports
 * "Cannot allocate memory" (ENOMEM), a decoder cannot get a frame buffer ("get_buffer() failed",
 * as a 16000x16000 Motion JPEG under a 512 MiB cap does), cannot even load its libraries (Debian's
 * ffmpeg 5.1 maps some 265 MB before it reads a byte), or dies on an allocation it did not check.
 */
export function looksLikeMemoryCap(memoryCapBytes: number, signal: NodeJS.Signals | null, stderrTail: string): boolean {
  if (memoryCapBytes <= 0) return false;
  if (/cannot allocate memory|out of memory|std::bad_alloc|failed to allocate|ENOMEM|get_buffer\(\) failed|pthread_create failed|failed to map segment/i.test(stderrTail)) return true;
  return signal === 'SIGSEGV' || signal === 'SIGABRT' || signal === 'SIGBUS';
}

/** `bytes` for people: "2 GiB", "512 MiB". */
export function formatCap(bytes: number): string {
  const gib = bytes / 2 ** 30;
  return gib >= 1 ? `${Math.round(gib * 10) / 10} GiB` : `${Math.round(bytes / 2 ** 20)} MiB`;
}

/** Whether this process holds any effective capability (Linux: CapEff in /proc/self/status). */
function holdsCapabilities(): boolean {
  try {
    const status = fs.readFileSync('/proc/self/status', 'utf8');
    const eff = /^CapEff:\s*([0-9a-f]+)/m.exec(status)?.[1];
    return eff !== undefined && /[1-9a-f]/.test(eff);
  } catch {
    return false;
  }
}
