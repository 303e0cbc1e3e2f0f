import { addressLimitKey } from '../core/addressLimitKey.js';
import { ApiError } from '../core/errors.js';
import { formatBytes } from '../core/formatBytes.js';
import type { LocalMediaRoot } from '../storage/media/localMediaRoot.js';
import type { ReservationView, UploadReservation } from '../storage/types.js';
import type { IngestOptions } from './ingestOptions.js';
import { NO_DISK, type SharedReservations } from './sharedReservations.js';
import { UploadLedger } from '../storage/memory/uploadLedger.js';

/** A new upload, as its receiver announces it to {@link UploadRoom.reserveRoom}. */
export interface NewUpload {
  kind: UploadReservation['kind'];
  videoId: string;
  /** The size the client declared (tus Upload-Length, a multipart Content-Length). */
  size: number;
  /** Unix ms after which it no longer counts (a tus upload's expiry); absent: until released. */
  expiresAt?: number;
  /** Who may replace it (a digest of the upload page's credential); absent: nobody. */
  owner?: string;
  /** The application whose upload it is (its share of the disk counts it). */
  appId: string;
}

/** An upload under way that bytes are about to reach again, as {@link UploadRoom.resumeRoom} is told of it. */
export interface ResumedUpload extends NewUpload {
  /** Bytes of it already stored (its offset): only the rest is reserved again. */
  written: number;
}

/**
 * Where an upload's bytes land, which decides the disk its reservation counts against
 * (sharedReservations.ts names the disks): `media`, the media folder (tus on local disk, every
 * multipart body); `bucket`, object storage (tus with media in a bucket), which reports no free
 * space, so nothing is counted and only the video is held.
 */
export type UploadLanding = 'media' | 'bucket';

export interface UploadRoomDeps {
  media: Pick<LocalMediaRoot, 'freeBytes'>;
  options: IngestOptions;
  now: () => number;
  /** The reservations every node sees (the one process's, embedded), and this node's part in them (issue 12, item 7). */
  shared: SharedReservations;
}

/**
 * The disk space promised to the uploads under way (issue 12, item 7), apart from who may upload
 * (IngestService): every receiver (tus, multipart) reserves its declared bytes here before it
 * stores one, reports what it wrote, and releases the reservation when the upload ends; pulls
 * ask whether their bytes fit.
 */
export class UploadRoom {
  /**
   * The uploads under way (tus and multipart) on this node, as this node knows them: what it
   * receives, who may replace one. The space promised to them is {@link shared}'s store's.
   */
  readonly uploads: UploadLedger;
  /**
   * This node's part in the reservations every node sees; its store is where they are checked
   * and kept (the database's in cluster mode, the process's memory embedded).
   */
  readonly shared: SharedReservations;
  private readonly now: () => number;

  constructor(private readonly deps: UploadRoomDeps) {
    this.now = deps.now;
    this.uploads = new UploadLedger(this.now);
    this.shared = deps.shared;
  }

  /** The disk the media folder is on, as reservations name it. */
  private get mediaDisk(): string {
    return this.shared.mediaDisk;
  }

  /** The disk an upload landing there counts against, as reservations name it ({@link UploadLanding}). */
  diskFor(landing: UploadLanding): string {
    return landing === 'bucket' ? NO_DISK : this.mediaDisk;
  }

  /**
   * Throws INSUFFICIENT_STORAGE unless `bytes` more still leave the configured margin free on the
   * media folder's disk, once the bytes promised there to the uploads under way (in cluster mode,
   * every node's) are counted as used.
   */
  async ensureRoomFor(bytes: number): Promise<void> {
    // The sum before the free space: bytes that land in between leave the sum as it was and lower
    // the free space, which errs towards refusing.
    const reserved = await this.shared.store.reservedBytes(this.mediaDisk, this.now());
    this.assertRoom(await this.deps.media.freeBytes(), bytes, reserved);
  }

