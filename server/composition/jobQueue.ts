/**
 * The job queue: this process runs every job (embedded), or, in cluster mode, the node takes
 * turns of a shared queue through BullMQ on the same database (jobs/turnQueue.ts). Its start
 * and stop are a part of their own: placed after the features whose catch-up queues jobs
 * before it starts, and before those whose handlers' processes must outlive its stop.
 */
import type { ServerOptions } from '../config.js';
import { JobQueue } from '../jobs/jobQueue.js';
import type { Foundation } from './foundation.js';
import type { Part, Parts } from './parts.js';

export async function openJobQueue(options: ServerOptions, { stores, events }: Foundation, parts: Parts): Promise<JobQueue> {
  // Loaded only in cluster mode: the embedded default never loads BullMQ.
  const turns = options.databaseUrl
    ? await (await import('../jobs/bullmqTurns.js')).openBullTurns({ databaseUrl: options.databaseUrl, leaseMs: options.jobLeaseMs, log: options.log })
    : undefined;
  // The queue's stop closes them too; this is for a build that fails before the queue's part is added.
  parts.add(turns && { name: 'the job turns', stop: () => turns.close() });
  // A node's role and each job type's `runsOn` decide what it takes (an API node never transcodes).
  return new JobQueue(stores.jobs, events, options.log, Date.now, turns && { turns, role: options.role });
}

/** Runs jobs from the start on: what was cut off by the last stop or crash is queued again. */
export function jobQueuePart(jobs: JobQueue): Part {
  return { name: 'the job queue', start: () => jobs.start(), stop: () => jobs.stop() };
}
