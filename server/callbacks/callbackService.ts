import crypto from 'node:crypto';
import { ApiError } from '../core/errors.js';
import type { VopEventBus } from '../core/events.js';
import type { JobPayloads } from '../core/jobTypes.js';
import type { JobHandlers, JobQueue, TypedJob } from '../jobs/jobQueue.js';
import { backoffDelay, NO_RETRY } from '../core/retry.js';
import type { JobStore } from '../storage/jobRecords.js';
import { VideoStatus } from '../core/videoStatus.js';
import type { AppRecord, AppStore } from '../storage/types.js';
import { failureWords } from './attemptFailure.js';
import { sendCallback, type AttemptOutcome } from './callbackHttp.js';
import { buildCallbackRequest, TEST_VIDEO_ID } from './callbackRequest.js';
import type { CallbackOptions } from './options.js';
import { toDeliveryViews, type DeliveryView } from './deliveryView.js';
import { CALLBACK_STATUSES } from '../storage/outbox.js';
import type { AttemptRecord, CallbackStore, DeliveryPatch, DeliveryRecord, MissingDelivery } from '../storage/callbackRecords.js';
import { warningLine } from '../core/logLines.js';

export { CALLBACK_STATUSES };

/**
 * Start-up catch-up: rows per store write (one transaction, one fsync each), and videos looked
 * through per read between two turns of the event loop (a few milliseconds of SQL each).
 */
const CATCH_UP = { rowsPerWrite: 1_000, videosPerSlice: 2_000 };

/**
 * The outbox's sweep. `unqueuedGraceMs`: a delivery left without a job for longer than this is
 * queued by whichever node sweeps (a shorter wait would race the node that wrote it, which is
 * queueing it itself). `heldGraceMs`: a held attempt overdue by more than this has its job
 * looked at; one that ended without making it is freed. `batch`: rows per read.
 */
const SWEEP = { unqueuedGraceMs: 1_000, heldGraceMs: 60_000, heldBatch: 50, batch: 1_000 };

/** Who holds a test delivery's only attempt: the admin's request, not a job (sendTest). */
const TEST_HOLDER = 'test-request';

export interface CallbackServiceDeps {
  store: CallbackStore;
  apps: AppStore;
  jobs: JobQueue;
  /** Read-only use: whether the job holding a delivery's next attempt is still live. */
  jobStore: JobStore;
  events: VopEventBus;
  options: CallbackOptions;
  log: (line: string) => void;
  now?: () => number;
}

/**
 * The status callback of spec section 6, sent from an outbox (storage/outbox.ts): a video's move
 * to an end state writes its delivery row in the same transaction as the status, on whichever node
 * made it, so no crash can leave a change without its delivery or give it two. This service only
 * sends what is there. Each attempt is one job; a job makes its attempt only if it holds it
 * (DeliveryRecord.attemptJob, one conditional write), so two nodes queueing the same attempt send
 * it once; a job killed after sending and before recording runs again under the same id (another
 * node takes it over), and its retry carries the same `webhook-id`. A failed attempt queues the
 * next after the backoff, for as long as the retry window lasts. Every node sweeps the outbox
 * every `sweepMs` for pending deliveries whose next attempt no job holds: what a node that stopped
 * between a change (or an attempt) and queueing the next attempt left behind. The application's
 * address and secret are read at each attempt.
 */
export class CallbackService {
  private readonly store: CallbackStore;
  private readonly now: () => number;
  /** Held attempts whose job had ended at start-up (see {@link reconcile}). */
  private deadClaims: DeliveryRecord[] = [];
  private catchingUp: Promise<{ created: number; requeued: number }> | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private stopping = false;
  /** The callback job's handler (registered by the composition, JobQueue.registerAll). */
  readonly jobs: Pick<JobHandlers, 'callback'>;

  constructor(private readonly deps: CallbackServiceDeps) {
    this.store = deps.store;
    this.now = deps.now ?? Date.now;
    this.jobs = {
      callback: {
        concurrency: deps.options.concurrency,
        // A failed attempt queues the next one itself (see attempt): the job is never retried.
        retry: NO_RETRY,
        handle: (job, ctx) => this.attemptJob(job, ctx.signal),
        onGiveUp: (job, reason) => this.jobGaveUp(job, reason),
      },
    };
    // The delivery row is there already (written with the status); this queues its first attempt
    // at once on the node that made the change. Should this node stop first, a sweep queues it.
    deps.events.on('video.status', (e) => {
      if (e.from === e.to || !CALLBACK_STATUSES.includes(e.to)) return;
      this.store
        .listUnqueued({ limit: 10, videoId: e.videoId })
        .then((ds) => this.queue(ds))
        .catch((err) => deps.log(warningLine(`Status callback for video ${e.videoId} (status ${e.to}) could not be queued: ${String(err)}`)));
    });
  }

