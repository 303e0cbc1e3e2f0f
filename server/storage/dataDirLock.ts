import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Directories locked by this process: a second open from the same process is refused too. */
const heldHere = new Set<string>();

/**
 * An exclusive lock on a data directory, so that two processes never open one database (each
 * would keep its own in-memory copy and overwrite the other's snapshots).
 *
 * The lock file holds the owner's PID. A lock left behind by a process that died (kill -9, power
 * cut) is stale: its PID no longer runs, and the next start takes it over.
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
    const body = JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() });
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        fs.writeFileSync(file, body, { flag: 'wx', mode: 0o600 });
        heldHere.add(resolved);
        return new DataDirLock(file, resolved);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const owner = readOwner(file);
      if (owner && owner.pid !== process.pid && isAlive(owner.pid) && (!owner.host || owner.host === os.hostname())) {
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

function readOwner(file: string): { pid: number; host?: string } | undefined {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { pid?: unknown; host?: unknown };
    if (typeof parsed.pid === 'number') {
      return { pid: parsed.pid, host: typeof parsed.host === 'string' ? parsed.host : undefined };
    }
  } catch {
    // An unreadable or half-written lock file is treated as stale.
  }
  return undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else; that still counts as alive.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
