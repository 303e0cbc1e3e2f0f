import type { VopEventBus } from '../core/events.js';
import type { VideoStore } from '../storage/types.js';

/**
 * Every change of a video's Status goes through here: the move and its history row are stored
 * as one step, only from the states given, and `video.status` is emitted once it is durable (the
 * status callback listens for it, so a status is always stored before its callback is sent).
 */
export class VideoLifecycle {
  constructor(
    private readonly videos: VideoStore,
    private readonly events: VopEventBus,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Moves `videoId` to `to` if its status is one of `from` (any, if omitted). Resolves true if
   * it moved; false if the video is gone or in another state (someone else moved it first).
   */
  async move(videoId: string, to: number, opts: { from?: number[]; reason?: string } = {}): Promise<boolean> {
    const before = await this.videos.get(videoId);
    if (!before) return false;
    const at = this.now();
    const moved = await this.videos.setStatus(videoId, to, { from: opts.from, reason: opts.reason, now: at });
    if (moved) this.events.emit('video.status', { videoId, appId: before.appId, from: before.status, to, reason: opts.reason ?? '', at });
    return moved;
  }
}
