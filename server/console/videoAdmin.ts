import { ApiError } from '../core/errors.js';
import type { LadderView } from '../http/adminApiTypes.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { LadderOptions } from '../media/ladder.js';
import type { JobRecord, JobStore } from '../storage/jobRecords.js';
import type { VideoMedia } from '../storage/media/videoMedia.js';
import type { Page, RenditionRecord, StatusChange, VideoRecord, VideoSearch, VideoStore } from '../storage/types.js';
import type { VideoLifecycle } from '../videos/videoLifecycle.js';
import { VideoStatus } from '../core/videoStatus.js';
import { ladderView } from './ladderView.js';

export interface VideoAdminDeps {
  videos: VideoStore;
  jobStore: JobStore;
  jobs: JobQueue;
  lifecycle: VideoLifecycle;
  /** A video's objects and local files, for deletion. */
  media: Pick<VideoMedia, 'removeVideo'>;
  /** Retries a failed transcode job, moving its video from 7 back to 5 (TranscodeScheduler.retry). */
  retryTranscode(job: JobRecord): Promise<boolean>;
  /** The rendition ladder in use (processing options): how many rungs a video's ladder comes to. */
  ladder(): LadderOptions;
}

/** What a retry did. */
export type RetryAction = 'transcode' | 'download';

/** What the console may do to several videos at once. */
export type BulkAction = 'delete' | 'retry';

/** Most videos one bulk request may name: each delete purges files, so a request stays short. */
export const MAX_BULK_VIDEOS = 100;

/** How one video of a bulk request fared: done (with the video after it), or refused and why, as the admin API's errors say it. */
export type BulkOutcome =
  | { id: string; ok: true; video: VideoRecord; action?: RetryAction }
  | { id: string; ok: false; error: { code: string; message: string } };

/**
 * What the console does to one video beyond the spec API: retry a failed one, delete one. Used by
 * routes/adminVideos.ts; no HTTP here.
 */
export class VideoAdmin {
  constructor(private readonly deps: VideoAdminDeps) {}

  /** A video by id (lower case), or undefined. */
  get(id: string): Promise<VideoRecord | undefined> {
    return this.deps.videos.get(id);
  }

  /** The console's video list: a page of the videos `filter` matches, newest first. */
  search(filter: VideoSearch, page: Page): Promise<{ total: number; items: VideoRecord[] }> {
    return this.deps.videos.search(filter, page);
  }

  renditions(id: string): Promise<RenditionRecord[]> {
    return this.deps.videos.renditions(id);
  }

  countByStatus(): Promise<Record<number, number>> {
    return this.deps.videos.countByStatus();
  }

  /**
   * The console's page of one video: its record, status history, renditions, latest 50 jobs and
   * where the rest of its ladder stands; undefined if there is none.
   */
  async detail(id: string): Promise<{ video: VideoRecord; statusHistory: StatusChange[]; renditions: RenditionRecord[]; jobs: JobRecord[]; ladder: LadderView } | undefined> {
    const video = await this.deps.videos.get(id);
    if (!video) return undefined;
    const [statusHistory, renditions, jobs, ladderJobs] = await Promise.all([
      this.deps.videos.statusHistory(video.id),
      this.deps.videos.renditions(video.id),
      this.deps.jobStore.list({ videoId: video.id, limit: 50 }),
      // Apart: a video's callbacks may push its ladder job out of the latest 50.
      this.deps.jobStore.list({ videoId: video.id, types: ['ladder'], limit: 1 }),
    ]);
    return { video, statusHistory, renditions, jobs, ladder: ladderView(video, renditions, ladderJobs[0], this.deps.ladder()) };
  }

  /**
   * The titles of the given videos, by id. The videos of a type's queued and running jobs are
   * nearly all in its `statuses` (5 and 6 for transcodes): one search fetches those; the few
   * others (finished jobs) are read one by one.
   */
  async titles(ids: string[], statuses: number[]): Promise<Record<string, string>> {
    const { videos } = this.deps;
    const wanted = new Set(ids.filter(Boolean));
    const titles: Record<string, string> = {};
    if (wanted.size === 0) return titles;
    if (statuses.length > 0) {
      const { items } = await videos.search({ statuses }, { offset: 0, limit: Number.MAX_SAFE_INTEGER });
      for (const v of items) if (wanted.has(v.id)) titles[v.id] = v.title;
    }
    await Promise.all(
      [...wanted]
        .filter((id) => !(id in titles))
        .map(async (id) => {
          const v = await videos.get(id);
          if (v) titles[id] = v.title;
        }),
    );
    return titles;
  }

