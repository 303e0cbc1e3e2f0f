import crypto from 'node:crypto';
import type { VopEventBus } from '../core/events.js';
import { CANCELLED_REASON, type JobType, type PayloadOf } from '../core/jobTypes.js';
import { assertRetryConfig, backoffDelay } from '../core/retry.js';
import type { JobRecord, JobState, JobStore } from '../storage/jobRecords.js';
import { ClusterScheduler, type ClusterJobs } from './clusterScheduler.js';
import { EmbeddedScheduler } from './embeddedScheduler.js';
import type { JobContext, JobHandlers, JobProgress, JobTypeDefinition } from './jobHandler.js';
import type { JobPatch, JobScheduling, QueueCore, RunningJob } from './scheduling.js';
import { LeaseLostError, type Turn } from './turnQueue.js';
import { warningLine } from '../core/logLines.js';

// What a handler is (its definition, context and typed job), for the features that register one.
export type { JobContext, JobHandlers, JobProgress, JobTypeDefinition, TypedJob } from './jobHandler.js';

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

/** How often a running job's progress is saved (it is pushed live through events regardless). */
const PROGRESS_SAVE_MS = 5_000;

/**
 * The persistent job queue (PeerTube-style): jobs live in the database, handlers are looked up
 * by type, each type has its own concurrency and retry data. A job cut off by a stop or a crash
 * is queued again on the next start and runs from the beginning, after its type's `recover`.
 *
 * Embedded, this process runs every job: it claims them itself as slots free up. In cluster mode
 * (`cluster`), nodes take turns from the shared queue instead (jobs/turnQueue.ts): each turn
 * claims one job under a lease; a node that dies or stops answering loses its lease and another
 * node takes the job over, from the start, after `recover`.
 */
export class JobQueue<Types extends string = JobType> {
  private defs = new Map<string, JobTypeDefinition>();
  private running = new Map<string, RunningJob>();
  private seq = 0;
  private seqRead: Promise<void> | undefined;
  private stopping = false;
  /** How jobs start on this node: claimed here as slots free up, or through the shared queue's turns. */
  private readonly scheduling: JobScheduling;

  /** `cluster`: the shared queue of cluster mode; absent, this process runs every job. */
  constructor(
    private readonly store: JobStore,
    private readonly events: VopEventBus,
    private readonly log: (line: string) => void,
    private readonly now: () => number = Date.now,
    cluster?: ClusterJobs,
  ) {
    const core: QueueCore = {
      store,
      defs: this.defs,
      running: this.running,
      now,
      log,
      stopping: () => this.stopping,
      run: (job, def, turn) => this.run(job, def, turn),
      check: (entry) => this.check(entry),
      cutOff: (job) => this.cutOff(job),
      recover: (job) => this.recover(job),
      endAttempt: (id, patch, lease) => this.endAttempt(id, patch, lease),
      finish: (job, patch, lease) => this.finish(job, patch, lease),
      giveUp: (job, reason) => this.giveUp(job, reason),
    };
    this.scheduling = cluster ? new ClusterScheduler(core, cluster) : new EmbeddedScheduler(core);
  }

  /** Registers a handler for every job type vop runs, in the order given (the server's composition). */
  registerAll(this: JobQueue<JobType>, handlers: JobHandlers): void {
    for (const type of Object.keys(handlers) as Array<keyof JobHandlers>) this.register(type, handlers[type]);
  }

  /**
   * Registers the handler of `type`; jobs of a type with no handler here are not run by this node.
   * The server registers through registerAll. `Types` is vop's job types, so a name that is not
   * one fails to compile here and in enqueue; the queue's own tests make a `JobQueue<string>`.
   */
  register<T extends Types>(type: T, typed: JobTypeDefinition<T>): void {
    // The store gives back what enqueue wrote for this type: the payload has its type's shape.
    const def = typed as unknown as JobTypeDefinition;
    if (!Number.isInteger(def.concurrency) || def.concurrency < 1) throw new Error(`Job type ${type}: concurrency must be at least 1.`);
    assertRetryConfig(`Job type ${type} retry`, def.retry);
    this.defs.set(type, def);
    this.scheduling.registered(type, def);
  }

