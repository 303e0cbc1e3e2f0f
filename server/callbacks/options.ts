import { assertRetryConfig, type RetryConfig } from '../core/retry.js';

/** Options of the status callback (`callbacks` in the server options). */
export interface CallbackOptions {
  /**
   * Backoff between failed attempts of one delivery. `maxRetries` is only a safety bound: the
   * limit that normally ends a series is `windowMs`.
   */
  retry: RetryConfig;
  /** No retry is scheduled later than this after the first attempt of a series (24 h). */
  windowMs: number;
  /** One attempt may take this long in all: connect, send, answer headers and the start of the body. */
  timeoutMs: number;
  /** How much of each answer's body is kept in the attempt log, in bytes. */
  responseExcerptBytes: number;
  /** How many deliveries are attempted at once. */
  concurrency: number;
  /**
   * How often each node sweeps the outbox for pending deliveries whose next attempt no job holds
   * (a node stopped between a status change, or an attempt, and queueing the next attempt).
   */
  sweepMs: number;
}

/**
 * 10 s doubling to a 1 h cap, each delay spread over [d/2, d], for 24 h after the first attempt.
 * Without jitter that is retries at 10 s, 30 s, 1 min 10 s, 2 min 30 s, 5 min 10 s, 10 min 30 s,
 * 21 min 10 s, 42 min 30 s, 1 h 25 min, then hourly: 32 attempts in all (docs/interface.md lists it).
 */
export const DEFAULT_CALLBACK_OPTIONS: CallbackOptions = {
  retry: { maxRetries: 100, baseDelayMs: 10_000, maxDelayMs: 3_600_000, jitter: true },
  windowMs: 24 * 3_600_000,
  timeoutMs: 10_000,
  responseExcerptBytes: 1024,
  concurrency: 4,
  sweepMs: 5_000,
};

/** Fills defaults and validates; throws an Error that names the bad option (`callbacks.<field>`). */
export function resolveCallbackOptions(input: Partial<CallbackOptions> | undefined): CallbackOptions {
  const o: CallbackOptions = {
    ...DEFAULT_CALLBACK_OPTIONS,
    ...input,
    retry: { ...DEFAULT_CALLBACK_OPTIONS.retry, ...input?.retry },
  };
  assertRetryConfig('Option callbacks.retry', o.retry);
  if (!(Number.isFinite(o.windowMs) && o.windowMs >= 0)) throw new Error('Option callbacks.windowMs must be 0 or more milliseconds.');
  if (!(Number.isFinite(o.timeoutMs) && o.timeoutMs >= 1)) throw new Error('Option callbacks.timeoutMs must be at least 1 millisecond.');
  if (!Number.isInteger(o.responseExcerptBytes) || o.responseExcerptBytes < 0 || o.responseExcerptBytes > 65_536) {
    throw new Error('Option callbacks.responseExcerptBytes must be a whole number from 0 to 65536.');
  }
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1) throw new Error('Option callbacks.concurrency must be a whole number of at least 1.');
  if (!(Number.isFinite(o.sweepMs) && o.sweepMs >= 10)) throw new Error('Option callbacks.sweepMs must be at least 10 milliseconds.');
  return o;
}