  /**
   * Start-up, step 1: finds the pending deliveries whose next attempt is held by a job that is no
   * longer queued or running (it ended without making the attempt, or is gone). Call it before
   * the job queue starts, so that the jobs a crash cut off still count as running. Reads only;
   * the writes wait for {@link startCatchUp}.
   */
  async reconcile(): Promise<void> {
    const live = new Set<string>();
    for (const job of await this.deps.jobStore.list({ types: ['callback'], states: ['queued', 'running'], limit: 1_000_000 })) live.add(job.id);
    const held = await this.store.listHeld({ limit: 1_000_000, dueBefore: Number.MAX_SAFE_INTEGER });
    this.deadClaims = held.filter((d) => d.attemptJob !== TEST_HOLDER && !live.has(d.attemptJob));
  }

  /**
   * Start-up, step 2, once the job queue runs, in the background (the server answers meanwhile):
   * frees the attempts step 1 found, gives a delivery to every end-state change that has none
   * (stored by a version before the outbox, or written into the database by other means), queues
   * what is pending, and starts the sweep. A library from before callbacks existed has none at all:
   * one fsynced write per delivery, before listening, took 253 s for 100,000 videos. So the library
   * is read a slice at a time, yielding between slices, and rows are written
   * {@link CATCH_UP}.rowsPerWrite per transaction. Another node catching up at once is harmless:
   * the store keeps one delivery per change, and one job per attempt sends.
   */
  startCatchUp(): Promise<{ created: number; requeued: number }> {
    this.catchingUp ??= this.catchUp()
      .catch((err) => {
        this.deps.log(warningLine(`Status callbacks: catching up at start-up failed (the next start tries again): ${String(err)}`));
        return { created: 0, requeued: 0 };
      })
      .finally(() => this.startSweeping());
    return this.catchingUp;
  }

  /** Stops the sweep and the start-up catch-up at its next write and waits for them; the next start finds the rest. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.sweepTimer);
    await this.catchingUp;
    await this.sweeping;
  }

  /**
   * One sweep of the outbox (every `sweepMs` on every node; tests may call it): frees held attempts
   * whose job ended without making them, then queues the pending deliveries no job holds.
   * Resolves with how many attempts it queued.
   */
  async sweep(): Promise<number> {
    const now = this.now();
    for (const d of await this.store.listHeld({ limit: SWEEP.heldBatch, dueBefore: now - SWEEP.heldGraceMs })) {
      if (this.stopping) return 0;
      if (d.attemptJob === TEST_HOLDER) continue;
      const job = await this.deps.jobStore.get(d.attemptJob);
      if (!job || (job.state !== 'queued' && job.state !== 'running')) await this.store.releaseAttempt(d.id, d.attemptJob);
    }
    let queued = 0;
    for (let round = 0; round < 100 && !this.stopping; round++) {
      const ds = await this.store.listUnqueued({ limit: SWEEP.batch, updatedBefore: now - SWEEP.unqueuedGraceMs });
      queued += await this.queue(ds);
      if (ds.length < SWEEP.batch) break;
    }
    return queued;
  }

  private startSweeping(): void {
    if (this.stopping || this.sweepTimer) return;
    this.sweepTimer = setInterval(() => {
      if (this.sweeping || this.stopping) return;
      this.sweeping = this.sweep()
        .then(() => undefined)
        .catch((err) => this.deps.log(warningLine(`Status callbacks: sweeping the outbox failed (the next sweep tries again): ${String(err)}`)))
        .finally(() => (this.sweeping = undefined));
    }, this.deps.options.sweepMs);
    this.sweepTimer.unref();
  }