  /**
   * For /healthz: how jobs start (in cluster mode, the shared queue and its lease), the types this
   * node runs, and the jobs it holds now (`holds`), each with the lease its attempt is fenced on
   * ('' embedded). A job leaves `holds` once its attempt has wound down and written its end (or,
   * its lease lost or the job cancelled elsewhere, written nothing more): what an operator asks of
   * a node (which video it is busy with, whether it still runs a job another node took over), and
   * what the cluster tests wait on instead of the log.
   */
  describe(): { engine: string; leaseMs?: number; runs: string[]; holds: Array<{ id: string; type: string; videoId: string; lease: string }> } {
    const runs = [...this.defs.keys()].filter((t) => this.scheduling.runs(t));
    const holds = [...this.running.values()].map(({ job }) => ({ id: job.id, type: job.type, videoId: job.videoId, lease: job.lease ?? '' }));
    return { ...this.scheduling.describe(), runs, holds };
  }

  /** Re-queues jobs cut off by the last stop or crash, then starts running jobs. */
  async start(): Promise<void> {
    await this.numbering();
    await this.scheduling.start();
  }

  /**
   * The numbers new jobs follow, read once: before the first enqueue or the start, whichever
   * comes first, so that jobs a feature queues while the server starts (its catch-up) come after
   * those already stored. PostgreSQL numbers jobs itself (its sequence), whatever is passed;
   * sql.js takes ours.
   */
  private numbering(): Promise<void> {
    return (this.seqRead ??= this.store.maxSeq().then((max) => {
      this.seq = Math.max(this.seq, max);
    }));
  }

  async enqueue<T extends Types>(type: T, payload: PayloadOf<T>, opts: EnqueueOptions = {}): Promise<JobRecord> {
    const [job] = await this.enqueueMany(type, [{ payload, opts }]);
    return job!;
  }

