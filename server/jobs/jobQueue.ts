import crypto from 'node:crypto';
import type { VopEventBus } from '../events.js';
import { assertRetryConfig, backoffDelay, type RetryConfig } from './retry.js';
import type { JobRecord, JobState, JobStore } from './types.js';

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
}

/** How one type of job is run. */
export interface JobTypeDefinition {
  /** Does the work; rejects to fail the attempt (it is retried per `retry`). */
  handle(job: JobRecord, ctx: JobContext): Promise<void>;
  /** How many jobs of this type run at once. */
  concurrency: number;
  retry: RetryConfig;
  /** A job cut off by a stop or crash is about to run again from the start: remove partial outputs. */
  recover?(job: JobRecord): Promise<void>;
  /** The job ended for good without success (attempts used up, or cancelled): record it on the video. */
  onGiveUp?(job: JobRecord, reason: string): Promise<void>;
}

export interface EnqueueOptions {
  videoId?: string;
  /** The application the job is for; absent: the store takes the video's (JobRecord.appId). */
  appId?: string;
  priority?: number;
  runAfter?: number;
}

/**
 * Thrown by a handler when retrying cannot help (a 404, a refused address, a file over the
 * limit): the job gives up at once instead of using up its retries.
 */
export class PermanentJobError extends Error {
  override name = 'PermanentJobError';
}

/** A job this process is running. */
interface RunningJob {
  job: JobRecord;
  controller: AbortController;
  progress: JobProgress;
  cancelled: boolean;
  /**
   * Settles when the attempt's bookkeeping is done, with the state it left the job in (undefined
   * if the bookkeeping itself failed): a cancel must learn whether the handler actually stopped.
   */
  promise: Promise<JobState | undefined>;
}

/** How often a running job's progress is saved (it is pushed live through events regardless). */
const PROGRESS_SAVE_MS = 5_000;

/**
 * The persistent job queue (PeerTube-style): jobs live in the database, handlers are looked up
 * by type, each type has its own concurrency and retry data. A job cut off by a stop or a crash
 * is queued again on the next start and runs from the beginning, after its type's `recover`.
 */
