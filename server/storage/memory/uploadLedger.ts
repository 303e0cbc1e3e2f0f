import type { ReservationView, UploadReservation } from '../types.js';

/** One upload under way, as the ledger knows it: its reservation, and what only this process knows of it. */
export interface LiveUpload extends Omit<UploadReservation, 'key'> {
  /** Writes to it in progress (a PATCH, a multipart body): it is not replaced while receiving. */
  receiving: number;
  /** When the entry was made (Unix ms), so that a rebuild does not drop one whose file is not there yet. */
  since: number;
}

/**
 * The uploads under way on this node and the disk space promised to them (issue 12, item 7):
 * every upload reserves its declared bytes when it is created, the reservation shrinks as bytes
 * land, and goes when the upload finishes, is terminated or expires; a tus upload that receives
 * nothing for a while stops counting (it goes idle) until it is reserved again. The space check
 * of a new upload counts what is promised to the others, to its application and to its address
 * (UploadRoom.reserveRoom), and the ledger tells whether a video already has an upload under
 * way, idle or not: there is at most one per video.
 *
 * In memory, two uses: each node's own record of its uploads (ingest/uploadRoom.ts: what it
 * receives, who may replace an upload), whose tus uploads are rebuilt from the store's folder at
 * start and on every sweep (ingest/tus/reconciliation.ts); and the embedded mode's reservations'
 * store ({@link MemoryUploadReservations}), where the cluster's is the database's.
 */
export class UploadLedger {
  private readonly entries = new Map<string, LiveUpload>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Bytes promised to uploads under way and not yet on disk, all disks together. */
  reservedBytes(now = this.now()): number {
    let total = 0;
    for (const e of this.counting(now)) total += unsent(e[1]);
    return total;
  }

  /** Bytes promised on `disk` to uploads under way. */
  reservedOn(disk: string, now = this.now()): number {
    return this.viewOf({ disk }, now).reservedBytes;
  }

  /**
   * What a reservation like `r` must fit with on its disk: the bytes promised there, and those of
   * them promised to its application and to its client address; `except`, a key left out (the
   * upload itself, reserving again), whose video it does not take either.
   */
  viewOf(r: { disk: string; videoId?: string; appId?: string; client?: string }, now = this.now(), except?: string): ReservationView {
    let reservedBytes = 0;
    let appReservedBytes = 0;
    let clientReservedBytes = 0;
    for (const [key, e] of this.counting(now)) {
      if (key === except || e.disk !== r.disk) continue;
      const n = unsent(e);
      reservedBytes += n;
      if (r.appId !== undefined && e.appId === r.appId) appReservedBytes += n;
      if (r.client !== undefined && e.client === r.client) clientReservedBytes += n;
    }
    const video = r.videoId === undefined ? undefined : this.liveFor(r.videoId, now, except);
    return { ...(video ? { videoUpload: asReservation(video) } : {}), reservedBytes, appReservedBytes, clientReservedBytes };
  }

  /** The upload under way for `videoId` (not expired, idle or not), if any, with its key; `except`, a key left out. */
  liveFor(videoId: string, now = this.now(), except?: string): [string, LiveUpload] | undefined {
    for (const e of this.live(now)) if (e[1].videoId === videoId && e[0] !== except) return e;
    return undefined;
  }

  /** True if `e`'s unsent bytes count at `now`: it has not expired, nor gone idle. */
  counts(e: LiveUpload, now = this.now()): boolean {
    return (e.expiresAt === undefined || e.expiresAt > now) && (e.idleUntil === undefined || e.idleUntil > now);
  }

  /** How many uploads are under way (not expired; idle or not): the metrics' figure. */
  underWay(now = this.now()): number {
    let n = 0;
    for (const _ of this.live(now)) n++;
    return n;
  }

  get(key: string): LiveUpload | undefined {
    return this.entries.get(key);
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  /** Records an upload (replacing an entry of the same key), made at `since`. */
  add(key: string, upload: Omit<LiveUpload, 'receiving' | 'since' | 'written'> & { written?: number }, since = this.now()): void {
    this.entries.set(key, { written: 0, ...upload, receiving: this.entries.get(key)?.receiving ?? 0, since });
  }

  /**
   * `written` bytes of the upload are now on disk. With `active`, they have just arrived: an
   * entry that still counts counts until `active.idleUntil` at least; one gone idle stays so
   * (counting again takes a decision: {@link MemoryUploadReservations.resume}).
   */
  progress(key: string, written: number, active?: { now: number; idleUntil: number }): void {
    const e = this.entries.get(key);
    if (!e) return;
    e.written = written;
    if (active && e.idleUntil !== undefined && this.counts(e, active.now)) e.idleUntil = Math.max(e.idleUntil, active.idleUntil);
  }

  /** A write to the upload starts (+1) or ends (-1). */
  receiving(key: string, delta: 1 | -1): void {
    const e = this.entries.get(key);
    if (e) e.receiving = Math.max(0, e.receiving + delta);
  }

  /** The upload is done, terminated or gone: its reservation is released. */
  release(key: string): void {
    this.entries.delete(key);
  }

  private *live(now: number): Generator<[string, LiveUpload]> {
    for (const e of this.entries) if (e[1].expiresAt === undefined || e[1].expiresAt > now) yield e;
  }

  private *counting(now: number): Generator<[string, LiveUpload]> {
    for (const e of this.entries) if (this.counts(e[1], now)) yield e;
  }
}

/** What an entry still promises: its declared bytes not yet on disk (never below 0). */
function unsent(e: LiveUpload): number {
  return Math.max(0, e.size - e.written);
}

/** A ledger entry as the store's record. */
function asReservation([key, e]: [string, LiveUpload]): UploadReservation {
  const { receiving: _receiving, since: _since, ...r } = e;
  return { key, ...r };
}
