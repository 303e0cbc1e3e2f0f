/**
 * How a node starts jobs, behind one interface: the embedded scheduler claims jobs itself as
 * slots free up (embeddedScheduler.ts); in cluster mode nodes take turns of a shared queue
 * (clusterScheduler.ts). The job queue (jobQueue.ts) keeps what both share: the records, the
 * handlers, and how one attempt runs and ends.
 */
import type { JobRecord, JobState, JobStore } from '../storage/jobRecords.js';
import type { JobProgress, JobTypeDefinition } from './jobHandler.js';
import type { Turn } from './turnQueue.js';

/** A job this process is running. */
export interface RunningJob {
  job: JobRecord;
  controller: AbortController;
  progress: JobProgress;
  cancelled: boolean;
  /**
   * Settles when the attempt's bookkeeping is done, with the state it left the job in (undefined
   * if the bookkeeping itself failed, or if the lease was lost): a cancel must learn whether the
   * handler actually stopped.
   */
  promise: Promise<JobState | undefined>;
  /** Cluster mode: the job is no longer this node's (taken over, or cancelled on another node). */
  lost: boolean;
}

/** A change to a job's record (JobStore.update). */
export type JobPatch = Parameters<JobStore['update']>[1];

/** What a scheduler may use of the job queue: its records, its handlers, and the attempts it runs. */
export interface QueueCore {
  readonly store: JobStore;
  readonly defs: ReadonlyMap<string, JobTypeDefinition>;
  readonly running: ReadonlyMap<string, RunningJob>;
  readonly now: () => number;
  log(line: string): void;
  /** True once stop() began: no job may start. */
  stopping(): boolean;
  /** Starts one attempt of `job` (claimed, or taken over under `turn`). */
  run(job: JobRecord, def: JobTypeDefinition, turn?: Turn): RunningJob;
  /** Whether the job of `entry` is still this node's, as the database says; if not, the run is stopped. */
  check(entry: RunningJob): Promise<void>;
  /** The record of a job cut off: queued to run again from the start, the cut-off attempt not counted. */
  cutOff(job: JobRecord): JobPatch;
  /** Runs the type's recover for a job cut off, before it runs again; a failure is logged and told (never thrown). */
  recover(job: JobRecord): Promise<void>;
  /** Writes the job's record at the end of an attempt (fenced on `lease` when given); false if it did not. */
  endAttempt(id: string, patch: JobPatch, lease: string | undefined): Promise<boolean>;
  /** Records the end of an attempt and tells the events; false if another node holds the job now. */
  finish(job: JobRecord, patch: Pick<JobRecord, 'state' | 'error'> & { progress?: number }, lease?: string): Promise<boolean>;
  /** Runs the type's onGiveUp (failures logged). */
  giveUp(job: JobRecord, reason: string): Promise<void>;
}

/**
 * Whether a job of `def` must wait for now (JobTypeDefinition.yieldsTo): a job of a type it
 * yields to is queued and due. Both schedulers ask before they claim one.
 */
export async function mustYield(core: QueueCore, def: JobTypeDefinition): Promise<boolean> {
  if (!def.yieldsTo) return false;
  const due = await core.store.nextRunAfter([...def.yieldsTo]);
  return due !== undefined && due <= core.now();
}

/** How this node starts jobs. */
export interface JobScheduling {
  /** The lease an attempt's writes are fenced on (JobStore.update), or undefined where one process runs every job. */
  leaseOf(job: JobRecord): string | undefined;
  /** Resolves if the attempt of `entry` still holds its job; otherwise it is stopped and this rejects (JobContext.fence). */
  fence(entry: RunningJob): Promise<void>;
  /** Whether `job`, which this process does not run, runs on another node (a cancel is then written for that node to see). */
  runsElsewhere(job: JobRecord): boolean;
  /** Recovers what the last stop or crash cut off, then starts jobs. */
  start(): Promise<void>;
  /** A type's handler was registered (before start(), or after it: then it is served at once). */
  registered(type: string, def: JobTypeDefinition): void;
  /**
   * `count` jobs of `type` were queued (or queued again), due after `delayMs`: the shared queue
   * gets turns for them. The queue pokes (below) itself where a free slot may take them.
   */
  queued(type: string, count: number, delayMs?: number): Promise<void>;
  /** The queue changed (a job ended, moved, or was queued): start what may start now. */
  poke(): void;
  setConcurrency(type: string, concurrency: number): void;
  /** Whether this node runs jobs of `type` (a cluster API node runs none that needs ffmpeg). */
  runs(type: string): boolean;
  /** For /healthz. */
  describe(): { engine: string; leaseMs?: number };
  /** Stop() began: its timers stop (the running jobs are the queue's to abort). */
  halt(): void;
  /** Once the running jobs have ended: waits for a start in progress and lets go of the engine. */
  close(): Promise<void>;
  /** Resolves when no start is in progress (for idle()). */
  busy(): boolean;
}