  /**
   * Sends a failed video back: 7 → 5 (transcoded again from its stored source), 4 → 2 (downloaded
   * again from its SourceFilePath). The failed job is retried when there is one, so the queue
   * keeps one history per video; otherwise a new job is queued.
   */
  async retry(videoId: string): Promise<{ video: VideoRecord; action: RetryAction }> {
    const video = await this.require(videoId);
    const reason = 'retried by an admin';
    if (video.status === VideoStatus.TranscodingFailed) {
      // An uploaded file that was not a video is deleted: the video takes another upload instead.
      if (!video.sourceFile) throw new ApiError('VIDEO_STATE_CONFLICT', 'its source file is not stored (a file that was not a video is deleted); upload another file');
      const job = await this.lastEnded(videoId, 'transcode');
      // Without a failed job (the file was refused at intake), the move to 5 queues a new one.
      const ok = job ? await this.deps.retryTranscode(job) : await this.deps.lifecycle.move(videoId, VideoStatus.WaitingForTranscoding, { from: [VideoStatus.TranscodingFailed], reason });
      if (!ok) throw new ApiError('VIDEO_STATE_CONFLICT', 'the video changed meanwhile; reload it');
      return { video: await this.require(videoId), action: 'transcode' };
    }
    if (video.status === VideoStatus.DownloadFailed) {
      if (!(await this.deps.lifecycle.move(videoId, VideoStatus.WaitingForDownload, { from: [VideoStatus.DownloadFailed], reason }))) {
        throw new ApiError('VIDEO_STATE_CONFLICT', 'the video changed meanwhile; reload it');
      }
      const job = await this.lastEnded(videoId, 'download');
      if (!job || !(await this.deps.jobs.retry(job.id))) await this.deps.jobs.enqueue('download', { videoId }, { videoId });
      return { video: await this.require(videoId), action: 'download' };
    }
    throw new ApiError('VIDEO_STATE_CONFLICT', 'only a video whose download (4) or transcoding (7) failed can be retried');
  }

  /**
   * Deletes a video: status 0 ("waiting for deletion", spec section 3) first, so nothing starts
   * on it; then its live jobs are cancelled and every file it has (source, renditions, HLS,
   * covers, partial uploads) is removed, and its renditions forgotten. The record stays, in
   * status 0 with its history, so the applications that knew it can still see what became of it.
   * Deleting a video already in 0 purges again (a purge cut off by a crash finishes). `reason`
   * goes in the status history; with `onlyFrom`, a video in another status is refused (303).
   */
  async remove(videoId: string, reason = 'deleted by an admin', onlyFrom?: readonly number[]): Promise<VideoRecord> {
    const video = await this.require(videoId);
    // The sweep of expired registrations deletes only what is still in 8 (console/registrationExpiry.ts).
    if (onlyFrom && !onlyFrom.includes(video.status)) throw new ApiError('VIDEO_STATE_CONFLICT', `the video is in status ${video.status} now`);
    if (video.status !== VideoStatus.WaitingForDeletion) {
      const moved = await this.deps.lifecycle.move(videoId, VideoStatus.WaitingForDeletion, { from: [video.status], reason });
      if (!moved) throw new ApiError('VIDEO_STATE_CONFLICT', 'the video changed meanwhile; try again');
    }
    // After the move: a cancelled job's give-up finds the video in 0 and leaves it there.
    for (const job of await this.deps.jobStore.list({ videoId, states: ['queued', 'running'], limit: 100 })) await this.deps.jobs.cancel(job.id);
    const renditions = await this.deps.videos.renditions(videoId);
    await this.deps.media.removeVideo(videoId, renditions.map((r) => r.file));
    await this.deps.videos.setRenditions(videoId, []);
    await this.deps.videos.updateMedia(videoId, { sourceFile: '', coverFile: '' });
    return this.require(videoId);
  }

  /**
   * {@link retry} or {@link remove} for each of `ids` in turn (at most {@link MAX_BULK_VIDEOS},
   * duplicates once), each on its own: one that is refused (not found, in a state the action does
   * not apply to, changed meanwhile) is reported with the catalogue's code and message and the
   * others go on. Errors that are not the catalogue's (storage failing) end the request.
   */
  async bulk(action: BulkAction, ids: readonly string[]): Promise<BulkOutcome[]> {
    const unique = [...new Set(ids)];
    if (unique.length === 0 || unique.length > MAX_BULK_VIDEOS) throw new ApiError('INVALID_PARAMETER', `name from 1 to ${MAX_BULK_VIDEOS} videos`);
    const out: BulkOutcome[] = [];
    for (const id of unique) {
      try {
        if (action === 'delete') out.push({ id, ok: true, video: await this.remove(id) });
        else {
          const { video, action: did } = await this.retry(id);
          out.push({ id, ok: true, video, action: did });
        }
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        out.push({ id, ok: false, error: { code: err.code, message: err.message } });
      }
    }
    return out;
  }

  private async require(videoId: string): Promise<VideoRecord> {
    const video = await this.deps.videos.get(videoId);
    if (!video) throw new ApiError('VIDEO_NOT_FOUND');
    return video;
  }

  /** The video's most recent job of `type` that ended without success, if no job of that type is live. */
  private async lastEnded(videoId: string, type: string): Promise<JobRecord | undefined> {
    const list = await this.deps.jobStore.list({ videoId, types: [type], limit: 20 });
    if (list.some((j) => j.state === 'queued' || j.state === 'running')) return undefined;
    return list.filter((j) => j.state === 'failed' || j.state === 'cancelled').sort((a, b) => b.updatedAt - a.updatedAt)[0];
  }
}
