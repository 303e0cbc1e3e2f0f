/** Retry and backoff as data (hls.js RetryConfig): no loops with literals scattered around. */
export interface RetryConfig {
  /** Attempts after the first; 0 means no retry. */
  maxRetries: number;
  /** Delay before the first retry. */
  baseDelayMs: number;
  /** Delays double per attempt up to this. */
  maxDelayMs: number;
  /** Spread each delay over [delay/2, delay] so that many failures do not retry in step. */
  jitter: boolean;
}

export const NO_RETRY: RetryConfig = { maxRetries: 0, baseDelayMs: 0, maxDelayMs: 0, jitter: false };

/** The delay before retry number `retry` (1 for the first retry). */
export function backoffDelay(cfg: RetryConfig, retry: number, random: () => number = Math.random): number {
  const exp = Math.min(cfg.maxDelayMs, cfg.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return cfg.jitter ? Math.round(exp / 2 + (random() * exp) / 2) : exp;
}

/** Throws an Error naming `name` if the config is not usable. */
export function assertRetryConfig(name: string, cfg: RetryConfig): void {
  if (!Number.isInteger(cfg.maxRetries) || cfg.maxRetries < 0) throw new Error(`${name}.maxRetries must be a whole number from 0.`);
  if (!(cfg.baseDelayMs >= 0) || !(cfg.maxDelayMs >= cfg.baseDelayMs)) throw new Error(`${name}: need 0 ≤ baseDelayMs ≤ maxDelayMs.`);
}
