/**
 * A record of the ffmpeg processes this server has running, kept in a file, so that the next
 * start can kill the ones a crash left behind.
 *
 * Why a file as well as `setpriv --pdeathsig` (see ffmpegRunner.ts): the parent-death signal
 * exists only on Linux, only where util-linux's setpriv is installed, and only for processes we
 * spawn ourselves (not fluent-ffmpeg's). The file covers every case, at the cost of the orphan
 * running until the next start. A PID alone could by then name an unrelated process, so each
 * entry also keeps the process start time (Linux) or the binary name (elsewhere), and a PID is
 * killed only if it still matches.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { readProcStat } from '../core/procStat.js';

interface PidEntry {
  pid: number;
  /** Field 22 of /proc/<pid>/stat (clock ticks since boot); undefined off Linux. */
  startTime?: string;
  /** The executable we spawned, to recognise the process where there is no /proc. */
  binary: string;
}

/** Live entries per PID file, in this process; the file mirrors this map. */
const live = new Map<string, Map<number, PidEntry>>();

/** Adds a just-spawned child to `pidFile`. Synchronous so that the record exists before any await. */
export function recordChild(pidFile: string, pid: number, binary: string): void {
  let entries = live.get(pidFile);
  if (!entries) live.set(pidFile, (entries = new Map()));
  entries.set(pid, { pid, startTime: processStartTime(pid), binary });
  writeEntries(pidFile, entries);
}

/** Removes an exited child from `pidFile`; the file goes when it holds no one. */
export function forgetChild(pidFile: string, pid: number): void {
  const entries = live.get(pidFile);
  if (!entries?.delete(pid)) return;
  writeEntries(pidFile, entries);
}

/**
 * Kills, with SIGKILL, every process listed in `pidFile` that is still the process we started,
 * then removes the file. Call it at start, before running anything. Returns the PIDs killed.
 */
export function killOrphans(pidFile: string): number[] {
  let text: string;
  try {
    text = fs.readFileSync(pidFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const killed: number[] = [];
  for (const line of text.split('\n')) {
    const entry = parseEntry(line);
    if (!entry || entry.pid === process.pid || !isSameProcess(entry)) continue;
    try {
      process.kill(entry.pid, 'SIGKILL');
      killed.push(entry.pid);
    } catch {
      // exited between the check and the kill: nothing to do
    }
  }
  live.delete(pidFile);
  fs.rmSync(pidFile, { force: true });
  return killed;
}

function parseEntry(line: string): PidEntry | undefined {
  if (line.trim() === '') return undefined;
  try {
    const e = JSON.parse(line) as Partial<PidEntry>;
    if (!Number.isInteger(e.pid) || (e.pid as number) <= 1 || typeof e.binary !== 'string') return undefined;
    return e as PidEntry;
  } catch {
    return undefined; // a torn or foreign line must not stop the others from being cleaned up
  }
}

function isSameProcess(entry: PidEntry): boolean {
  if (process.platform === 'linux') {
    const stat = readProcStat(entry.pid);
    if (!stat || stat.state === 'Z') return false; // gone, or dead and only waiting to be reaped
    return entry.startTime === undefined || stat.startTime === entry.startTime;
  }
  try {
    process.kill(entry.pid, 0);
    const comm = execFileSync('ps', ['-o', 'comm=', '-p', String(entry.pid)], { encoding: 'utf8' }).trim();
    return path.basename(comm) === path.basename(entry.binary);
  } catch {
    return false;
  }
}

function processStartTime(pid: number): string | undefined {
  return process.platform === 'linux' ? readProcStat(pid)?.startTime : undefined;
}

function writeEntries(pidFile: string, entries: Map<number, PidEntry>): void {
  if (entries.size === 0) {
    live.delete(pidFile);
    fs.rmSync(pidFile, { force: true });
    return;
  }
  const body = [...entries.values()].map((e) => JSON.stringify(e)).join('\n') + '\n';
  // Written whole and renamed, so a crash mid-write never leaves a half list for killOrphans.
  const tmp = `${pidFile}.${process.pid}.tmp`;
  fs.mkdirSync(path.dirname(pidFile), { recursive: true });
  fs.writeFileSync(tmp, body);
  fs.renameSync(tmp, pidFile);
}
