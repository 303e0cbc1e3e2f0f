import fs from 'node:fs';
import path from 'node:path';
import { ApiError, RESULT_CODES } from '../core/errors.js';
import type { VopEventBus } from '../core/events.js';
import { PermanentJobError, type JobContext, type JobQueue, type JobTypeDefinition } from '../jobs/jobQueue.js';
import type { JobRecord, JobStore } from '../storage/jobRecords.js';
import { unsettledEnd } from '../videos/unsettledJobs.js';
import type { VideoLifecycle } from '../videos/videoLifecycle.js';
import { VideoStatus } from '../core/videoStatus.js';
import type { LocalMediaRoot } from '../storage/media/localMediaRoot.js';
import type { VideoStore } from '../storage/types.js';
import { DownloadError, downloadToFile } from './httpDownload.js';
import type { IngestService } from './ingestService.js';
import { PullPolicy } from './pullPolicy.js';

/** How often a download reports progress. */
const PROGRESS_EVERY_MS = 500;

export interface DownloadJobDeps {
  ingest: IngestService;
  videos: VideoStore;
  media: LocalMediaRoot;
  lifecycle: VideoLifecycle;
  /** Swap point for tests (DNS answers); the options' allow and deny lists by default. */
  policy?: PullPolicy;
  /** Told when a pull fails for good (upload.refused); the file's arrival is told by the intake. */
  events?: VopEventBus;
}

/**
 * The `download` job (issue 3 item 6): status 2 → 3, the file into `incoming/<id>/`, then the
 * same intake as an upload (→ 5, or 7 if not a video); or 4 with the reason once it gives up.
 * Transient failures are retried by the queue with `pull.retry`; permanent ones give up at
 * once. A download cut by a stop runs again from the start (`recover` drops the partial file).
 */
export function downloadJob(deps: DownloadJobDeps): JobTypeDefinition<'download'> {
  const pull = deps.ingest.options.pull;
  const policy = deps.policy ?? new PullPolicy(pull);
  const partial = (videoId: string) => deps.media.path('incoming', videoId, 'download.part');
  const videoIdOf = (job: JobRecord) => String(job.payload.videoId ?? job.videoId);
  // Pulls of this node the policy refused that an allow entry would let through, until their give-up says so.
  const allowable = new Set<string>();

  return {
    concurrency: pull.concurrency,
    // It needs ffprobe: a cluster's API nodes leave it to the workers.
    runsOn: 'workers',
    retry: pull.retry,
    async handle(job: JobRecord, ctx: JobContext) {
      const videoId = videoIdOf(job);
      const video = await deps.videos.get(videoId);
      // Deleted, or already past the download (a job queued twice): nothing to do.
      if (!video || (video.status !== VideoStatus.WaitingForDownload && video.status !== VideoStatus.Downloading)) return;
      if (video.status === VideoStatus.WaitingForDownload) await deps.lifecycle.move(videoId, VideoStatus.Downloading, { from: [VideoStatus.WaitingForDownload] });
      // Stopped after the file was stored but before it was checked: check it now.
      if (await deps.ingest.intake.finishStored(videoId, VideoStatus.Downloading)) return;

      const file = partial(videoId);
      const startedAt = Date.now();
      await fs.promises.mkdir(path.dirname(file), { recursive: true });
      await fs.promises.rm(file, { force: true });
      try {
        await deps.ingest.room.ensureRoomFor(0);
        await downloadToFile(video.sourceUrl, file, {
          ...pull,
          policy,
          checkRoom: () => deps.ingest.room.ensureRoomFor(0),
          checkRoomEveryBytes: deps.ingest.options.spaceCheckIntervalBytes,
          signal: ctx.signal,
          onProgress: progressReporter(ctx),
          beforeSave: (total) => deps.ingest.room.ensureRoomFor(total ?? 0),
        });
        await deps.ingest.intake.accept(videoId, file, { from: VideoStatus.Downloading, keepSource: false, arrival: { via: 'pull', appId: video.appId, startedAt } });
      } catch (err) {
        await fs.promises.rm(file, { force: true });
        if (err instanceof DownloadError && err.allowable) allowable.add(videoId);
        if (err instanceof DownloadError && err.permanent) throw new PermanentJobError(err.message);
        // Someone else moved the video meanwhile (deleted, say): there is nothing left to do.
        if (err instanceof ApiError && err.def === RESULT_CODES.VIDEO_STATE_CONFLICT) return;
        throw err;
      }
    },
    async recover(job) {
      await fs.promises.rm(partial(videoIdOf(job)), { force: true });
    },
    async onGiveUp(job, reason) {
      const videoId = videoIdOf(job);
      await fs.promises.rm(partial(videoId), { force: true });
      const moved = await deps.lifecycle.move(videoId, VideoStatus.DownloadFailed, {
        from: [VideoStatus.WaitingForDownload, VideoStatus.Downloading],
        reason: `download failed: ${reason}`,
      });
      // A pull answers no request, so it has no result code of its own: one the allow list would
      // have let through says ACCESS_DENIED, for the log to name that setting; others say none.
      const code = allowable.delete(videoId) ? RESULT_CODES.ACCESS_DENIED.code : '';
      if (moved && deps.events) {
        const video = await deps.videos.get(videoId);
        deps.events.emit('upload.refused', { videoId, appId: video?.appId ?? '', via: 'pull', code, reason: `download failed: ${reason}` });
      }
    },
  };
}

