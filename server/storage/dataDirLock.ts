import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bootId, readProcStat } from '../procStat.js';

/** Directories locked by this process: a second open from the same process is refused too. */
const heldHere = new Set<string>();

/**
 * An exclusive lock on a data directory, so that two processes never open one database (each
 * would keep its own in-memory copy and overwrite the other's snapshots).
 *
 * The lock file names its owner: pid, host, and on Linux the boot and the process's start time.
 * A lock whose owner is gone is stale and the next start takes it over: gone means no such
 * process, a zombie (a process killed with kill -9 stays one until its parent reaps it, for ever
 * under an init that never reaps, and kill(pid, 0) succeeds on it), or a pid that now belongs to
 * another process (reused after a restart of the container or machine). Node offers no OS file
 * lock (flock) without a native addon, and `.npmrc` builds none; the start time in /proc makes
 * the owner's identity exact all the same.
 */
export class DataDirLock {
  private constructor(
    private readonly file: string,
    private readonly dir: string,
  ) {}

  static acquire(dir: string): DataDirLock {
    const resolved = path.resolve(dir);
    const file = path.join(resolved, 'vop.lock');
    if (heldHere.has(resolved)) {
      throw new Error(`The data directory ${resolved} is already open in this process.`);
    }
    const body = JSON.stringify({ ...processIdentity(process.pid), since: new Date().toISOString() });
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        fs.writeFileSync(file, body, { flag: 'wx', mode: 0o600 });
        heldHere.add(resolved);
        return new DataDirLock(file, resolved);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const owner = readOwner(file);
      if (owner && owner.pid !== process.pid && isLockOwnerAlive(owner)) {
        throw new Error(
          `The data directory ${resolved} is in use by another vop process (pid ${owner.pid}). ` +
            `Stop it first, or start this one with another --data-dir.`,
        );
      }
      // Stale: its owner is gone. Remove it and try once more (wx again, so a racing starter loses).
      fs.rmSync(file, { force: true });
    }
    throw new Error(`Could not lock the data directory ${resolved}; another process is starting on it.`);
  }

  release(): void {
    heldHere.delete(this.dir);
    try {
      const owner = readOwner(this.file);
      if (owner?.pid === process.pid) fs.rmSync(this.file, { force: true });
    } catch {
      // Nothing to do: a lock we cannot remove is stale for the next start.
    }
  }
}

/** Who holds a lock, as its file says. Files written before boot ids and start times lack them. */
export interface LockOwner {
  pid: number;
  /** os.hostname() of the owner. */
  host?: string;
  /** /proc/sys/kernel/random/boot_id of the owner's boot (Linux). */
  bootId?: string;
  /** Field 22 of /proc/<pid>/stat: the owner's start, in clock ticks since its boot (Linux). */
  startTime?: string;
}

/** What a lock file written by `pid` (this process, in use) records of it. */
export function processIdentity(pid: number, proc = '/proc'): LockOwner {
  const stat = readProcStat(pid, proc);
  return { pid, host: os.hostname(), bootId: bootId(proc), startTime: stat?.startTime };
}

/**
 * Whether the process a lock file names still runs, so that the lock still holds.
 *
 * - Another host's lock is not ours to judge and is taken over, as before: its pid means
 *   nothing here, and a container's host name changes when it is made anew.
 * - Where /proc is (Linux), the owner runs only if this is the boot it locked in, its
 *   /proc/<pid>/stat exists, it is neither a zombie (Z) nor dead (X), and its start time is the
 *   one the lock recorded (the pid was not handed to another process since). A process /proc
 *   does not show (hidepid) but a signal reaches is taken to run.
 * - Elsewhere (macOS, Windows), kill(pid, 0): a zombie or a reused pid still counts as alive there.
 *
 * `proc` is for tests.
 */
export function isLockOwnerAlive(owner: LockOwner, proc = '/proc'): boolean {
  if (owner.host && owner.host !== os.hostname()) return false;
  if (!fs.existsSync(path.join(proc, 'self/stat'))) return signalReaches(owner.pid);
  const boot = bootId(proc);
  if (owner.bootId && boot && owner.bootId !== boot) return false;
  const stat = readProcStat(owner.pid, proc);
  // No entry, yet a signal reaches the pid: /proc hides other users' processes (mounted with
  // hidepid). It cannot be judged, so it holds: a refused start says why, two servers on one
  // database lose writes. (A zombie is always listed, so this never keeps one alive.)
  if (!stat) return signalReaches(owner.pid) && !fs.existsSync(path.join(proc, String(owner.pid)));
  if (stat.state === 'Z' || stat.state === 'X' || stat.state === 'x') return false;
  return owner.startTime === undefined || owner.startTime === stat.startTime;
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    if (typeof parsed.pid === 'number') {
      const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
      return { pid: parsed.pid, host: text(parsed.host), bootId: text(parsed.bootId), startTime: text(parsed.startTime) };
    }
  } catch {
    // An unreadable or half-written lock file is treated as stale.
  }
  return undefined;
}

function signalReaches(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else; that still counts as alive.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
