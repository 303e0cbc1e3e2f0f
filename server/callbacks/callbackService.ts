import crypto from 'node:crypto';
import { ApiError } from '../errors.js';
import type { VopEventBus } from '../events.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import { backoffDelay, NO_RETRY } from '../jobs/retry.js';
import type { JobRecord, JobStore } from '../jobs/types.js';
import { VideoStatus } from '../services/videoStatus.js';
import type { AppRecord, AppStore } from '../storage/types.js';
import { sendCallback, type AttemptOutcome } from './callbackHttp.js';
import { buildCallbackRequest, TEST_VIDEO_ID } from './callbackRequest.js';
import type { CallbackOptions } from './options.js';
import { toDeliveryViews, type DeliveryView } from './deliveryView.js';
import type { AttemptRecord, CallbackStore, DeliveryPatch, DeliveryRecord, MissingDelivery } from './types.js';

/** The job type of one delivery attempt. */
export const CALLBACK_JOB = 'callback';

/** Spec section 6: the statuses that are called back, the end states of section 3. */
export const CALLBACK_STATUSES: readonly number[] = [VideoStatus.Normal, VideoStatus.DownloadFailed, VideoStatus.TranscodingFailed];

/**
 * Start-up catch-up: rows per store write (one transaction, one fsync each), and videos looked
 * through per read between two turns of the event loop (a few milliseconds of SQL each).
 */
const CATCH_UP = { rowsPerWrite: 1_000, videosPerSlice: 2_000 };

/** Payload of a `callback` job: which attempt of which series of which delivery it makes. */
interface AttemptJobPayload {
  deliveryId: string;
  series: number;
  attempt: number;
}

export interface CallbackServiceDeps {
  store: CallbackStore;
  apps: AppStore;
  jobs: JobQueue;
  /** Read-only use: which deliveries have a live job (start-up reconciliation). */
  jobStore: JobStore;
  events: VopEventBus;
  options: CallbackOptions;
  log: (line: string) => void;
  now?: () => number;
}

/**
 * The status callback of spec section 6. A video reaching an end state (stored first, then the
 * `video.status` event) gets a delivery row and a job for its first attempt; each attempt is one
 * job, which records the attempt and, on failure, queues the next one after the backoff, for as
 * long as the retry window lasts. The application's address and secret are read at each attempt.
 */
export class CallbackService {
  private readonly store: CallbackStore;
  private readonly now: () => number;
  private seq = 0;
  private seqLoaded: Promise<void> | undefined;
  /** Pending deliveries whose next attempt had no job at start-up (see {@link reconcile}). */
  private unscheduled: DeliveryRecord[] = [];
  private catchingUp: Promise<{ created: number; requeued: number }> | undefined;
  private stopping = false;

  constructor(private readonly deps: CallbackServiceDeps) {
    this.store = deps.store;
    this.now = deps.now ?? Date.now;
    deps.jobs.register(CALLBACK_JOB, {
      concurrency: deps.options.concurrency,
      // A failed attempt queues the next one itself (see attemptJob): the job is never retried.
      retry: NO_RETRY,
      handle: (job, ctx) => this.attemptJob(job, ctx.signal),
      onGiveUp: (job, reason) => this.jobGaveUp(job, reason),
    });
    deps.events.on('video.status', (e) => {
      if (e.from === e.to || !CALLBACK_STATUSES.includes(e.to)) return;
      this.createStatusDeliveries([{ appId: e.appId, videoId: e.videoId, videoStatus: e.to, statusAt: e.at }]).catch((err) =>
        deps.log(`Status callback for video ${e.videoId} (status ${e.to}) could not be queued: ${String(err)}`),
      );
    });
  }

  /**
   * Start-up, step 1 of catching up on what a crash cut off: finds the pending deliveries whose
   * next attempt has no job (the process stopped between recording an attempt and queueing the
   * next). Call it before the job queue starts and before any status can change: once either
   * runs, a delivery is pending for a moment before its job is written, and would be queued
   * twice. Two indexed reads; the writes wait for {@link startCatchUp}.
   */
  async reconcile(): Promise<void> {
    await this.init();
    const live = new Set<string>();
    for (const job of await this.deps.jobStore.list({ types: [CALLBACK_JOB], states: ['queued', 'running'], limit: 1_000_000 })) {
      const p = job.payload as Partial<AttemptJobPayload>;
      live.add(`${p.deliveryId}/${p.series}/${p.attempt}`);
    }
    this.unscheduled = (await this.store.listPending()).filter((d) => !live.has(`${d.id}/${d.series}/${d.seriesAttempts + 1}`));
  }

  /**
   * Start-up, step 2, once the job queue runs, in the background (the server answers meanwhile):
   * queues the attempts step 1 found, then gives a delivery to every end-state change that has
   * none (the process stopped between the change and its delivery row). A library from before
   * callbacks existed has none at all: one fsynced write per delivery, before listening, took
   * 253 s for 100,000 videos. So the library is read a slice at a time, yielding between slices,
   * and rows are written {@link CATCH_UP}.rowsPerWrite per transaction. The listener may create a
   * delivery for the same change meanwhile: the store keeps only one (see insertMany).
   */
  startCatchUp(): Promise<{ created: number; requeued: number }> {
    this.catchingUp ??= this.catchUp().catch((err) => {
      this.deps.log(`Status callbacks: catching up at start-up failed (the next start tries again): ${String(err)}`);
      return { created: 0, requeued: 0 };
    });
    return this.catchingUp;
  }