  private async catchUp(): Promise<{ created: number; requeued: number }> {
    const dead = this.deadClaims;
    this.deadClaims = [];
    let requeued = 0;
    for (const d of dead) {
      if (this.stopping) return { created: 0, requeued };
      if (await this.store.releaseAttempt(d.id, d.attemptJob)) requeued++;
    }
    const missing: MissingDelivery[] = [];
    let after: string | undefined;
    do {
      if (this.stopping) return { created: 0, requeued };
      const slice = await this.store.missingStatusDeliveries([...CALLBACK_STATUSES], { afterVideoId: after, videos: CATCH_UP.videosPerSlice });
      missing.push(...slice.missing);
      after = slice.next;
      await new Promise((resolve) => setImmediate(resolve));
    } while (after !== undefined);
    // In the order the changes happened, as their deliveries then list.
    missing.sort((a, b) => a.statusAt - b.statusAt);
    let created = 0;
    for (let i = 0; i < missing.length && !this.stopping; i += CATCH_UP.rowsPerWrite) {
      created += await this.createStatusDeliveries(missing.slice(i, i + CATCH_UP.rowsPerWrite));
    }
    // What is pending and held by no job (freed just now, or left by a node that stopped).
    for (let round = 0; round < 1_000 && !this.stopping; round++) {
      const ds = await this.store.listUnqueued({ limit: CATCH_UP.rowsPerWrite });
      await this.queue(ds);
      if (ds.length < CATCH_UP.rowsPerWrite) break;
    }
    if (created + requeued > 0) this.deps.log(`Status callbacks: ${created} missing deliveries created, ${requeued} pending deliveries queued again.`);
    return { created, requeued };
  }

  /** An application's deliveries, newest first, with their attempts; `before` is a delivery id. */
  async list(appId: string, opts: { limit: number; before?: string }): Promise<{ deliveries: DeliveryView[]; nextBefore: string | null }> {
    if (!(await this.deps.apps.get(appId))) throw new ApiError('APP_NOT_FOUND');
    let beforeSeq: number | undefined;
    if (opts.before !== undefined) {
      const b = await this.store.get(opts.before);
      if (!b || b.appId !== appId) throw new ApiError('INVALID_PARAMETER', `before: no delivery ${opts.before} of this application`);
      beforeSeq = b.seq;
    }
    const rows = await this.store.listByApp(appId, { limit: opts.limit + 1, beforeSeq });
    const page = rows.slice(0, opts.limit);
    const deliveries = toDeliveryViews(page, await this.store.attempts(page.map((d) => d.id)));
    return { deliveries, nextBefore: rows.length > opts.limit ? page.at(-1)!.id : null };
  }

  async get(id: string): Promise<DeliveryView> {
    const d = await this.store.get(id);
    if (!d) throw new ApiError('DELIVERY_NOT_FOUND');
    return toDeliveryViews([d], await this.store.attempts([d.id]))[0]!;
  }

  /**
   * Starts a new attempt series of the same payload and delivery id, whatever the delivery's
   * state (a delivered one too): the application de-duplicates on `webhook-id` if it must.
   */
  async redeliver(id: string): Promise<DeliveryView> {
    const d = await this.store.get(id);
    if (!d) throw new ApiError('DELIVERY_NOT_FOUND');
    const now = this.now();
    const patch: DeliveryPatch = {
      state: 'pending',
      series: d.series + 1,
      seriesAttempts: 0,
      firstAttemptAt: null,
      nextAttemptAt: now,
      deliveredAt: null,
      lastError: '',
      attemptJob: '',
      updatedAt: now,
    };
    // Conditional on the series it read, so two redeliveries at once start one series each, in turn.
    if (!(await this.store.update(id, patch, { series: d.series, seriesAttempts: d.seriesAttempts }))) return this.redeliver(id);
    await this.queue([{ ...d, ...patch, series: d.series + 1, seriesAttempts: 0, nextAttemptAt: now }]);
    return this.get(id);
  }

  /**
   * Sends a test delivery to the application's callback address now, once (no retries): VideoId
   * is the nil UUID, VideoStatus 1, and the body has `Test=1`. Resolves with the delivery, whose
   * only attempt is the result; it stays in the log like any other.
   */
  async sendTest(appId: string): Promise<DeliveryView> {
    const app = await this.deps.apps.get(appId);
    if (!app) throw new ApiError('APP_NOT_FOUND');
    if (app.disabled) throw new ApiError('APP_DISABLED', 'a disabled application gets no callbacks');
    if (!app.callbackUrl) throw new ApiError('INVALID_PARAMETER', 'the application has no callbackUrl (set it with PATCH /admin/api/apps/:appId)');
    // Its one attempt is this request's, not a job's: no sweep queues it.
    const d = { ...this.newDelivery({ appId, kind: 'test', videoId: TEST_VIDEO_ID, videoStatus: VideoStatus.Normal, statusAt: null, state: 'pending' }), attemptJob: TEST_HOLDER };
    await this.store.insert(d);
    await this.attempt(d, 1, { retry: false });
    return this.get(d.id);
  }