  /** Enqueues many jobs of one type in one store write (start-up catch-up queues thousands). */
  async enqueueMany<T extends Types>(type: T, items: Array<{ payload: PayloadOf<T>; opts?: EnqueueOptions }>): Promise<JobRecord[]> {
    const def = this.defs.get(type);
    if (!def) throw new Error(`No handler for job type ${type}.`);
    await this.numbering();
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
    await this.scheduling.queued(type, jobs.length);
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
      live.controller.abort(new Error(CANCELLED_REASON));
      return (await live.promise) === 'cancelled';
    }
    const job = await this.store.get(id);
    if (!job) return false;
    // Running on another node (cluster mode): it is cancelled here, and that node, which checks
    // its jobs every few seconds (watch), stops it without writing anything more.
    const remote = this.scheduling.runsElsewhere(job);
    const cancelled = remote
      ? await this.store.update(id, { state: 'cancelled', error: CANCELLED_REASON, finishedAt: this.now(), updatedAt: this.now(), lease: '' }, ['running'], job.lease ?? '')
      : await this.store.update(id, { state: 'cancelled', finishedAt: this.now(), updatedAt: this.now() }, ['queued']);
    if (!cancelled) return false;
    await this.giveUp(job, CANCELLED_REASON);
    this.emitState({ ...job, state: 'cancelled' });
    return true;
  }

  /**
   * Finishes the give-up of a job recorded as failed or cancelled whose video may not have heard
   * of it (a crash between the two writes; see videos/unsettledJobs.ts): its type's onGiveUp
   * runs again with the reason the job's record keeps. onGiveUp moves the video only from the
   * states it would leave, so running it twice changes nothing.
   */
  async settle(job: JobRecord): Promise<void> {
    if (job.state !== 'failed' && job.state !== 'cancelled') return;
    await this.giveUp(job, job.state === 'cancelled' ? CANCELLED_REASON : job.error);
  }

  /** Queues a failed or cancelled job again, with its attempts reset; true if it was. */
  async retry(id: string): Promise<boolean> {
    const ok = await this.store.update(id, { state: 'queued', attempts: 0, error: '', progress: 0, runAfter: 0, finishedAt: null, updatedAt: this.now() }, ['failed', 'cancelled']);
    if (ok) {
      const job = await this.store.get(id);
      if (job) this.emitState(job);
      if (job) await this.scheduling.queued(job.type, 1);
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
    this.scheduling.setConcurrency(type, concurrency);
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
    this.scheduling.halt();
    for (const r of this.running.values()) r.controller.abort(new Error('shutting down'));
    await Promise.allSettled([...this.running.values()].map((r) => r.promise));
    await this.scheduling.close();
  }

  /**
   * Resolves when no job is running or queued, retries waiting for their backoff included (for
   * tests and benchmarks; with `types`, only those types count).
   */
  async idle(types?: string[], pollMs = 25): Promise<void> {
    for (;;) {
      const busy =
        this.scheduling.busy() ||
        [...this.running.values()].some((r) => !types || types.includes(r.job.type)) ||
        (await this.store.list({ states: ['queued', 'running'], types, limit: 1 })).length > 0;
      if (!busy) return;
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  /** Something changed that may let a job start (a slot, the order, a new job). */
  private pump(): void {
    this.scheduling.poke();
  }

  private run(job: JobRecord, def: JobTypeDefinition, turn?: Turn): RunningJob {
    const controller = new AbortController();
    const entry: RunningJob = { job, controller, progress: { percent: 0 }, cancelled: false, lost: false, promise: Promise.resolve(undefined) };
    this.running.set(job.id, entry);
    this.emitState(job);
    // In cluster mode every write of the attempt is fenced on its lease (JobStore.update).
    const lease = this.scheduling.leaseOf(job);
    // The turn's lock could not be renewed: whether the job is still this node's is the database's
    // answer (a slow renewal under load is no reason to throw away an hour of transcoding).
    const onTurnLost = () => void this.check(entry).catch(() => undefined);
    turn?.signal.addEventListener('abort', onTurnLost, { once: true });
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
          void this.store.update(job.id, { progress: p.percent, updatedAt: lastSave }, ['running'], lease).catch(() => undefined);
        }
      },
      fence: async () => {
        await this.scheduling.fence(entry);
        controller.signal.throwIfAborted();
      },
    };
    entry.promise = (async (): Promise<JobState | undefined> => {
      try {
        await def.handle(job, ctx);
        if (entry.lost) return undefined;
        await this.finish(job, { state: 'succeeded', progress: 100, error: '' }, lease);
        return 'succeeded';
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        if (entry.lost) {
          // Another node runs it now, or cancelled it and did the bookkeeping: nothing to write.
          this.log(`Job ${job.id} (${job.type}): its attempt stopped, having written nothing more.`);
          return entry.cancelled ? 'cancelled' : undefined;
        } else if (entry.cancelled) {
          if (await this.finish(job, { state: 'cancelled', error: CANCELLED_REASON }, lease)) await this.giveUp(job, CANCELLED_REASON);
          return 'cancelled';
        } else if (this.stopping) {
          // Cut off by shutdown: it runs again from the start next time, like after a crash.
          await this.recover(job);
          if (await this.endAttempt(job.id, this.cutOff(job), lease)) {
            await this.scheduling.queued(job.type, 1);
          }
          return 'queued';
        } else if (job.attempts < job.maxAttempts && !(err instanceof PermanentJobError)) {
          const delay = backoffDelay(def.retry, job.attempts);
          if (await this.endAttempt(job.id, { state: 'queued', error: reason, runAfter: this.now() + delay, updatedAt: this.now() }, lease)) {
            this.emitState({ ...job, state: 'queued', error: reason });
            await this.scheduling.queued(job.type, 1, delay);
          }
          return 'queued';
        } else {
          // The job's record first, then the video's (onGiveUp): whoever sees the 7 sees a
          // finished job. Fenced in cluster mode, so only the job's holder gives up.
          if (await this.finish(job, { state: 'failed', error: reason }, lease)) await this.giveUp(job, reason);
          return 'failed';
        }
      } finally {
        turn?.signal.removeEventListener('abort', onTurnLost);
        this.running.delete(job.id);
        this.pump();
      }
    })().catch((err) => {
      this.log(warningLine(`Job ${job.id} (${job.type}) bookkeeping failed: ${String(err)}`));
      return undefined;
    });
    return entry;
  }

  /**
   * Cluster mode: whether the job of `entry` is still this node's, as the database says; if not,
   * the run is stopped (lose).
   */
  private async check(entry: RunningJob): Promise<void> {
    const row = await this.store.get(entry.job.id);
    if (row && row.state === 'running' && row.lease === entry.job.lease) return;
    if (row?.state === 'cancelled') entry.cancelled = true;
    this.lose(entry, row?.state === 'cancelled' ? new Error(CANCELLED_REASON) : new LeaseLostError());
  }

  private lose(entry: RunningJob, reason: Error): void {
    if (entry.lost) return;
    entry.lost = true;
    // Said when it is found, not when the attempt has wound down: a node woken past its lease may
    // take a while to stop what it was doing (a copy from the bucket, an ffmpeg being killed).
    const { job } = entry;
    this.log(`Job ${job.id} (${job.type}): ${entry.cancelled ? 'cancelled on another node' : reason.message}; stopping its attempt.`);
    entry.controller.abort(reason);
  }

  /**
   * Writes the job's record at the end of an attempt. In cluster mode (`lease` given) only while
   * the job is still running under that lease, letting go of it; embedded, as it stands. False if
   * it did not write (another node holds the job now).
   */
  private endAttempt(id: string, patch: JobPatch, lease: string | undefined): Promise<boolean> {
    return lease === undefined ? this.store.update(id, patch) : this.store.update(id, { ...patch, lease: '' }, ['running'], lease);
  }

  /** The record of a job cut off (a stop, a crash, a node gone): queued to run again from the start, the cut-off attempt not counted. */
  private cutOff(job: JobRecord): JobPatch {
    return { state: 'queued', attempts: Math.max(0, job.attempts - 1), progress: 0, updatedAt: this.now() };
  }

  /**
   * A job cut off (a stop, a crash, a node gone): its type's recover removes what the attempt left,
   * before the job runs again. A failure is logged, and both outcomes told ('job.recovered'): the
   * job runs again regardless, and what was left may remain.
   */
  private async recover(job: JobRecord): Promise<void> {
    const def = this.defs.get(job.type);
    if (!def?.recover) return;
    try {
      await def.recover(job);
    } catch (err) {
      this.log(warningLine(`Recovering job ${job.id} (${job.type}) failed: ${String(err)}`));
      this.events.emit('job.recovered', { jobId: job.id, type: job.type, videoId: job.videoId, outcome: 'failed', error: String(err) });
      return;
    }
    this.events.emit('job.recovered', { jobId: job.id, type: job.type, videoId: job.videoId, outcome: 'recovered', error: '' });
  }

  /** Records the end of an attempt (fenced on `lease` in cluster mode); false if another node holds the job now. */
  private async finish(job: JobRecord, patch: Pick<JobRecord, 'state' | 'error'> & { progress?: number }, lease?: string): Promise<boolean> {
    const now = this.now();
    const wrote = await this.endAttempt(job.id, { ...patch, finishedAt: now, updatedAt: now }, lease);
    if (wrote) this.emitState({ ...job, ...patch, finishedAt: now, updatedAt: now });
    return wrote;
  }

  private async giveUp(job: JobRecord, reason: string): Promise<void> {
    try {
      await this.defs.get(job.type)?.onGiveUp?.(job, reason);
    } catch (err) {
      this.log(warningLine(`Job ${job.id} (${job.type}): recording the failure failed: ${String(err)}`));
    }
  }

  private emitState(job: JobRecord): void {
    this.events.emit('job.state', { jobId: job.id, type: job.type, videoId: job.videoId, state: job.state, error: job.error });
  }
}
