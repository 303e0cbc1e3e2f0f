/**
 * Keeps a backup's own work on the serving thread to a share of it. A backup of a server that
 * serves hashes every byte twice (the part's SHA-256 and the seal's) on the one thread that also
 * answers the API: at full load that took about half a second per 117 MB database, taken from
 * the requests' time, and the API's p99 during a backup was six times its p99 without. Each
 * piece of work is timed, and the stream then rests long enough that the work stays within its
 * share: the backup takes longer, the answers keep their pace.
 */
export class Pacer {
  /** Milliseconds to rest before the next piece. */
  private owed = 0;

  /** `share`: the part of the thread's time the work may take (0.2: a fifth); undefined: no pacing. */
  constructor(private readonly share?: number) {
    if (share !== undefined && !(share > 0 && share <= 1)) throw new RangeError(`share must be in (0, 1], not ${share}`);
  }

  /** Runs `work` now, counting its time. */
  time<T>(work: () => T): T {
    if (this.share === undefined || this.share === 1) return work();
    const started = performance.now();
    try {
      return work();
    } finally {
      this.owed += ((performance.now() - started) * (1 - this.share)) / this.share;
    }
  }

  /** Resolves once the rest owed has passed (at once when under a millisecond is owed). */
  rest(): Promise<void> {
    if (this.owed < 1) return Promise.resolve();
    const ms = this.owed;
    this.owed = 0;
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}
