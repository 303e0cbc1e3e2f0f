import express, { type Router } from 'express';
import { ApiError } from '../core/errors.js';
import type { JobView } from '../http/adminApiTypes.js';
import { knownFields } from '../http/knownFields.js';
import { intParam, stringParam } from '../http/params.js';
import type { JobProgress, JobQueue } from '../jobs/jobQueue.js';
import type { JobRecord, JobState } from '../storage/jobRecords.js';
import type { Processing } from '../processing/createProcessing.js';
import { defaultTranscodeConcurrency } from '../processing/processingOptions.js';
import type { JobAdmin } from '../console/jobAdmin.js';
import type { VideoAdmin } from '../console/videoAdmin.js';

export interface AdminJobsDeps {
  jobs: JobQueue;
  jobAdmin: JobAdmin;
  videoAdmin: Pick<VideoAdmin, 'detail' | 'titles'>;
  processing: Processing;
}

const STATES: readonly JobState[] = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
/** Most places one move may take a job (a drag across a long queue). */
const MAX_MOVE_PLACES = 10_000;
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
 *   PATCH /jobs/:id {priority} a queued job; higher runs first, whatever its application
 *   POST  /jobs/:id/move {direction: 'top'}  a queued job runs next: its priority goes one above
 *                              every other queued job's of its type
 *   POST  /jobs/:id/move {direction: 'up'|'down', places?}  a queued job changes places with its
 *                              neighbour among its application's queued jobs (slots are shared
 *                              fairly between applications, JobStore.claimNext), `places` times (1
 *                              by default; a drag in the console moves it several), stopping at the
 *                              end of that application's queue
 *   GET   /queue/:types?recent=20   the monitor's one request, however long the queue: every running
 *                              and queued job of the types (one, or several with commas:
 *                              `transcode,ladder`), each type's in queue order and the types in the
 *                              order named, the last finished ones of them all, the title of each
 *                              one's video, and the processing view
 *   GET   /processing          settings, binaries, what runs
 *   PUT   /processing {concurrency}  transcodes at once, until the next start
 *   GET   /videos/:id          a video with its status history, renditions, jobs, failure reason
 *                              and where the rest of its ladder stands (`ladder`, LadderView)
 */
