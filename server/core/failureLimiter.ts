/** Options of {@link FailureLimiter}. */
export interface FailureLimitOptions {
  /** Length of the counting window. */
  windowMs: number;
  /** Failures a key may have within one window before it is limited. */
  maxFailures: number;
  /** Keys kept at most; past it the oldest window is dropped. Default {@link DEFAULT_MAX_KEYS}. */
  maxKeys?: number;
}

/**
 * Keys a limiter keeps by default: 10,000 windows of a 45-character address cost about 1 MB,
 * and the failures of more distinct callers than that within one window are a flood that the
 * oldest of them (the first to expire anyway) may leave early.
 */
export const DEFAULT_MAX_KEYS = 10_000;

/**
 * Counts failures per key (a client address, an AppId) in fixed windows. Only failures are
 * counted, so a caller that never fails never meets the limit and pays nothing for it.
 *
 * Bounded whatever callers send (issue 12, item 5): expired windows are swept once per window
 * length, at most `maxKeys` are kept, and callers key only on values they have checked (an
 * address, an AppId that exists), never on raw request text of any length.
 */
export class FailureLimiter {
  private windows = new Map<string, { count: number; resetAt: number }>();
  private nextSweepAt = 0;
  private readonly maxKeys: number;

  constructor(private readonly opts: FailureLimitOptions) {
    this.maxKeys = opts.maxKeys ?? DEFAULT_MAX_KEYS;
    if (!(Number.isInteger(this.maxKeys) && this.maxKeys > 0)) throw new Error('Option maxKeys must be a whole number greater than 0.');
  }

  /** How many keys are counted now (for tests and the console). */
  get size(): number {
    return this.windows.size;
  }

  /** True if `key` has used up its failures for the current window. */
  isLimited(key: string, now = Date.now()): boolean {
    const w = this.windows.get(key);
    if (!w) return false;
    if (w.resetAt <= now) {
      this.windows.delete(key);
      return false;
    }
    return w.count >= this.opts.maxFailures;
  }

  recordFailure(key: string, now = Date.now()): void {
    if (now >= this.nextSweepAt) this.sweep(now);
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      // Deleted first so that the new window goes to the end: the map stays in order of expiry.
      this.windows.delete(key);
      if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value as string);
      w = { count: 0, resetAt: now + this.opts.windowMs };
      this.windows.set(key, w);
    }
    w.count++;
  }

  /** Drops every expired window: they are in order of expiry, so the sweep stops at the first live one. */
  private sweep(now: number): void {
    this.nextSweepAt = now + this.opts.windowMs;
    for (const [k, w] of this.windows) {
      if (w.resetAt > now) break;
      this.windows.delete(k);
    }
  }
}