  /**
   * An upload of `upload.size` bytes for `upload.videoId` starts (issue 12, item 7), from the
   * client at `address`: refused with 303 if the video already has an upload under way (one per
   * video), or with 507 unless it fits ({@link assertFits}: the disk's free space less the margin
   * and the bytes promised there to the other uploads, and its application's and its address's
   * shares of that space); otherwise its bytes are reserved under `key` until {@link release}.
   * The checks and the entry are one step of the reservations' store: concurrent starts (in
   * cluster mode, on any nodes) cannot both pass.
   *
   * With media in a bucket a tus upload lands in the bucket (`landing` 'bucket'): it is not
   * refused for lack of room on this node's disk, which it does not fill. A multipart body's
   * reservation is leased by this node ({@link SharedReservations}), as the body lives no longer
   * than its request here. A tus upload's reservation goes idle once no bytes
   * reach it for `reservationIdleMs` ({@link resumeRoom}).
   */
  async reserveRoom(key: string, upload: NewUpload, address: string, landing: UploadLanding = 'media'): Promise<void> {
    const now = this.now();
    const r = this.reservationOf(key, { ...upload, written: 0 }, address, landing, now);
    await this.shared.store.reserve(r, now, async (view) => {
      if (view.videoUpload) throw uploadUnderWay(view.videoUpload);
      await this.assertFits(r, view);
    });
    this.noteReserved(r);
  }

  /**
   * Bytes are about to arrive on tus upload `key` (a PATCH, from `address`): a reservation that
   * still counts counts for another `reservationIdleMs`. One that went idle (nothing arrived for
   * that long, and its space was given back) must fit again, as a new upload of the bytes it has
   * yet to receive; otherwise the PATCH is refused with 507 saying so, before a byte is written,
   * and the upload stays as it was (it may resume once there is room).
   */
  async resumeRoom(key: string, upload: ResumedUpload, address: string, landing: UploadLanding = 'media'): Promise<void> {
    const now = this.now();
    const r = this.reservationOf(key, upload, address, landing, now);
    await this.shared.store.resume(r, now, async (view) => {
      if (view.videoUpload) throw uploadUnderWay(view.videoUpload);
      try {
        await this.assertFits(r, view);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        const idle = formatDuration(this.deps.options.reservationIdleMs);
        throw new ApiError('INSUFFICIENT_STORAGE', `the upload sent nothing for ${idle}, so its space was given back; its remaining ${formatBytes(unsent(r))} must be reserved again: ${err.detail}`);
      }
    });
    this.noteReserved(r);
  }

  /** The reservation of upload `key`, made or renewed at `now`. */
  private reservationOf(key: string, upload: ResumedUpload, address: string, landing: UploadLanding, now: number): UploadReservation {
    const shared = this.shared;
    const leased = upload.kind === 'multipart';
    return {
      key,
      ...upload,
      disk: this.diskFor(landing),
      client: addressLimitKey(address),
      expiresAt: leased ? shared.leaseUntil(now) : upload.expiresAt,
      // A multipart body lives no longer than its request (whose own timeouts end a silent one).
      ...(upload.kind === 'tus' ? { idleUntil: now + this.deps.options.reservationIdleMs } : {}),
      node: shared.node,
    };
  }

  /** A reservation the store took is also this node's own record. */
  private noteReserved(r: UploadReservation): void {
    const shared = this.shared;
    const { key, ...entry } = r;
    this.uploads.add(key, { ...entry, written: Math.max(entry.written, this.uploads.get(key)?.written ?? 0) });
    if (r.kind === 'multipart') shared.hold(key);
  }

