/**
 * A failure limit: failures a key (a client address, an AppId) may have within one window before
 * it is limited. Only failures are counted, so a caller that never fails never meets the limit
 * and pays nothing for it. The counting is the stores' (Stores.counters: in this process's memory
 * in the embedded mode, in the database in cluster mode).
 */
export interface FailureLimitOptions {
  /** Length of the counting window. */
  windowMs: number;
  /** Failures a key may have within one window before it is limited. */
  maxFailures: number;
}