export class JobQueue {
  private defs = new Map<string, JobTypeDefinition>();
  private running = new Map<string, RunningJob>();
  private seq = 0;
  private started = false;
  private stopping = false;
  private pumping: Promise<void> | undefined;
  private pumpAgain = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: JobStore,
    private readonly events: VopEventBus,
    private readonly log: (line: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  register(type: string, def: JobTypeDefinition): void {
    if (!Number.isInteger(def.concurrency) || def.concurrency < 1) throw new Error(`Job type ${type}: concurrency must be at least 1.`);
    assertRetryConfig(`Job type ${type} retry`, def.retry);
    this.defs.set(type, def);
    if (this.started) this.pump();
  }

  /** Re-queues jobs cut off by the last stop or crash, then starts running jobs. */
  async start(): Promise<void> {
    this.seq = await this.store.maxSeq();
    for (const job of await this.store.list({ states: ['running'], limit: 100_000 })) {
      try {
        await this.defs.get(job.type)?.recover?.(job);
      } catch (err) {
        this.log(`Recovering job ${job.id} (${job.type}) failed: ${String(err)}`);
      }
      // The cut-off attempt does not count against the job's retries.
      await this.store.update(job.id, { state: 'queued', attempts: Math.max(0, job.attempts - 1), progress: 0, updatedAt: this.now() }, ['running']);
    }
    this.started = true;
    this.pump();
  }

  async enqueue(type: string, payload: Record<string, unknown>, opts: EnqueueOptions = {}): Promise<JobRecord> {
    const [job] = await this.enqueueMany(type, [{ payload, opts }]);
    return job!;
  }

  /** Enqueues many jobs of one type in one store write (start-up catch-up queues thousands). */
  async enqueueMany(type: string, items: Array<{ payload: Record<string, unknown>; opts?: EnqueueOptions }>): Promise<JobRecord[]> {
    const def = this.defs.get(type);
    if (!def) throw new Error(`No handler for job type ${type}.`);
    const now = this.now();
    const jobs = items.map(({ payload, opts = {} }): JobRecord => ({
      id: crypto.randomUUID(),
      type,
      videoId: opts.videoId ?? '',
      appId: opts.appId ?? '',
      payload,
      state: 'queued',
      priority: opts.priority ?? 0,
      seq: ++this.seq,
      attempts: 0,
      maxAttempts: def.retry.maxRetries + 1,
      runAfter: opts.runAfter ?? 0,
      progress: 0,
      error: '',
      createdAt: now,
      startedAt: null,
      finishedAt: null,
      updatedAt: now,
    }));
    if (jobs.length === 0) return [];
    await this.store.insertMany(jobs);
    for (const job of jobs) this.emitState(job);
    this.pump();
    return jobs;
  }

  /**
   * Cancels a queued or running job; true if it ended cancelled. A running job's handler may
   * finish (or fail) regardless of the abort: then the job keeps that state and this is false.
   */
  async cancel(id: string): Promise<boolean> {
    const live = this.running.get(id);
    if (live) {
      live.cancelled = true;
      live.controller.abort(new Error('cancelled'));
      return (await live.promise) === 'cancelled';
    }
    const job = await this.store.get(id);
    if (!job || !(await this.store.update(id, { state: 'cancelled', finishedAt: this.now(), updatedAt: this.now() }, ['queued']))) return false;
    await this.giveUp(job, 'cancelled');
    this.emitState({ ...job, state: 'cancelled' });
    return true;
  }

  /** Queues a failed or cancelled job again, with its attempts reset; true if it was. */
  async retry(id: string): Promise<boolean> {
    const ok = await this.store.update(id, { state: 'queued', attempts: 0, error: '', progress: 0, runAfter: 0, finishedAt: null, updatedAt: this.now() }, ['failed', 'cancelled']);
    if (ok) {
      const job = await this.store.get(id);
      if (job) this.emitState(job);
      this.pump();
    }
    return ok;
  }

  /** Changes a queued job's priority (higher runs first); true if it was queued. */
  async setPriority(id: string, priority: number): Promise<boolean> {
    const ok = await this.store.update(id, { priority, updatedAt: this.now() }, ['queued']);
    if (ok) this.pump();
    return ok;
  }

  /**
   * Moves a queued job in its type's queue. Resolves 'moved', 'edge' if it cannot go that way
   * (already first or last), or 'not-queued'.
   *
   * The queue shares its slots fairly between applications (JobStore.claimNext), so the order an
   * admin sets is the order of one application's jobs, and priority above it:
   *
   * - 'up' / 'down': one place among the jobs of the same application, which run by priority
   *   (higher first) then seq: the job and that neighbour swap their priority and seq, so exactly
   *   these two change places, in that application's order and so in the whole queue's (each
   *   takes the other's turn), and every other job keeps its own.
   * - 'top': runs next, whatever its application: the job's priority goes one above the highest
   *   of any other queued job of its type (fairness orders only jobs of equal priority). 'edge' if
   *   it is already alone at the top.
   *
   * Two writes for up and down, each fenced on the job still being queued: if the neighbour is
   * claimed between them, the moved job has taken its place, which is where it was going anyway.
   */
  async move(id: string, direction: 'up' | 'down' | 'top'): Promise<'moved' | 'edge' | 'not-queued'> {
    const job = await this.store.get(id);
    if (!job || job.state !== 'queued') return 'not-queued';
    const now = this.now();
    if (direction === 'top') {
      const [highest] = (await this.store.list({ states: ['queued'], types: [job.type], limit: 2 })).filter((j) => j.id !== id);
      if (!highest || highest.priority < job.priority) return 'edge';
      if (!(await this.store.update(job.id, { priority: highest.priority + 1, updatedAt: now }, ['queued']))) return 'not-queued';
      this.pump();
      return 'moved';
    }
    const queue = await this.store.list({ states: ['queued'], types: [job.type], appId: job.appId, limit: 1_000_000 });
    // The application's own order: priority, then seq (its turns follow from it).
    queue.sort((a, b) => b.priority - a.priority || a.seq - b.seq);
    const at = queue.findIndex((j) => j.id === id);
    if (at < 0) return 'not-queued';
    const other = queue[direction === 'up' ? at - 1 : at + 1];
    if (!other) return 'edge';
    if (!(await this.store.update(job.id, { priority: other.priority, seq: other.seq, updatedAt: now }, ['queued']))) return 'not-queued';
    await this.store.update(other.id, { priority: job.priority, seq: job.seq, updatedAt: now }, ['queued']);
    this.pump();
    return 'moved';
  }

  /** Changes how many jobs of `type` run at once; takes effect as slots free up. */
  setConcurrency(type: string, concurrency: number): void {
    const def = this.defs.get(type);
    if (!def) throw new Error(`No handler for job type ${type}.`);
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('concurrency must be at least 1.');
    def.concurrency = concurrency;
    this.pump();
  }

  concurrency(type: string): number | undefined {
    return this.defs.get(type)?.concurrency;
  }

  /** Live progress of running jobs. */
  live(): Array<{ job: JobRecord; progress: JobProgress }> {
    return [...this.running.values()].map((r) => ({ job: r.job, progress: r.progress }));
  }

  /** Stops taking jobs, aborts running ones (they are queued again for the next start) and waits. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    for (const r of this.running.values()) r.controller.abort(new Error('shutting down'));
    await Promise.allSettled([...this.running.values()].map((r) => r.promise));
    await this.pumping;
  }

  /**
   * Resolves when no job is running or queued, retries waiting for their backoff included (for
   * tests and benchmarks; with `types`, only those types count).
   */
  async idle(types?: string[], pollMs = 25): Promise<void> {
    for (;;) {
      const busy =
        this.pumping !== undefined ||
        [...this.running.values()].some((r) => !types || types.includes(r.job.type)) ||
        (await this.store.list({ states: ['queued', 'running'], types, limit: 1 })).length > 0;
      if (!busy) return;
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  private pump(): void {
    if (!this.started || this.stopping) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = this.fill()
      .catch((err) => this.log(`Job queue: ${String(err)}`))
      .finally(() => {
        this.pumping = undefined;
        if (this.pumpAgain) {
          this.pumpAgain = false;
          this.pump();
        }
      });
  }

  private async fill(): Promise<void> {
    for (const [type, def] of this.defs) {
      while (!this.stopping && this.countRunning(type) < def.concurrency) {
        const job = await this.store.claimNext([type], this.now());
        if (!job) break;
        if (this.stopping) {
          // stop() began while this claim was being written and will not wait for a job started
          // now (the storage closes under it): put it back untouched for the next start.
          await this.store.update(job.id, { state: 'queued', attempts: Math.max(0, job.attempts - 1), updatedAt: this.now() }, ['running']);
          break;
        }
        this.run(job, def);
      }
    }
    clearTimeout(this.timer);
    const next = await this.store.nextRunAfter([...this.defs.keys()]);
    if (next !== undefined && !this.stopping) {
      this.timer = setTimeout(() => this.pump(), Math.max(10, next - this.now()));
      this.timer.unref();
    }
  }

  private countRunning(type: string): number {
    let n = 0;
    for (const r of this.running.values()) if (r.job.type === type) n++;
    return n;
  }

  private run(job: JobRecord, def: JobTypeDefinition): void {
    const controller = new AbortController();
    const entry: RunningJob = { job, controller, progress: { percent: 0 }, cancelled: false, promise: Promise.resolve(undefined) };
    this.running.set(job.id, entry);
    this.emitState(job);
    let lastSave = this.now();
    const ctx: JobContext = {
      signal: controller.signal,
      attempt: job.attempts,
      isLastAttempt: job.attempts >= job.maxAttempts,
      progress: (p) => {
        entry.progress = p;
        this.events.emit('job.progress', { jobId: job.id, type: job.type, videoId: job.videoId, ...p });
        if (this.now() - lastSave >= PROGRESS_SAVE_MS) {
          lastSave = this.now();
          void this.store.update(job.id, { progress: p.percent, updatedAt: lastSave }, ['running']).catch(() => undefined);
        }
      },
    };
    entry.promise = (async (): Promise<JobState> => {
      try {
        await def.handle(job, ctx);
        await this.finish(job, { state: 'succeeded', progress: 100, error: '' });
        return 'succeeded';
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        if (entry.cancelled) {
          await this.finish(job, { state: 'cancelled', error: 'cancelled' });
          await this.giveUp(job, 'cancelled');
          return 'cancelled';
        } else if (this.stopping) {
          // Cut off by shutdown: it runs again from the start next time, like after a crash.
          await def.recover?.(job).catch(() => undefined);
          await this.store.update(job.id, { state: 'queued', attempts: Math.max(0, job.attempts - 1), progress: 0, updatedAt: this.now() });
          return 'queued';
        } else if (job.attempts < job.maxAttempts && !(err instanceof PermanentJobError)) {
          const runAfter = this.now() + backoffDelay(def.retry, job.attempts);
          await this.store.update(job.id, { state: 'queued', error: reason, runAfter, updatedAt: this.now() });
          this.emitState({ ...job, state: 'queued', error: reason });
          return 'queued';
        } else {
          await this.finish(job, { state: 'failed', error: reason });
          await this.giveUp(job, reason);
          return 'failed';
        }
      } finally {
        this.running.delete(job.id);
        this.pump();
      }
    })().catch((err) => {
      this.log(`Job ${job.id} (${job.type}) bookkeeping failed: ${String(err)}`);
      return undefined;
    });
  }

  private async finish(job: JobRecord, patch: Pick<JobRecord, 'state' | 'error'> & { progress?: number }): Promise<void> {
    const now = this.now();
    await this.store.update(job.id, { ...patch, finishedAt: now, updatedAt: now });
    this.emitState({ ...job, ...patch, finishedAt: now, updatedAt: now });
  }

  private async giveUp(job: JobRecord, reason: string): Promise<void> {
    try {
      await this.defs.get(job.type)?.onGiveUp?.(job, reason);
    } catch (err) {
      this.log(`Job ${job.id} (${job.type}): recording the failure failed: ${String(err)}`);
    }
  }

  private emitState(job: JobRecord): void {
    this.events.emit('job.state', { jobId: job.id, type: job.type, videoId: job.videoId, state: job.state, error: job.error });
  }
}
