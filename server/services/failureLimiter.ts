/** Options of {@link FailureLimiter}. */
export interface FailureLimitOptions {
  /** Length of the counting window. */
  windowMs: number;
  /** Failures a key may have within one window before it is limited. */
  maxFailures: number;
}

/**
 * Counts failures per key (a client address, an AppId) in fixed windows. Only failures are
 * counted, so a caller that never fails never meets the limit and pays nothing for it.
 */
export class FailureLimiter {
  private windows = new Map<string, { count: number; resetAt: number }>();

  constructor(private readonly opts: FailureLimitOptions) {}

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
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      if (this.windows.size > 50_000) this.prune(now);
      w = { count: 0, resetAt: now + this.opts.windowMs };
      this.windows.set(key, w);
    }
    w.count++;
  }

  private prune(now: number): void {
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k);
  }
}
