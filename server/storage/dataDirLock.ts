import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bootId, readProcStat } from '../core/procStat.js';

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
    for (let attempt = 0; attempt < TAKE_OVER_ATTEMPTS; attempt++) {
      try {
        fs.writeFileSync(file, body, { flag: 'wx', mode: 0o600 });
        heldHere.add(resolved);
        return new DataDirLock(file, resolved);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const stale = readRaw(file);
      const owner = stale === undefined ? undefined : parseOwner(stale);
      if (owner && owner.pid !== process.pid && isLockOwnerAlive(owner)) {
        throw new Error(
          `The data directory ${resolved} is in use by another vop process (pid ${owner.pid}). ` +
            `Stop it first, or start this one with another --data-dir.`,
        );
      }
      if (stale !== undefined && owner === undefined && justWritten(file)) {
        // Unreadable, and made a moment ago: another starter between its wx create and its write.
        sleepSync(TAKE_OVER_WAIT_MS);
        continue;
      }
      // Stale (its owner is gone), or gone already: removed under the take-over guard if it is
      // still the very lock judged stale, then the wx write again (of racing starters, one wins).
      if (stale !== undefined && !removeIfUnchanged(resolved, file, stale, body)) sleepSync(TAKE_OVER_WAIT_MS);
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

/** Tries of the take-over, each after {@link TAKE_OVER_WAIT_MS} when another starter held the guard. */
const TAKE_OVER_ATTEMPTS = 150;
const TAKE_OVER_WAIT_MS = 10;

/**
 * Removes the stale lock `file` if it still holds exactly `stale`, under the take-over guard
 * (`vop.lock.takeover`, made with wx and removed at once); false if another starter holds the
 * guard (try again shortly).
 *
 * Why a guard: two starters that both judged the same lock stale used to both remove "it" — the
 * second removed the lock the first had just written, and both ran on one database. Under the
 * guard a starter removes the lock only if it is still the one it judged; a lock written since
 * (another starter won) is left alone, and its owner, alive, refuses this start at the next try.
 *
 * The guard is held for a read and a remove. A guard whose owner is gone (killed inside that
 * window) is removed as a stale lock is; two starters racing over such a dead guard could both
 * pass it, so the window left is a crash inside a take-over followed by two simultaneous starts.
 */
function removeIfUnchanged(dir: string, file: string, stale: string, identity: string): boolean {
  const guard = path.join(dir, 'vop.lock.takeover');
  try {
    fs.writeFileSync(guard, identity, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const raw = readRaw(guard);
    const owner = raw === undefined ? undefined : parseOwner(raw);
    if (raw !== undefined && (owner ? owner.pid !== process.pid && !isLockOwnerAlive(owner) : !justWritten(guard))) {
      // Left by a starter that died taking over (or half-written): gone, and the next try takes it.
      if (readRaw(guard) === raw) fs.rmSync(guard, { force: true });
    }
    return false;
  }
  try {
    if (readRaw(file) === stale) fs.rmSync(file, { force: true });
  } finally {
    fs.rmSync(guard, { force: true });
  }
  return true;
}

/** Whether `file` was modified within the last second (a file another starter may still be writing). */
function justWritten(file: string): boolean {
  try {
    return Date.now() - fs.statSync(file).mtimeMs < 1000;
  } catch {
    return false;
  }
}

/** Blocks this thread for `ms` (start-up only: the lock is taken before anything else runs). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** A lock file's text, or undefined if there is none. */
function readRaw(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function readOwner(file: string): LockOwner | undefined {
  const raw = readRaw(file);
  return raw === undefined ? undefined : parseOwner(raw);
}

function parseOwner(raw: string): LockOwner | undefined {
  try {
    const parsed = JSON.parse(raw) as Record<string, unknown>;
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

/** The live process (another than this one) that holds `dir`'s lock, if any: for commands that must not open it beside a server. */
export function lockHolder(dir: string): LockOwner | undefined {
  const raw = readRaw(path.join(path.resolve(dir), 'vop.lock'));
  const owner = raw === undefined ? undefined : parseOwner(raw);
  return owner && owner.pid !== process.pid && isLockOwnerAlive(owner) ? owner : undefined;
}