  /**
   * Creates the deliveries of these status changes in one write (their first attempts are queued
   * like any pending delivery's); resolves with how many were new (a change that has one already
   * is left alone).
   */
  private async createStatusDeliveries(changes: MissingDelivery[]): Promise<number> {
    const notSent = new Map<string, string>();
    const ds: DeliveryRecord[] = [];
    for (const m of changes) {
      let skipped = notSent.get(m.appId);
      if (skipped === undefined) notSent.set(m.appId, (skipped = whyNotSent(await this.deps.apps.get(m.appId))));
      // Without an address, the row still records the change, saying nothing was sent: setting an
      // address later must not call back every video finished before.
      ds.push(this.newDelivery({ ...m, kind: 'status', state: skipped ? 'skipped' : 'pending', lastError: skipped }));
    }
    const stored = await this.store.insertMany(ds);
    return stored.filter(Boolean).length;
  }

  private newDelivery(f: Pick<DeliveryRecord, 'appId' | 'kind' | 'videoId' | 'videoStatus' | 'statusAt' | 'state'> & { lastError?: string }): DeliveryRecord {
    const now = this.now();
    return {
      id: crypto.randomUUID(),
      seq: 0, // the store numbers it
      attemptJob: '',
      series: 1,
      seriesAttempts: 0,
      firstAttemptAt: null,
      nextAttemptAt: f.state === 'pending' ? now : null,
      deliveredAt: null,
      lastError: '',
      createdAt: now,
      updatedAt: now,
      ...f,
    };
  }

  /**
   * Queues the next attempt of each of these pending deliveries (one job each, in one write) and
   * gives it to its job (DeliveryRecord.attemptJob). A delivery some other job holds by then keeps
   * that one: the job queued here finds it held and does nothing. Resolves with how many were given.
   */
  private async queue(ds: DeliveryRecord[]): Promise<number> {
    if (ds.length === 0) return 0;
    const jobs = await this.deps.jobs.enqueueMany(
      'callback',
      ds.map((d) => {
        const payload: JobPayloads['callback'] = { deliveryId: d.id, series: d.series, attempt: d.seriesAttempts + 1 };
        return { payload, opts: { videoId: d.kind === 'status' ? d.videoId : '', runAfter: d.nextAttemptAt ?? 0 } };
      }),
    );
    let given = 0;
    // The job is written before the claim: a claim always names a job that exists. (It may run
    // before the claim is written: it then takes the claim itself, see attemptJob.)
    for (const [i, d] of ds.entries()) if (await this.store.claimAttempt(d.id, { series: d.series, seriesAttempts: d.seriesAttempts }, jobs[i]!.id)) given++;
    return given;
  }

  /**
   * One attempt, as a job. A job the delivery no longer expects (redelivered, already made) does
   * nothing, nor does one whose attempt another job holds. Run again after a crash (or taken over
   * from a node that stopped), the job still holds its attempt and sends it again, with the same
   * delivery id: the receiver de-duplicates on `webhook-id`.
   */
  private async attemptJob(job: TypedJob<'callback'>, signal: AbortSignal): Promise<void> {
    const p = job.payload;
    const d = await this.store.get(p.deliveryId);
    if (!d || d.state !== 'pending' || d.series !== p.series || d.seriesAttempts + 1 !== p.attempt) return;
    if (d.attemptJob !== job.id && !(d.attemptJob === '' && (await this.store.claimAttempt(d.id, { series: d.series, seriesAttempts: d.seriesAttempts }, job.id)))) return;
    const outcome = await this.attempt(d, p.attempt, { retry: true, signal });
    // Per house style the job fails with the reason; the next attempt, if any, is its own job.
    if (outcome && !outcome.ok) throw new Error(outcome.error);
  }