/** Turns byte counts into the queue's progress: percent (if the size is known), speed and time left. */
function progressReporter(ctx: JobContext): (p: { received: number; total: number | undefined }) => void {
  const started = Date.now();
  let last = 0;
  return ({ received, total }) => {
    const now = Date.now();
    if (now - last < PROGRESS_EVERY_MS && received !== total) return;
    last = now;
    const bytesPerSecond = received / Math.max(0.001, (now - started) / 1000);
    ctx.progress({
      percent: total ? Math.min(100, Math.floor((received / total) * 100)) : 0,
      speed: `${(bytesPerSecond / 1024 ** 2).toFixed(1)} MB/s`,
      etaSeconds: total && bytesPerSecond > 0 ? Math.ceil((total - received) / bytesPerSecond) : undefined,
    });
  };
}

/**
 * At start-up, once the queue has started (it has put the downloads a crash cut off back in the
 * queue): every video waiting for its download (2) or downloading (3) without a live download
 * job is seen to. Its last download ended for good and a crash came before the video heard it:
 * the give-up is finished (4, with the job's reason). Otherwise the crash came between the
 * registration and its job (the job is queued on the registration's event, after the video is
 * stored): the download is queued now. Only videos registered before this process started are
 * looked at: a registration since has its own event, which queues its job, and looking at it
 * here could queue a second. (In cluster mode another node's registration of the very moment of
 * this start could still get two jobs; the second finds the video past 2 and 3 and does nothing,
 * unless both start at once.) Resolves with the count queued.
 */
export async function resumeDownloads(deps: {
  jobs: JobQueue;
  stores: { jobs: JobStore; videos: VideoStore };
  startedAt: number;
  log: (line: string) => void;
}): Promise<number> {
  const { jobs, stores } = deps;
  let queued = 0;
  let settled = 0;
  for (const id of await stores.videos.idsByStatus([VideoStatus.WaitingForDownload, VideoStatus.Downloading])) {
    const video = await stores.videos.get(id);
    if (!video || video.createdAt >= deps.startedAt) continue;
    if ((await stores.jobs.list({ states: ['queued', 'running'], types: ['download'], videoId: id, limit: 1 })).length > 0) continue;
    const ended = await unsettledEnd(stores, id, 'download', [VideoStatus.WaitingForDownload]);
    if (ended) {
      await jobs.settle(ended);
      settled++;
    } else {
      await jobs.enqueue('download', { videoId: id }, { videoId: id });
      queued++;
    }
  }
  if (settled > 0) deps.log(`Ingest: ${settled} video(s) whose download had ended without success before the last stop marked as failed.`);
  if (queued > 0) deps.log(`Ingest: queued ${queued} download(s) whose registration a stop had cut off from its job.`);
  return queued;
}
