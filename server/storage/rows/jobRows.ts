/**
 * The `jobs` table's rows and their record (storage/jobRecords.ts): one map for both engines
 * (sqljs/sqljsJobStore.ts, postgres/postgresJobStore.ts), so a column added to one cannot be
 * forgotten in the other's reading.
 */
import type { JobRecord, JobState } from '../jobRecords.js';

export type JobRow = {
  id: string;
  type: string;
  video_id: string;
  app_id: string;
  /** JSON text. */
  payload: string;
  state: JobState;
  priority: number;
  seq: number;
  attempts: number;
  max_attempts: number;
  run_after: number;
  progress: number;
  error: string;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  updated_at: number;
  lease: string;
};

/** The column of each field a patch may change (JobStore.update). */
export const JOB_COLUMNS: Record<string, string> = {
  videoId: 'video_id',
  appId: 'app_id',
  payload: 'payload',
  state: 'state',
  priority: 'priority',
  seq: 'seq',
  attempts: 'attempts',
  maxAttempts: 'max_attempts',
  runAfter: 'run_after',
  progress: 'progress',
  error: 'error',
  startedAt: 'started_at',
  finishedAt: 'finished_at',
  updatedAt: 'updated_at',
  lease: 'lease',
};

export function toJob(r: JobRow): JobRecord {
  return {
    id: r.id,
    type: r.type,
    videoId: r.video_id,
    appId: r.app_id,
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    state: r.state,
    priority: r.priority,
    seq: r.seq,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    runAfter: r.run_after,
    progress: r.progress,
    error: r.error,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    updatedAt: r.updated_at,
    // Rows written before the column existed read back without it in sql.js.
    lease: r.lease ?? '',
  };
}
