/**
 * What a job handler is, as a feature registers it with the queue (jobQueue.ts): its definition
 * (the work, concurrency, retries, recovery, give-up), the context an attempt runs with, and the
 * job it gets, its payload typed by the map of job types (core/jobTypes.ts).
 */
import type { JobType, PayloadOf } from '../core/jobTypes.js';
import type { RetryConfig } from '../core/retry.js';
import type { JobRecord } from '../storage/jobRecords.js';

/** Live progress of a running job. */
export interface JobProgress {
  /** 0 to 100. */
  percent: number;
  /** Estimated seconds left, if known. */
  etaSeconds?: number;
  /** Work speed for people, e.g. "2.5x" or "3.1 MB/s". */
  speed?: string;
}

export interface JobContext {
  /** Aborted on cancel and on shutdown: stop, clean up, and reject. */
  signal: AbortSignal;
  progress(p: JobProgress): void;
  /** 1 for the first attempt. */
  attempt: number;
  isLastAttempt: boolean;
  /**
   * Resolves if this attempt still holds its job; otherwise aborts `signal` and throws (a
   * LeaseLostError if another node took the job over, the cancel if it was cancelled on another
   * node). Always resolves in the embedded mode. A handler calls it before each step that writes
   * what other nodes see (stored outputs, rows): a node paused past its lease must not write them.
   */
  fence(): Promise<void>;
}

/** A job of type `T`, its payload typed by the map of job types (core/jobTypes.ts). */
export type TypedJob<T extends string> = Omit<JobRecord, 'payload'> & { payload: PayloadOf<T> };

/** How one type of job is run. */
export interface JobTypeDefinition<T extends string = string> {
  /** Does the work; rejects to fail the attempt (it is retried per `retry`). */
  handle(job: TypedJob<T>, ctx: JobContext): Promise<void>;
  /** How many jobs of this type run at once. */
  concurrency: number;
  /**
   * `workers`: a cluster's API nodes (`--role api`) never run it, because it needs ffmpeg (issue
   * 11); absent: every node that has the handler runs it. The embedded mode runs everything.
   */
  runsOn?: 'workers';
  /**
   * Types whose due queued jobs go before any job of this one starts, whatever their
   * application (the ladder yields to first renditions): a job of this type starts only while
   * none of theirs waits. On one machine and across nodes alike.
   */
  yieldsTo?: readonly string[];
  retry: RetryConfig;
  /** A job cut off by a stop or crash is about to run again from the start: remove partial outputs. */
  recover?(job: TypedJob<T>): Promise<void>;
  /** The job ended for good without success (attempts used up, or cancelled): record it on the video. */
  onGiveUp?(job: TypedJob<T>, reason: string): Promise<void>;
}

/**
 * A handler for every job type vop runs, keyed by its name (PeerTube's handler map): the features
 * hand theirs to the composition, which registers them all at once, so a type left without a
 * handler fails to compile instead of failing its first enqueue.
 */
export type JobHandlers = { [K in JobType]: JobTypeDefinition<K> };