  /** Stops the start-up catch-up at its next write and waits for it; the next start finds the rest. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.catchingUp;
  }

  private async catchUp(): Promise<{ created: number; requeued: number }> {
    const unscheduled = this.unscheduled;
    this.unscheduled = [];
    let requeued = 0;
    for (let i = 0; i < unscheduled.length && !this.stopping; i += CATCH_UP.rowsPerWrite) {
      const batch = unscheduled.slice(i, i + CATCH_UP.rowsPerWrite);
      await this.enqueueAttempts(batch.map((d) => ({ d, attempt: d.seriesAttempts + 1, runAfter: d.nextAttemptAt ?? 0 })));
      requeued += batch.length;
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
      updatedAt: now,
    };
    // Conditional on the series it read, so two redeliveries at once start one series each, in turn.
    if (!(await this.store.update(id, patch, { series: d.series, seriesAttempts: d.seriesAttempts }))) return this.redeliver(id);
    await this.enqueueAttempt({ ...d, series: d.series + 1 }, 1, now);
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
    await this.init();
    const d = this.newDelivery({ appId, kind: 'test', videoId: TEST_VIDEO_ID, videoStatus: VideoStatus.Normal, statusAt: null, state: 'pending' });
    await this.store.insert(d);
    await this.attempt(d, 1, { retry: false });
    return this.get(d.id);
  }

  /**
   * Creates the deliveries of these status changes in one write and queues their first attempts
   * in another; resolves with how many were new (a change that has one already is left alone).
   */
  private async createStatusDeliveries(changes: MissingDelivery[]): Promise<number> {
    await this.init();
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
    const created = ds.filter((_, i) => stored[i]);
    await this.enqueueAttempts(created.filter((d) => d.state === 'pending').map((d) => ({ d, attempt: 1, runAfter: 0 })));
    return created.length;
  }

  private newDelivery(f: Pick<DeliveryRecord, 'appId' | 'kind' | 'videoId' | 'videoStatus' | 'statusAt' | 'state'> & { lastError?: string }): DeliveryRecord {
    const now = this.now();
    return {
      id: crypto.randomUUID(),
      seq: ++this.seq,
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

  /** Loads the highest seq once; call before the first delivery is created. */
  async init(): Promise<void> {
    this.seqLoaded ??= this.store.maxSeq().then((n) => {
      this.seq = Math.max(this.seq, n);
    });
    await this.seqLoaded;
  }

  private async enqueueAttempt(d: Pick<DeliveryRecord, 'id' | 'series' | 'kind' | 'videoId'>, attempt: number, runAfter: number): Promise<void> {
    await this.enqueueAttempts([{ d, attempt, runAfter }]);
  }

  /** Queues these attempts in one write. */
  private async enqueueAttempts(attempts: Array<{ d: Pick<DeliveryRecord, 'id' | 'series' | 'kind' | 'videoId'>; attempt: number; runAfter: number }>): Promise<void> {
    if (attempts.length === 0) return;
    await this.deps.jobs.enqueueMany(
      CALLBACK_JOB,
      attempts.map(({ d, attempt, runAfter }) => {
        const payload: AttemptJobPayload = { deliveryId: d.id, series: d.series, attempt };
        return { payload: { ...payload }, opts: { videoId: d.kind === 'status' ? d.videoId : '', runAfter } };
      }),
    );
  }

  /** One attempt, as a job. A job the delivery no longer expects (redelivered, already made) does nothing. */
  private async attemptJob(job: JobRecord, signal: AbortSignal): Promise<void> {
    const p = job.payload as unknown as AttemptJobPayload;
    const d = await this.store.get(p.deliveryId);
    if (!d || d.state !== 'pending' || d.series !== p.series || d.seriesAttempts + 1 !== p.attempt) return;
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
    const recorded = await this.store.recordAttempt(record, { ...patch, firstAttemptAt, updatedAt: done });
    if (recorded && retryAt !== undefined) await this.enqueueAttempt(d, attempt + 1, retryAt);
    return outcome;
  }

  /** A cancelled attempt job ends its delivery's series (failed attempts already recorded themselves). */
  private async jobGaveUp(job: JobRecord, reason: string): Promise<void> {
    if (reason !== 'cancelled') return;
    const p = job.payload as unknown as AttemptJobPayload;
    const d = await this.store.get(p.deliveryId);
    if (!d || d.state !== 'pending' || d.series !== p.series || d.seriesAttempts + 1 !== p.attempt) return;
    await this.store.update(d.id, { state: 'failed', lastError: 'cancelled', nextAttemptAt: null, updatedAt: this.now() }, { series: d.series, seriesAttempts: d.seriesAttempts });
  }
}

/** Why nothing is sent to this application (empty if something is): no callback for a disabled one. */
function whyNotSent(app: AppRecord | undefined): string {
  if (!app) return 'no such application';
  if (app.disabled) return 'application disabled';
  if (!app.callbackUrl) return 'no callback address';
  return '';
}
