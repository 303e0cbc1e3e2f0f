import express, { type Router } from 'express';
import { ApiError } from '../errors.js';
import type { JobView } from '../http/adminApiTypes.js';
import { intParam, stringParam } from '../http/params.js';
import type { JobProgress, JobQueue } from '../jobs/jobQueue.js';
import type { JobRecord, JobState, JobStore } from '../jobs/types.js';
import type { Processing } from '../processing/createProcessing.js';
import { defaultTranscodeConcurrency } from '../processing/processingOptions.js';
import { TRANSCODE_JOB } from '../processing/transcodeJob.js';
import type { VideoStore } from '../storage/types.js';

export interface AdminJobsDeps {
  jobs: JobQueue;
  jobStore: JobStore;
  videos: VideoStore;
  processing: Processing;
}

const STATES: readonly JobState[] = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
/** Concurrency an admin may set at run time: beyond this a machine only thrashes. */
const MAX_CONCURRENCY = 64;

/**
 * Admin API: the job queue and the processing settings. Mounted at `/admin/api` behind
 * requireAdmin and a JSON parser.
 *
 *   GET   /jobs?state=queued,running&type=transcode&videoId=…&limit=…   jobs, live progress merged
 *   GET   /jobs/:id
 *   POST  /jobs/:id/cancel     a queued or running job (a cancelled transcode leaves its video in 7)
 *   POST  /jobs/:id/retry      a failed or cancelled job (a transcode's video goes back from 7 to 5)
 *   PATCH /jobs/:id {priority} a queued job; higher runs first
 *   POST  /jobs/:id/move {direction: 'up'|'down'}  a queued job changes places with its neighbour in the queue
 *   GET   /processing          settings, binaries, what runs
 *   PUT   /processing {concurrency}  transcodes at once, until the next start
 *   GET   /videos/:id          a video with its status history, renditions, jobs and failure reason
 */
export function adminJobsRouter(deps: AdminJobsDeps): Router {
  const { jobs, jobStore } = deps;
  const r = express.Router();

  /** A list passes one `live` for all its rows: JobQueue.live() copies every running job. */
  const view = (job: JobRecord, live = liveProgress(jobs)): JobView => {
    const progress = live.get(job.id);
    const { payload: _payload, ...rest } = job;
    return {
      ...rest,
      progress: progress ? progress.percent : job.progress,
      etaSeconds: progress?.etaSeconds ?? null,
      speed: progress?.speed ?? null,
    };
  };
  const load = async (id: string): Promise<JobRecord> => {
    const job = await jobStore.get(id);
    if (!job) throw new ApiError('JOB_NOT_FOUND');
    return job;
  };

  r.get('/jobs', async (req, res) => {
    const q = req.query as Record<string, unknown>;
    const states = listParam(q.state, 'state');
    for (const s of states ?? []) if (!STATES.includes(s as JobState)) throw new ApiError('INVALID_PARAMETER', `state must be among ${STATES.join(', ')}`);
    const list = await jobStore.list({
      states: states as JobState[] | undefined,
      types: listParam(q.type, 'type'),
      videoId: stringParam(q.videoId, 'videoId'),
      limit: intParam(q.limit, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
    });
    const live = liveProgress(jobs);
    res.json({ jobs: list.map((j) => view(j, live)) });
  });

  r.get('/jobs/:id', async (req, res) => {
    res.json(view(await load(req.params.id)));
  });

  r.post('/jobs/:id/cancel', async (req, res) => {
    const job = await load(req.params.id);
    if (!(await jobs.cancel(job.id))) throw new ApiError('JOB_STATE_CONFLICT', `a ${job.state} job cannot be cancelled`);
    res.json(view(await load(job.id)));
  });

  r.post('/jobs/:id/retry', async (req, res) => {
    const job = await load(req.params.id);
    // A transcode's video goes back to 5 with it (see TranscodeScheduler.retry).
    const retried = job.type === TRANSCODE_JOB ? await deps.processing.scheduler.retry(job) : await jobs.retry(job.id);
    if (!retried) throw new ApiError('JOB_STATE_CONFLICT', `a ${job.state} job cannot be retried`);
    res.json(view(await load(job.id)));
  });

  r.patch('/jobs/:id', async (req, res) => {
    const job = await load(req.params.id);
    const priority = (req.body as Record<string, unknown> | undefined)?.priority;
    if (!Number.isInteger(priority) || Math.abs(priority as number) > 1_000_000) throw new ApiError('INVALID_PARAMETER', 'priority must be a whole number from -1000000 to 1000000');
    if (!(await jobs.setPriority(job.id, priority as number))) throw new ApiError('JOB_STATE_CONFLICT', 'only a queued job can change priority');
    res.json(view(await load(job.id)));
  });

  r.post('/jobs/:id/move', async (req, res) => {
    const job = await load(req.params.id);
    const direction = (req.body as Record<string, unknown> | undefined)?.direction;
    if (direction !== 'up' && direction !== 'down') throw new ApiError('INVALID_PARAMETER', 'direction must be "up" or "down"');
    const moved = await jobs.move(job.id, direction);
    if (moved === 'not-queued') throw new ApiError('JOB_STATE_CONFLICT', 'only a queued job can move');
    if (moved === 'edge') throw new ApiError('JOB_STATE_CONFLICT', `the job is already ${direction === 'up' ? 'first' : 'last'} in the queue`);
    res.json(view(await load(job.id)));
  });

  const processingView = async () => {
    const p = deps.processing.options;
    return {
      concurrency: jobs.concurrency(TRANSCODE_JOB),
      defaultConcurrency: defaultTranscodeConcurrency(),
      preset: p.preset,
      crf: p.crf,
      hls: p.hls,
      ladder: p.ladder,
      running: jobs.live().filter((l) => l.job.type === TRANSCODE_JOB).length,
      binaries: await deps.processing.tools.status(),
    };
  };
  r.get('/processing', async (_req, res) => {
    res.json(await processingView());
  });
  r.put('/processing', async (req, res) => {
    const concurrency = (req.body as Record<string, unknown> | undefined)?.concurrency;
    if (!Number.isInteger(concurrency) || (concurrency as number) < 1 || (concurrency as number) > MAX_CONCURRENCY) {
      throw new ApiError('INVALID_PARAMETER', `concurrency must be a whole number from 1 to ${MAX_CONCURRENCY}`);
    }
    jobs.setConcurrency(TRANSCODE_JOB, concurrency as number);
    res.json(await processingView());
  });

  r.get('/videos/:id', async (req, res) => {
    const video = await deps.videos.get(req.params.id);
    if (!video) throw new ApiError('VIDEO_NOT_FOUND');
    const [statusHistory, renditions, videoJobs] = await Promise.all([
      deps.videos.statusHistory(video.id),
      deps.videos.renditions(video.id),
      jobStore.list({ videoId: video.id, limit: 50 }),
    ]);
    const live = liveProgress(jobs);
    res.json({ video, statusHistory, renditions, jobs: videoJobs.map((j) => view(j, live)) });
  });

  return r;
}

/** Live progress of running jobs by id. */
function liveProgress(jobs: JobQueue): Map<string, JobProgress> {
  return new Map(jobs.live().map((l) => [l.job.id, l.progress]));
}

/** `a,b` → ['a', 'b']. */
function listParam(v: unknown, name: string): string[] | undefined {
  return stringParam(v, name)?.split(',').filter((s) => s !== '');
}
