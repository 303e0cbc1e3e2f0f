/**
 * Who gets a ladder job: every video that reaches status 1 with the rest of its ladder pending,
 * and, at start-up, every such video without a live one.
 *
 * Who gets a transcode job: every video that reaches status 5, and, at start-up, every video in
 * 5 or 6 without a live (queued or running) transcode job — a move to 5 whose event was lost in
 * a crash — unless its job had ended for good and the crash came before the video heard it
 * (then the video goes to 7, as it would have).
 */
import type { VopEventBus } from '../core/events.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { JobRecord, JobStore } from '../storage/jobRecords.js';
import { unsettledEnd } from '../videos/unsettledJobs.js';
import type { VideoLifecycle } from '../videos/videoLifecycle.js';
import { VideoStatus } from '../core/videoStatus.js';
import type { VideoStore } from '../storage/types.js';

export class TranscodeScheduler {
  /** Videos whose check-then-enqueue is under way: two events at once must not make two jobs. */
  private readonly pending = new Set<string>();
  /** Until {@link reconcile} has run, the queue is not started: enqueueing then would misorder jobs. */
  private started = false;

  constructor(
    private readonly jobs: JobQueue,
    private readonly jobStore: JobStore,
    private readonly videos: VideoStore,
    private readonly lifecycle: VideoLifecycle,
    private readonly log: (line: string) => void,
  ) {}

  /** Queues a transcode on every move to 5, and the rest of the ladder on a move to 1 that leaves some. */
  listen(events: VopEventBus): void {
    events.on('video.status', ({ videoId, to }) => {
      // Before start-up's reconcile, the move is stored and reconcile will find it.
      if (!this.started) return;
      if (to === VideoStatus.WaitingForTranscoding) this.ensure(videoId).catch((err) => this.log(`Processing: queueing the transcode of ${videoId} failed: ${String(err)}`));
      if (to === VideoStatus.Normal) this.ensureLadder(videoId).catch((err) => this.log(`Processing: queueing the ladder of ${videoId} failed: ${String(err)}`));
      if (to === VideoStatus.Normal) this.ensureStoryboard(videoId).catch((err) => this.log(`Processing: queueing the storyboard of ${videoId} failed: ${String(err)}`));
    });
    // The ladder landed: the storyboard is made from its smallest rung.
    events.on('video.renditions', ({ videoId, ladder }) => {
      if (!this.started || ladder !== '') return;
      this.ensureStoryboard(videoId).catch((err) => this.log(`Processing: queueing the storyboard of ${videoId} failed: ${String(err)}`));
    });
  }

  /**
   * Enqueues the storyboard of `videoId` if it is playable with its whole ladder (none pending) and
   * no storyboard job is live; resolves true if it enqueued.
   */
  async ensureStoryboard(videoId: string): Promise<boolean> {
    const key = `storyboard:${videoId}`;
    if (this.pending.has(key)) return false;
    this.pending.add(key);
    try {
      const video = await this.videos.get(videoId);
      if (video?.status !== VideoStatus.Normal || video.ladder === 'pending' || (await this.liveJob(videoId, 'storyboard'))) return false;
      await this.jobs.enqueue('storyboard', { videoId }, { videoId });
      return true;
    } finally {
      this.pending.delete(key);
    }
  }

  /**
   * Enqueues the ladder of `videoId` if it is playable, its rows say its ladder is pending, and no
   * ladder job is live; resolves true if it enqueued.
   */
  async ensureLadder(videoId: string): Promise<boolean> {
    const key = `ladder:${videoId}`;
    if (this.pending.has(key)) return false;
    this.pending.add(key);
    try {
      const video = await this.videos.get(videoId);
      if (video?.status !== VideoStatus.Normal || video.ladder !== 'pending' || (await this.liveJob(videoId, 'ladder'))) return false;
      await this.jobs.enqueue('ladder', { videoId }, { videoId });
      return true;
    } finally {
      this.pending.delete(key);
    }
  }

  /** Enqueues a transcode of `videoId` unless one is live; resolves true if it enqueued. */
  async ensure(videoId: string): Promise<boolean> {
    if (this.pending.has(videoId)) return false;
    this.pending.add(videoId);
    try {
      if (await this.liveJob(videoId)) return false;
      await this.jobs.enqueue('transcode', { videoId }, { videoId });
      return true;
    } finally {
      this.pending.delete(videoId);
    }
  }

  /**
   * Retries a failed or cancelled transcode job (admin API): its video goes back from 7 to 5
   * first, then the job is queued again, so it finds the video waiting; the move to 5 does not
   * queue a second job. Resolves false if the job could not be retried.
   */
  async retry(job: JobRecord): Promise<boolean> {
    if (job.state !== 'failed' && job.state !== 'cancelled') return false;
    this.pending.add(job.videoId);
    try {
      await this.lifecycle.move(job.videoId, VideoStatus.WaitingForTranscoding, { from: [VideoStatus.TranscodingFailed] });
      return await this.jobs.retry(job.id);
    } finally {
      this.pending.delete(job.videoId);
    }
  }

  /** The queued or running job of `type` (by default the transcode) of `videoId`, if any. */
  private async liveJob(videoId: string, type: string = 'transcode') {
    return (await this.jobStore.list({ states: ['queued', 'running'], types: [type], videoId, limit: 1 }))[0];
  }

  /** Call once the queue has started (it re-queues jobs a crash cut off first). Resolves with the count queued. */
  async reconcile(): Promise<number> {
    this.started = true;
    let n = 0;
    let settled = 0;
    for (const id of await this.videos.idsByStatus([VideoStatus.WaitingForTranscoding, VideoStatus.Transcoding])) {
      // Without a stored source the status was set by hand: a job would have nothing to do.
      if (!(await this.videos.get(id))?.sourceFile || (await this.liveJob(id))) continue;
      // Its job ended for good and a crash kept the video from hearing it: the give-up is
      // finished (the video goes to 7 with the job's reason), not the work done again.
      const ended = await unsettledEnd({ jobs: this.jobStore, videos: this.videos }, id, 'transcode', [VideoStatus.WaitingForTranscoding]);
      if (ended) {
        await this.jobs.settle(ended);
        settled++;
      } else if (await this.ensure(id)) n++;
    }
    // The ladders a crash cut off between a video's move to 1 and the queueing of its ladder.
    let ladders = 0;
    for (const id of await this.videos.idsByLadder('pending')) {
      if (await this.ensureLadder(id)) ladders++;
    }
    if (ladders > 0) this.log(`Processing: queued the rest of the ladder of ${ladders} playable video(s) found without one at start-up.`);
    if (settled > 0) this.log(`Processing: ${settled} video(s) whose transcode had ended without success before the last stop marked as failed.`);
    if (n > 0) this.log(`Processing: queued ${n} transcode(s) found waiting at start-up.`);
    return n;
  }
}