  /**
   * Makes attempt `attempt` of `d`'s current series with the application's current address and
   * secret, records it, and on failure queues the next one (if `retry` and the window allows).
   * Resolves undefined when nothing was sent (the delivery is then `skipped`).
   */
  private async attempt(d: DeliveryRecord, attempt: number, opts: { retry: boolean; signal?: AbortSignal }): Promise<AttemptOutcome | undefined> {
    const o = this.deps.options;
    const app = await this.deps.apps.get(d.appId);
    const skipped = whyNotSent(app);
    if (!app || skipped) {
      await this.store.update(d.id, { state: 'skipped', lastError: skipped, nextAttemptAt: null, updatedAt: this.now() }, { series: d.series, seriesAttempts: attempt - 1 });
      return undefined;
    }
    const at = this.now();
    const request = buildCallbackRequest({
      deliveryId: d.id,
      appId: app.appId,
      secret: app.secret,
      videoId: d.videoId,
      videoStatus: d.videoStatus,
      test: d.kind === 'test',
      timestamp: Math.floor(at / 1000),
    });
    // Rejects only when aborted (shutdown, cancel): nothing is recorded and the job runs again.
    const outcome = await sendCallback(app.callbackUrl, request, { timeoutMs: o.timeoutMs, excerptBytes: o.responseExcerptBytes, signal: opts.signal });
    const record: AttemptRecord = { deliveryId: d.id, series: d.series, attempt, at, url: app.callbackUrl, ...outcome };
    const firstAttemptAt = d.firstAttemptAt ?? at;
    const done = this.now();
    let patch: DeliveryPatch;
    let retryAt: number | undefined;
    if (outcome.ok) {
      patch = { state: 'delivered', deliveredAt: done, nextAttemptAt: null, lastError: '' };
    } else {
      const retryAfter = opts.retry && attempt <= o.retry.maxRetries ? done + backoffDelay(o.retry, attempt) : undefined;
      if (retryAfter !== undefined && retryAfter <= firstAttemptAt + o.windowMs) {
        retryAt = retryAfter;
        patch = { state: 'pending', nextAttemptAt: retryAt, lastError: outcome.error };
      } else {
        patch = { state: 'failed', nextAttemptAt: null, lastError: outcome.error };
      }
    }
    // Recording frees the next attempt; should this node stop before queueing it, a sweep does.
    const recorded = await this.store.recordAttempt(record, { ...patch, firstAttemptAt, updatedAt: done });
    if (recorded) {
      this.deps.events.emit('callback.attempt', {
        videoId: d.videoId,
        appId: d.appId,
        deliveryId: d.id,
        status: d.videoStatus,
        outcome: outcome.ok ? 'delivered' : patch.state === 'pending' ? 'failed' : 'given-up',
        httpStatus: outcome.httpStatus,
        error: outcome.error,
        durationMs: outcome.latencyMs,
      });
    }
    if (recorded && retryAt !== undefined) await this.queue([{ ...d, ...patch, seriesAttempts: attempt, firstAttemptAt, attemptJob: '', updatedAt: done }]);
    return outcome;
  }

  /**
   * A cancelled attempt job ends its delivery's series, unless another job holds the attempt. A
   * job that failed without recording its attempt (failed attempts record themselves first) frees
   * it, and the next sweep queues it again.
   */
  private async jobGaveUp(job: TypedJob<'callback'>, reason: string): Promise<void> {
    const p = job.payload;
    if (reason !== 'cancelled') {
      await this.store.releaseAttempt(p.deliveryId, job.id);
      return;
    }
    const d = await this.store.get(p.deliveryId);
    if (!d || d.state !== 'pending' || d.series !== p.series || d.seriesAttempts + 1 !== p.attempt) return;
    await this.store.update(
      d.id,
      { state: 'failed', lastError: failureWords({ kind: 'cancelled' }), nextAttemptAt: null, attemptJob: '', updatedAt: this.now() },
      { series: d.series, seriesAttempts: d.seriesAttempts, attemptJob: job.id },
    );
  }
}

/** Why nothing is sent to this application (empty if something is): no callback for a disabled one. */
function whyNotSent(app: AppRecord | undefined): string {
  if (!app) return failureWords({ kind: 'noApplication' });
  if (app.disabled) return failureWords({ kind: 'applicationDisabled' });
  if (!app.callbackUrl) return failureWords({ kind: 'noCallbackAddress' });
  return '';
}