export function adminJobsRouter(deps: AdminJobsDeps): Router {
  const { jobs, jobAdmin } = deps;
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
    const job = await jobAdmin.get(id);
    if (!job) throw new ApiError('JOB_NOT_FOUND');
    return job;
  };

  r.get('/jobs', async (req, res) => {
    const q = req.query as Record<string, unknown>;
    const states = listParam(q.state, 'state');
    for (const s of states ?? []) if (!STATES.includes(s as JobState)) throw new ApiError('INVALID_PARAMETER', `state must be among ${STATES.join(', ')}`);
    const list = await jobAdmin.list({
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
    const retried = job.type === 'transcode' ? await deps.processing.scheduler.retry(job) : await jobs.retry(job.id);
    if (!retried) throw new ApiError('JOB_STATE_CONFLICT', `a ${job.state} job cannot be retried`);
    res.json(view(await load(job.id)));
  });

  r.patch('/jobs/:id', async (req, res) => {
    const job = await load(req.params.id);
    const { priority } = knownFields(req.body, ['priority']);
    if (!Number.isInteger(priority) || Math.abs(priority as number) > 1_000_000) throw new ApiError('INVALID_PARAMETER', 'priority must be a whole number from -1000000 to 1000000');
    if (!(await jobs.setPriority(job.id, priority as number))) throw new ApiError('JOB_STATE_CONFLICT', 'only a queued job can change priority');
    res.json(view(await load(job.id)));
  });

  r.post('/jobs/:id/move', async (req, res) => {
    const job = await load(req.params.id);
    await moveQueuedJob(jobs, job, knownFields(req.body, ['direction', 'places']));
    res.json(view(await load(job.id)));
  });

  r.get('/queue/:types', async (req, res) => {
    const types = [...new Set(req.params.types.split(','))];
    if (types.some((t) => t === '')) throw new ApiError('INVALID_PARAMETER', 'name job types separated by commas');
    const recentCount = intParam((req.query as Record<string, unknown>).recent, 'recent', 20, 0, 200);
    const [perType, recent, processing] = await Promise.all([
      // However long the queue: the page shows every job, in queue order. Each type's queue is
      // its own (moves and priorities are within a type): listed one type after another, in the
      // order named, as the monitor names them by precedence (a ladder yields to every waiting
      // first rendition, ladderJob.ts).
      Promise.all(types.map((type) => jobAdmin.list({ states: ['running', 'queued'], types: [type], limit: Number.MAX_SAFE_INTEGER }))),
      recentCount > 0 ? jobAdmin.list({ states: ['succeeded', 'failed', 'cancelled'], types, limit: recentCount }) : Promise.resolve([]),
      processingViewOf(deps),
    ]);
    const active = perType.flat();
    const live = liveProgress(jobs);
    res.json({
      running: active.filter((j) => j.state === 'running').map((j) => view(j, live)),
      queued: active.filter((j) => j.state === 'queued').map((j) => view(j, live)),
      recent: recent.map((j) => view(j, live)),
      titles: await deps.videoAdmin.titles([...active, ...recent].map((j) => j.videoId), types.flatMap((t) => ACTIVE_STATUSES[t] ?? [])),
      processing,
    });
  });

  r.get('/processing', async (_req, res) => {
    res.json(await processingViewOf(deps));
  });
  r.put('/processing', async (req, res) => {
    const { concurrency } = knownFields(req.body, ['concurrency']);
    if (!Number.isInteger(concurrency) || (concurrency as number) < 1 || (concurrency as number) > MAX_CONCURRENCY) {
      throw new ApiError('INVALID_PARAMETER', `concurrency must be a whole number from 1 to ${MAX_CONCURRENCY}`);
    }
    jobs.setConcurrency('transcode', concurrency as number);
    res.json(await processingViewOf(deps));
  });

  r.get('/videos/:id', async (req, res) => {
    const detail = await deps.videoAdmin.detail(req.params.id);
    if (!detail) throw new ApiError('VIDEO_NOT_FOUND');
    const live = liveProgress(jobs);
    res.json({ ...detail, jobs: detail.jobs.map((j) => view(j, live)) });
  });

  return r;
}

/**
 * The statuses of the videos whose jobs of a type are queued or running (spec section 3). A
 * ladder's video is in 1, with every playable video: its few are read one by one instead.
 */
const ACTIVE_STATUSES: Record<string, number[]> = { transcode: [5, 6], download: [2, 3] };

/** Live progress of running jobs by id. */
function liveProgress(jobs: JobQueue): Map<string, JobProgress> {
  return new Map(jobs.live().map((l) => [l.job.id, l.progress]));
}

/** `a,b` → ['a', 'b']. */
function listParam(v: unknown, name: string): string[] | undefined {
  return stringParam(v, name)?.split(',').filter((s) => s !== '');
}

/**
 * Moves a queued job as `body` asks: `top`, or `up`/`down` some places. A move of several places
 * stops at the end of its application's queue, and is refused only when it could not move at all.
 */
async function moveQueuedJob(jobs: JobQueue, job: JobRecord, body: { direction?: unknown; places?: unknown }): Promise<void> {
  const direction = body.direction;
  if (direction === 'top') {
    // Runs next, whatever its application: its priority goes above every other queued job's
    // (fairness between applications orders only jobs of equal priority; JobQueue.move).
    const moved = await jobs.move(job.id, 'top');
    if (moved === 'not-queued') throw new ApiError('JOB_STATE_CONFLICT', 'only a queued job can move');
    if (moved === 'edge') throw new ApiError('JOB_STATE_CONFLICT', 'the job already runs next');
    return;
  }
  if (direction !== 'up' && direction !== 'down') throw new ApiError('INVALID_PARAMETER', 'direction must be "up", "down" or "top"');
  const places = body.places ?? 1;
  if (!(Number.isSafeInteger(places) && (places as number) >= 1 && (places as number) <= MAX_MOVE_PLACES)) {
    throw new ApiError('INVALID_PARAMETER', `places must be a whole number from 1 to ${MAX_MOVE_PLACES}`);
  }
  for (let moved = 0; moved < (places as number); moved++) {
    const result = await jobs.move(job.id, direction);
    if (result === 'not-queued') throw new ApiError('JOB_STATE_CONFLICT', 'only a queued job can move');
    if (result === 'edge') {
      // Already at the end it was moved towards: refused only when it could not move at all.
      if (moved === 0) throw new ApiError('JOB_STATE_CONFLICT', `the job is already ${direction === 'up' ? 'first' : 'last'} in the queue`);
      break;
    }
  }
}

/** The processing settings, binaries and what runs: GET and PUT /processing, and the monitor's queue. */
async function processingViewOf(deps: AdminJobsDeps) {
  const { jobs } = deps;
  const p = deps.processing.options;
  return {
    concurrency: jobs.concurrency('transcode'),
    defaultConcurrency: defaultTranscodeConcurrency(),
    preset: p.preset,
    crf: p.crf,
    hls: p.hls,
    ladder: p.ladder,
    running: jobs.live().filter((l) => l.job.type === 'transcode').length,
    // The ladder's are set by option only (processing.ladderConcurrency); shown beside.
    ladderConcurrency: jobs.concurrency('ladder') ?? deps.processing.options.ladderConcurrency,
    ladderRunning: jobs.live().filter((l) => l.job.type === 'ladder').length,
    binaries: await deps.processing.tools.status(),
  };
}
