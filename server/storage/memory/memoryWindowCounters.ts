import type { WindowCounters } from '../types.js';

/**
 * Keys a store keeps by default: 10,000 windows of a 45-character address cost about 1 MB, and
 * the failures of more distinct callers than that within one window are a flood that the oldest
 * of them (the first to end anyway) may leave early. Four kinds of key share the one store (the
 * API's failures per address and per AppId, the admin token's, the registrations), each of which
 * had 10,000 of its own before; a flood of one kind still pushes out the oldest windows of any.
 */
export const DEFAULT_MAX_KEYS = 40_000;

/** One key's window: its count, when it began and when it ends (Unix ms). */
interface Window {
  n: number;
  start: number;
  end: number;
}

/**
 * {@link WindowCounters} in this process's memory: the embedded mode's, where one process makes
 * every count, so nothing needs to outlive it (the windows are a minute long; a restart forgot
 * them before the counters were a store, too).
 *
 * A key's window begins at its first hit (and lasts `windowMs`), not at a multiple of `windowMs`
 * from the epoch as PostgreSQL's: that is how the one process counted failures and registrations
 * before, and it keeps a burst of calls from straddling a window's edge (six registrations at a
 * limit of five are refused at the sixth, whenever in the minute they come). Both give what the
 * interface promises: hits within one window add up, and a window ends `windowMs` after it began.
 *
 * Bounded whatever callers send: ended windows are swept at most once per window length, and at
 * most `maxKeys` are kept (past it the oldest window goes first).
 */
export class MemoryWindowCounters implements WindowCounters {
  /** `windowMs` and key → its window, in order of their start (a new window is set last). */
  private readonly windows = new Map<string, Window>();
  private nextSweepAt = 0;

  constructor(
    private readonly maxKeys = DEFAULT_MAX_KEYS,
    private readonly clock: () => number = Date.now,
  ) {
    if (!(Number.isInteger(maxKeys) && maxKeys > 0)) throw new Error('Option maxKeys must be a whole number greater than 0.');
  }

  /** How many windows are kept now (for tests). */
  get size(): number {
    return this.windows.size;
  }

  /** How many windows whose key starts with `prefix` are kept now, ended ones included until swept (for tests). */
  keysStartingWith(prefix: string): number {
    let n = 0;
    for (const id of this.windows.keys()) if (id.slice(id.indexOf('\n') + 1).startsWith(prefix)) n++;
    return n;
  }

  async hit(key: string, windowMs: number, now = this.clock()): Promise<number> {
    if (now >= this.nextSweepAt) this.sweep(now, windowMs);
    const id = `${windowMs}\n${key}`;
    let w = this.windows.get(id);
    if (!w || w.end <= now) {
      // Deleted first so that the new window goes last: the map stays in order of start.
      this.windows.delete(id);
      if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value as string);
      w = { n: 0, start: now, end: now + windowMs };
      this.windows.set(id, w);
    }
    return ++w.n;
  }

  async count(key: string, windowMs: number, now = this.clock()): Promise<number> {
    const w = this.windows.get(`${windowMs}\n${key}`);
    return w && w.end > now ? w.n : 0;
  }

  async windowEnd(key: string, windowMs: number, now = this.clock()): Promise<number> {
    const w = this.windows.get(`${windowMs}\n${key}`);
    return w && w.start <= now && w.end > now ? w.end : now + windowMs;
  }

  /** Drops every ended window. */
  private sweep(now: number, windowMs: number): void {
    this.nextSweepAt = now + windowMs;
    for (const [id, w] of this.windows) if (w.end <= now) this.windows.delete(id);
  }
}
