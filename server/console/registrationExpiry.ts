import { ApiError } from '../core/errors.js';
import type { VideoStore } from '../storage/types.js';
import type { HousekeepingOptions } from '../services/housekeepingOptions.js';
import type { ExpiryView } from './housekeepingViews.js';
import type { VideoAdmin } from './videoAdmin.js';
import { VideoStatus } from '../core/videoStatus.js';

const DAY_MS = 86_400_000;

export interface RegistrationExpiryDeps {
  videos: Pick<VideoStore, 'oldestInStatus'>;
  admin: Pick<VideoAdmin, 'remove'>;
  /** Videos an upload is under way for: they are left alone, however old their registration. */
  uploading(): Promise<Set<string>>;
  log: (line: string) => void;
}

/**
 * Registrations never uploaded (status 8) expire `expireUnuploadedDays` after they were made
 * (issue 13, item 4): a periodic sweep deletes them as an admin's delete does, through
 * VideoAdmin.remove (status 0, files removed, the record and its history kept), with the reason
 * in the status history.
 *
 * What the application hears: no callback. The spec calls back after a video has been transcoded
 * (section 6), and vop sends status callbacks for 1, 4 and 7 only; a registration that never got
 * a file reaches none of them. The application sees Status 0 ("waiting for deletion", spec
 * section 3) the next time it reads or lists the video, as for any deleted video.
 *
 * A video with an upload under way is skipped (its bytes are arriving, or it is stalled and an
 * admin can cancel it); one that leaves 8 between the read and the delete is left as it is (the
 * delete's move is guarded on the status it read).
 */
export class RegistrationExpiry {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | undefined;
  private stopped = false;

  constructor(
    private readonly deps: RegistrationExpiryDeps,
    private readonly options: Pick<HousekeepingOptions, 'expireUnuploadedDays' | 'expirySweepMs' | 'expiryBatch'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Sweeps every `expirySweepMs` from now on (the first after one interval). */
  start(): void {
    if (this.stopped || this.timer) return;
    this.timer = setInterval(() => void this.sweep().catch((err) => this.deps.log(`Expiring registrations: ${String(err)}`)), this.options.expirySweepMs);
    this.timer.unref();
  }

  /** Stops sweeping and waits for a sweep under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.sweeping?.catch(() => undefined);
  }

  /** Deletes the registrations due now (at most `expiryBatch`); resolves with how many. One sweep at a time. */
  sweep(): Promise<number> {
    this.sweeping ??= this.sweepOnce().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  async view(): Promise<ExpiryView> {
    const days = this.options.expireUnuploadedDays;
    const { total, items } = await this.deps.videos.oldestInStatus(VideoStatus.NotUploaded, 1);
    const oldest = items[0];
    return { days, waiting: total, nextExpiresAt: days > 0 && oldest ? new Date(oldest.createdAt + days * DAY_MS).toISOString() : null };
  }

  private async sweepOnce(): Promise<number> {
    const days = this.options.expireUnuploadedDays;
    if (days <= 0) return 0;
    const cutoff = this.now() - days * DAY_MS;
    const { items } = await this.deps.videos.oldestInStatus(VideoStatus.NotUploaded, this.options.expiryBatch);
    const due = items.filter((v) => v.createdAt <= cutoff);
    if (due.length === 0) return 0;
    const uploading = await this.deps.uploading();
    let removed = 0;
    for (const v of due) {
      if (this.stopped) break;
      if (uploading.has(v.id)) continue;
      try {
        await this.deps.admin.remove(v.id, `expired: no file ${formatDays(days)} after registration`, [VideoStatus.NotUploaded]);
        removed++;
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        // It left 8 meanwhile (its upload finished): not expired after all.
      }
    }
    if (removed > 0) this.deps.log(`Expired ${removed} registration${removed === 1 ? '' : 's'} never uploaded (older than ${formatDays(days)}).`);
    return removed;
  }
}

function formatDays(days: number): string {
  return days === 1 ? '1 day' : `${days} days`;
}