  /**
   * Throws INSUFFICIENT_STORAGE unless `r`'s unsent bytes fit on its disk (with the free space
   * read now, after the sums of `view`, as in ensureRoomFor): within the free space less the
   * margin and every upload's promised bytes, and within the shares of that room (free space
   * less margin) that one application's and one client address's uploads may hold. A share
   * refuses only more: an application or address that holds nothing there may take one upload
   * as large as the disk allows, so a lone upload is never refused for a share of a small disk.
   */
  private async assertFits(r: UploadReservation, view: ReservationView): Promise<void> {
    if (r.disk === NO_DISK) return;
    const free = await this.deps.media.freeBytes();
    const bytes = unsent(r);
    this.assertRoom(free, bytes, view.reservedBytes);
    const room = free - this.deps.options.freeSpaceMarginBytes;
    const shares = [
      ['application', view.appReservedBytes, this.deps.options.appReservationShare, 'appReservationShare'],
      ['client address', view.clientReservedBytes, this.deps.options.addressReservationShare, 'addressReservationShare'],
    ] as const;
    for (const [who, held, share, option] of shares) {
      const cap = Math.floor(room * share);
      if (held > 0 && held + bytes > cap) {
        throw new ApiError(
          'INSUFFICIENT_STORAGE',
          `${formatBytes(bytes)} does not fit in what one ${who}'s uploads under way may hold: it holds ${formatBytes(held)} of ${formatBytes(cap)} (${share} of the ${formatBytes(room)} free beyond the margin, ingest.${option}); send or end those first`,
        );
      }
    }
  }

  /**
   * `written` bytes of upload `key` are on its disk: its reservation shrinks (in cluster mode, for
   * every node at the next tick; at once in the embedded mode's memory). `arrived`: they have just
   * been received, so the reservation does not go idle for another `reservationIdleMs`; false for
   * an offset read again from storage.
   */
  progress(key: string, written: number, arrived = true): void {
    const now = this.now();
    this.uploads.progress(key, written, arrived ? { now, idleUntil: now + this.deps.options.reservationIdleMs } : undefined);
    this.shared.noteWritten(key, written, arrived);
  }

  /**
   * Upload `key` is stored, ended or gone: its reservation is released (in cluster mode, for
   * every node). Never rejects: a reservation whose release failed lapses at its expiry or lease.
   */
  async release(key: string): Promise<void> {
    this.uploads.release(key);
    await this.shared.release(key);
  }

  /**
   * Between chunks of an upload being received: throws INSUFFICIENT_STORAGE once the free space
   * no longer covers the margin (the disk filled up with something else meanwhile).
   */
  async checkRoomWhileReceiving(): Promise<void> {
    const free = await this.deps.media.freeBytes();
    const margin = this.deps.options.freeSpaceMarginBytes;
    if (free < margin) {
      throw new ApiError('INSUFFICIENT_STORAGE', `the disk is nearly full (${formatBytes(free)} free, ${formatBytes(margin)} kept free): the upload stopped`);
    }
  }

  private assertRoom(free: number, bytes: number, reserved: number): void {
    const margin = this.deps.options.freeSpaceMarginBytes;
    if (free - margin - reserved < bytes) {
      const promised = reserved > 0 ? `, ${formatBytes(reserved)} promised to uploads under way` : '';
      throw new ApiError('INSUFFICIENT_STORAGE', `${formatBytes(bytes)} does not fit: ${formatBytes(free)} free, ${formatBytes(margin)} kept free${promised}`);
    }
  }
}

/** The 303 of a second upload of a video, saying how far the first has come and how it ends. */
function uploadUnderWay(other: UploadReservation): ApiError {
  const until = other.kind === 'multipart' || other.expiresAt === undefined ? ' until it is stored' : ` until it expires at ${new Date(other.expiresAt).toISOString()}`;
  return new ApiError('VIDEO_STATE_CONFLICT', `another upload of this video is under way (${formatBytes(other.written)} of ${formatBytes(other.size)} received): resume it, end it (tus DELETE), or wait${until}`);
}

/** What a reservation promises: its declared bytes not yet stored. */
function unsent(r: UploadReservation): number {
  return Math.max(0, r.size - r.written);
}

/** A duration as the refusals say it: seconds under two minutes, minutes above. */
function formatDuration(ms: number): string {
  return ms < 120_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;
}
