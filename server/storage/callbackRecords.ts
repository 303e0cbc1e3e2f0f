/**
 * Where a delivery stands. `pending`: attempts made or scheduled; `delivered`: an attempt got a
 * 2xx; `failed`: the series ended without one (window over, or cancelled); `skipped`: nothing was
 * sent (no callback address, application disabled or gone), `lastError` says which.
 */
export type DeliveryState = 'pending' | 'delivered' | 'failed' | 'skipped';

/** `status`: a video reached an end state; `test`: sent from the admin API's test-callback. */
export type DeliveryKind = 'status' | 'test';

/** One status callback to send: the payload's facts, and how its current attempt series is going. */
export interface DeliveryRecord {
  /** The delivery id: the `webhook-id` header, the same for every attempt and redelivery. */
  id: string;
  /**
   * Listing order (higher is newer). The store may number deliveries itself (the PostgreSQL store
   * takes the next value of a database sequence, so nodes never collide): what is promised is
   * that a delivery inserted later has a higher seq.
   */
  seq: number;
  appId: string;
  kind: DeliveryKind;
  /** VideoId of the payload (the nil UUID for a test). */
  videoId: string;
  /** VideoStatus of the payload. */
  videoStatus: number;
  /** Unix ms of the status change (its video_status_history row); null for a test. */
  statusAt: number | null;
  state: DeliveryState;
  /** 1 for the first series; a redelivery starts the next. */
  series: number;
  /** Attempts made in the current series. */
  seriesAttempts: number;
  /** Unix ms of the current series' first attempt; the retry window counts from it. */
  firstAttemptAt: number | null;
  /** Unix ms of the next scheduled attempt while pending. */
  nextAttemptAt: number | null;
  deliveredAt: number | null;
  /** Why the last attempt failed or why nothing was sent, for people. */
  lastError: string;
  /**
   * The id of the job that holds the next attempt of the current series (its claim), '' while
   * none does. Only the job holding it sends; recording an attempt or starting a series frees it.
   */
  attemptJob: string;
  createdAt: number;
  updatedAt: number;
}

/** One HTTP attempt of a delivery, as kept in the log. */
export interface AttemptRecord {
  deliveryId: string;
  series: number;
  /** 1 for the first attempt of its series. */
  attempt: number;
  /** Unix ms when the request started. */
  at: number;
  /** The address used (the application's callback address at that moment). */
  url: string;
  /** The answer's HTTP status; null when no answer came (refused, timed out, reset). */
  httpStatus: number | null;
  /** Why it did not count as delivered; empty when it did. */
  error: string;
  latencyMs: number;
  /** The start of the answer body (responseExcerptBytes), as text. */
  responseExcerpt: string;
  ok: boolean;
}

/** A status change whose delivery row is missing (a crash between the change and its row). */
export interface MissingDelivery {
  appId: string;
  videoId: string;
  videoStatus: number;
  statusAt: number;
}

/** Storage of deliveries and their attempts. */
export interface CallbackStore {
  /**
   * Inserts; resolves false (and stores nothing) if a status delivery for the same change exists.
   * Status deliveries are normally written by VideoStore.setStatus (storage/outbox.ts); this is
   * for tests and for changes stored without one (by a version before the outbox).
   */
  insert(d: DeliveryRecord): Promise<boolean>;
  /**
   * Inserts many in one transaction (one journal write): for each, true if it was stored, false
   * if a status delivery for the same change existed.
   */
  insertMany(ds: DeliveryRecord[]): Promise<boolean[]>;
  get(id: string): Promise<DeliveryRecord | undefined>;
  /** An application's deliveries, newest first, those with seq below `beforeSeq` if given. */
  listByApp(appId: string, opts: { limit: number; beforeSeq?: number }): Promise<DeliveryRecord[]>;
  /** Pending deliveries (for start-up reconciliation). */
  listPending(): Promise<DeliveryRecord[]>;
  /**
   * Pending deliveries whose next attempt no job holds (attemptJob ''), oldest first: what the
   * outbox's sweep queues. `updatedBefore`: only those last written before it (Unix ms);
   * `videoId`: only that video's.
   */
  listUnqueued(opts: { limit: number; updatedBefore?: number; videoId?: string }): Promise<DeliveryRecord[]>;
  /** Pending deliveries whose next attempt a job holds and was due before `dueBefore`, oldest first. */
  listHeld(opts: { limit: number; dueBefore: number }): Promise<DeliveryRecord[]>;
  /**
   * Gives the next attempt of `id` to job `jobId` if the delivery is still pending in the series
   * and at the attempt count given and no other job holds it; true if `jobId` holds it now (it
   * did already, too). One conditional write: of two jobs racing for it, one wins.
   */
  claimAttempt(id: string, expect: { series: number; seriesAttempts: number }, jobId: string): Promise<boolean>;
  /** Frees the next attempt of `id` if job `jobId` holds it (that job ended without making it); true if it did. */
  releaseAttempt(id: string, jobId: string): Promise<boolean>;
  /**
   * Applies `patch`; with `expect`, only if the stored series and attempt count still match and,
   * if `expect.attemptJob` is given, the next attempt is held by that job or by none.
   */
  update(id: string, patch: DeliveryPatch, expect?: { series: number; seriesAttempts: number; attemptJob?: string }): Promise<boolean>;
  /**
   * Logs an attempt and, if the delivery still expects it (pending, same series, the previous
   * attempt count), applies its new standing in the same transaction, freeing the next attempt
   * (attemptJob ''); true if it did. An attempt the delivery no longer expects (redelivered
   * meanwhile, or made already by another job) is logged all the same, unless one is logged under
   * its number already.
   */
  recordAttempt(a: AttemptRecord, patch: DeliveryPatch): Promise<boolean>;
  /** Attempts of these deliveries, oldest first. */
  attempts(deliveryIds: string[]): Promise<AttemptRecord[]>;
  /**
   * Videos in an end state (1, 4, 7) whose latest real status change has no status delivery: how
   * a change stored just before a crash still gets its callback. One slice of the library at a
   * time, in video id order: the videos after `afterVideoId` (from the start if omitted), about
   * `videos` of them; `next` is where the following slice starts, undefined after the last.
   */
  missingStatusDeliveries(endStates: number[], slice: { afterVideoId?: string; videos: number }): Promise<{ missing: MissingDelivery[]; next?: string }>;
  /** At least the highest seq so far. */
  maxSeq(): Promise<number>;
}

export type DeliveryPatch = Partial<Omit<DeliveryRecord, 'id' | 'seq' | 'appId' | 'kind' | 'videoId' | 'videoStatus' | 'statusAt' | 'createdAt'>>;
