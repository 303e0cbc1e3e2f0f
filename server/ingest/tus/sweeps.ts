import type { TusContext } from './context.js';
import type { TusFinishing } from './finishing.js';
import { reconcileLedger } from './reconciliation.js';

/**
 * The periodic sweep of the tus store: finishes complete uploads that no last PATCH finished,
 * removes expired and stale ones, and brings the ledger (and the shared reservations) in line.
 */
export class TusSweeps {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ctx: TusContext,
    private readonly finishing: TusFinishing,
  ) {}

  /** Sweeps now, then every `expirySweepMs`. */
  async start(): Promise<void> {
    await this.sweep(0);
    // A finish in progress (its probe included) must not be raced by the sweep.
    const settleMs = this.ctx.ingest.options.probeTimeoutMs + 60_000;
    this.timer = setInterval(() => void this.sweep(settleMs), this.ctx.ingest.options.expirySweepMs);
    this.timer.unref();
  }

  /** Stops the periodic sweep (one under way runs to its end). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Removes unfinished uploads past their expiry (the store's deleteExpired), and leftovers of
   * an interrupted finish (a metadata file without its data, or data without metadata); and
   * finishes complete uploads untouched for `settleMs`. Resolves with how many were removed; a
   * failure is logged, never thrown (the sweep runs from a timer).
   */
  async sweep(settleMs = 0): Promise<number> {
    let removed = 0;
    try {
      const listed = await this.ctx.storage.listUploadIds();
      await this.finishing.finishComplete(listed, settleMs);
      removed += await this.ctx.storage.removeStale();
      await reconcileLedger(this.ctx, listed);
    } catch (err) {
      this.ctx.log(`tus: removing expired uploads failed: ${String((err as { body?: string }).body ?? err)}`);
    }
    return removed;
  }
}
