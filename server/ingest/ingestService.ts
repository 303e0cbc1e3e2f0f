import { addressLimitKey } from '../core/addressLimitKey.js';
import { ApiError } from '../core/errors.js';
import type { AuthService } from '../auth/authService.js';
import { SourceFileGetType, VIDEO_ID_RE } from '../core/videoStatus.js';
import type { LocalMediaRoot } from '../storage/media/localMediaRoot.js';
import type { AppRecord, AppStore, ReservationView, UploadReservation, UploadReservationStore, VideoRecord, VideoStore } from '../storage/types.js';
import type { IngestOptions, UploadType } from './ingestOptions.js';
import { formatBytes } from '../core/formatBytes.js';
import { SourceIntake, awaitsUpload, notAVideoError } from './sourceIntake.js';
import { obviousNonVideo } from './quickLook.js';
import { UploadCredentials, type UploadGrant } from './uploadCredential.js';
import { MEDIA_DISK, NO_DISK, type SharedReservations } from './sharedReservations.js';
import { MemoryUploadReservations, UploadLedger } from './uploadLedger.js';

/** An upload page's session: what the page needs to send the file of one video by tus. */
export interface UploadSession {
  /** Send as `X-Upload-Credential` on every tus request; it authorises nothing else. */
  credential: string;
  /** Unix ms after which the credential is refused (open the page again for a new one). */
  expiresAt: number;
  videoId: string;
  appId: string;
  /** Largest file accepted, from uploadType. */
  maxBytes: number;
  /** needHandleSepcial: keep the source as the only rendition. */
  keepSource: boolean;
  uploadType: 'flash' | 'silverlight';
  /** Where the tus client creates the upload (relative to the server's base URL). */
  tusPath: '/upload/tus/';
}

/** Who may upload which video's file, as established for one upload. */
export interface UploadTarget {
  video: VideoRecord;
  keepSource: boolean;
  maxBytes: number;
  uploadType: UploadType;
  /** How the upload was authorised: by a page's credential, or by the spec's three values. */
  auth: 'credential' | 'token';
}

/** The spec's three values, as the widget options name them. */
export interface WidgetCredentials {
  appId?: string;
  timestamp?: string;
  token?: string;
}

export interface IngestServiceDeps {
  auth: AuthService;
  apps: AppStore;
  videos: VideoStore;
  media: LocalMediaRoot;
  intake: SourceIntake;
  credentials: UploadCredentials;
  options: IngestOptions;
  now?: () => number;
  /** The uploads under way on this node; absent: a new, empty ledger. */
  uploads?: UploadLedger;
  /**
   * Cluster mode (issue 12, item 7): the reservations every node sees, and this node's part in
   * them. Absent: the ledger is the reservations' store (the embedded mode's one process).
   */
  shared?: SharedReservations;
}

/** A new upload, as its receiver announces it to {@link IngestService.reserveRoom}. */
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

/** An upload under way that bytes are about to reach again, as {@link IngestService.resumeRoom} is told of it. */
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


/**
 * Who may send a video's file, and where it goes once complete. The tus endpoint, the
 * multipart endpoint, the upload page and the pull job all ask here.
 */
export class IngestService {
  readonly intake: SourceIntake;
  /**
   * The uploads under way (tus and multipart) on this node; in the embedded mode, also the disk
   * space promised to them (in cluster mode that is {@link reservations}, which every node sees).
   */
  readonly uploads: UploadLedger;
  /** Cluster mode: this node's part in the reservations every node sees; absent in the embedded mode. */
  readonly shared: SharedReservations | undefined;
  /** Where reservations are checked and kept: the database's in cluster mode, {@link uploads} otherwise. */
  private readonly reservations: UploadReservationStore;
  private readonly now: () => number;

  constructor(private readonly deps: IngestServiceDeps) {
    this.intake = deps.intake;
    this.now = deps.now ?? Date.now;
    this.uploads = deps.uploads ?? new UploadLedger(this.now);
    this.shared = deps.shared;
    this.reservations = deps.shared?.store ?? new MemoryUploadReservations(this.uploads);
  }

  /** The disk the media folder is on, as reservations name it. */
  private get mediaDisk(): string {
    return this.shared?.mediaDisk ?? MEDIA_DISK;
  }

  /** The disk an upload landing there counts against, as reservations name it ({@link UploadLanding}). */
  diskFor(landing: UploadLanding): string {
    return landing === 'bucket' ? NO_DISK : this.mediaDisk;
  }

  get options(): IngestOptions {
    return this.deps.options;
  }

  /**
   * Spec 4.5 and issue 3 item 2: checks the widget's auth values (failures count against the
   * address and the AppId, as on the API) and the video (the caller's, registered with type 1,
   * no file yet), then issues a credential for uploading that one video's file. Throws
   * {@link ApiError} otherwise; the page shows it as `ErrorCode : <code>, ErrorMessage : <message>`.
   */
  async openUploadSession(
    creds: { appId?: string; timestamp?: string; token?: string },
    videoId: string | undefined,
    opts: { uploadType?: string; needHandleSepcial?: boolean | string },
    clientAddress: string,
  ): Promise<UploadSession> {
    const target = await this.targetFromToken(creds, videoId, opts, clientAddress);
    const expiresAt = this.now() + this.deps.options.credentialTtlMs;
    const app = await this.deps.apps.get(target.video.appId);
    if (!app) throw new ApiError('APP_NOT_FOUND');
    const grant = {
      secretTag: this.deps.credentials.secretTag(app.secret),
      videoId: target.video.id,
      appId: target.video.appId,
      expiresAt,
      keepSource: target.keepSource,
      maxBytes: target.maxBytes,
      uploadType: target.uploadType,
    };
    return sessionOf(grant, this.deps.credentials.sign(grant));
  }

  /**
   * Opens the upload page again from the credential an earlier page was given (a reload): the
   * spec's timestamp is good for 10 minutes only, the credential for its own lifetime. The video
   * must still be uploadable; the credential and its expiry stay as they were.
   */
  async reopenUploadSession(credential: string): Promise<UploadSession> {
    // Also checks that the app is still enabled and the video still uploadable.
    const { grant } = await this.targetFromCredential(credential);
    return sessionOf(grant, credential.trim());
  }

  /** An upload authorised by the spec's three values (tus metadata, multipart fields). */
  async targetFromToken(
    creds: WidgetCredentials,
    videoId: string | undefined,
    opts: { uploadType?: string; needHandleSepcial?: boolean | string },
    clientAddress: string,
  ): Promise<UploadTarget> {
    const app = await this.deps.auth.authenticate(
      { appId: creds.appId?.trim(), timestamp: creds.timestamp?.trim(), token: creds.token?.trim() },
      clientAddress,
    );
    const uploadType = parseUploadType(opts.uploadType);
    const keepSource = parseFlag('needHandleSepcial', opts.needHandleSepcial);
    const video = await this.uploadableVideo(app.appId, videoId);
    return { video, keepSource, uploadType, maxBytes: this.deps.options.maxUploadBytes[uploadType], auth: 'token' };
  }

  /**
   * An upload authorised by a page's credential, with the credential's grant. `videoId`, if
   * given, must be the credential's video: a credential opens one video's upload and no other.
   */
  async targetFromCredential(credential: string, videoId?: string): Promise<UploadTarget & { grant: UploadGrant }> {
    const { grant, app } = await this.checkCredential(credential, videoId);
    const video = await this.uploadableVideo(app.appId, grant.videoId);
    return { video, keepSource: grant.keepSource, uploadType: grant.uploadType, maxBytes: grant.maxBytes, auth: 'credential', grant };
  }

  /**
   * Checks a credential ({@link verifyCredential}) and its application: still there, enabled, and
   * with the secret it had when the credential was issued (a rotation ends the credentials
   * issued before it, as it ends the old tokens). Throws an ApiError otherwise.
   */
  async checkCredential(credential: string, videoId?: string): Promise<{ grant: UploadGrant; app: AppRecord }> {
    const grant = await this.verifyCredential(credential, videoId);
    const app = await this.deps.apps.get(grant.appId);
    if (!app) throw new ApiError('APP_NOT_FOUND');
    if (app.disabled) throw new ApiError('APP_DISABLED');
    if (!this.deps.credentials.issuedUnder(grant, app.secret)) {
      throw new ApiError('UPLOAD_CREDENTIAL_INVALID', "the application's secret was changed since the upload page was opened; open it again");
    }
    return { grant, app };
  }

  /** Checks a credential and, if given, that it is for `videoId`; throws an ApiError otherwise. */
  async verifyCredential(credential: string, videoId?: string): Promise<UploadGrant> {
    const checked = await this.deps.credentials.verify(credential, this.now());
    if ('refused' in checked) {
      throw new ApiError('UPLOAD_CREDENTIAL_INVALID', checked.refused === 'expired' ? 'the credential has expired; open the upload page again' : `the credential is ${checked.refused}`);
    }
    if (videoId !== undefined && videoId.toLowerCase() !== checked.grant.videoId) {
      throw new ApiError('ACCESS_DENIED', 'the upload credential is for another video');
    }
    return checked.grant;
  }

  /**
   * The video if `appId` may upload its file now: it exists, is the app's, was registered with
   * SourceFileGetType 1 and has no file yet (status 8), or is in 7 because the file it was sent
   * was not a video ({@link awaitsUpload}).
   */
  async uploadableVideo(appId: string, videoId: string | undefined): Promise<VideoRecord> {
    const id = (videoId ?? '').trim().toLowerCase();
    if (id === '') throw new ApiError('MISSING_PARAMETER', 'videoId');
    if (!VIDEO_ID_RE.test(id)) throw new ApiError('VIDEO_NOT_FOUND', 'videoId is not a video id');
    const video = await this.deps.videos.get(id);
    if (!video || video.appId !== appId) throw new ApiError('VIDEO_NOT_FOUND');
    if (video.sourceType !== SourceFileGetType.Upload) {
      throw new ApiError('VIDEO_STATE_CONFLICT', 'the video was registered to be downloaded from a URL (SourceFileGetType 2), not uploaded');
    }
    if (!awaitsUpload(video)) throw new ApiError('VIDEO_STATE_CONFLICT', "the video's file was already received");
    return video;
  }

  /**
   * The upload page's report of a file it found not to be a video before sending it (quickLook.ts):
   * checked with the credential, judged again here on the file's name and first bytes, then
   * recorded as any other verdict (7, `not a video: …`). Resolves with the NOT_A_VIDEO error the
   * page shows; throws INVALID_PARAMETER if the file is not obviously not a video (the page
   * should then upload it for ffprobe to judge), or the credential's or the video's refusal.
   */
  async refuseOnQuickLook(credential: string, name: string, head: Uint8Array): Promise<ApiError> {
    const { video } = await this.targetFromCredential(credential);
    const why = obviousNonVideo(name, head);
    if (why === undefined) throw new ApiError('INVALID_PARAMETER', 'the file is not obviously not a video: upload it, and the server will judge it');
    const refused = notAVideoError(await this.deps.intake.refuse(video.id, why));
    if (!refused) throw new ApiError('VIDEO_STATE_CONFLICT', "the video's file was already received");
    return refused;
  }

  /** For bytes arriving later on an upload: its application is still active and the video still takes a file. */
  async stillUploadable(appId: string, videoId: string): Promise<VideoRecord> {
    const app = await this.deps.apps.get(appId);
    if (!app) throw new ApiError('APP_NOT_FOUND');
    if (app.disabled) throw new ApiError('APP_DISABLED');
    return this.uploadableVideo(appId, videoId);
  }

  /**
   * Throws INSUFFICIENT_STORAGE unless `bytes` more still leave the configured margin free on the
   * media folder's disk, once the bytes promised there to the uploads under way (in cluster mode,
   * every node's) are counted as used.
   */
  async ensureRoomFor(bytes: number): Promise<void> {
    // The sum before the free space: bytes that land in between leave the sum as it was and lower
    // the free space, which errs towards refusing.
    const reserved = await this.reservations.reservedBytes(this.mediaDisk, this.now());
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
   * refused for lack of room on this node's disk, which it does not fill. In cluster mode a
   * multipart body's reservation is leased by this node ({@link SharedReservations}), as the body
   * lives no longer than its request here. A tus upload's reservation goes idle once no bytes
   * reach it for `reservationIdleMs` ({@link resumeRoom}).
   */
  async reserveRoom(key: string, upload: NewUpload, address: string, landing: UploadLanding = 'media'): Promise<void> {
    const now = this.now();
    const r = this.reservationOf(key, { ...upload, written: 0 }, address, landing, now);
    await this.reservations.reserve(r, now, async (view) => {
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
    await this.reservations.resume(r, now, async (view) => {
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
    const leased = shared !== undefined && upload.kind === 'multipart';
    return {
      key,
      ...upload,
      disk: this.diskFor(landing),
      client: addressLimitKey(address),
      expiresAt: leased ? shared.leaseUntil(now) : upload.expiresAt,
      // A multipart body lives no longer than its request (whose own timeouts end a silent one).
      ...(upload.kind === 'tus' ? { idleUntil: now + this.deps.options.reservationIdleMs } : {}),
      ...(shared ? { node: shared.node } : {}),
    };
  }

  /** Cluster mode: a reservation the store took is also this node's own record (the embedded store is the ledger). */
  private noteReserved(r: UploadReservation): void {
    const shared = this.shared;
    if (!shared) return;
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
   * every node at the next tick). `arrived`: they have just been received, so the reservation
   * does not go idle for another `reservationIdleMs`; false for an offset read again from storage.
   */
  progress(key: string, written: number, arrived = true): void {
    const now = this.now();
    this.uploads.progress(key, written, arrived ? { now, idleUntil: now + this.deps.options.reservationIdleMs } : undefined);
    this.shared?.noteWritten(key, written, arrived);
  }

  /**
   * Upload `key` is stored, ended or gone: its reservation is released (in cluster mode, for
   * every node). Never rejects: a reservation whose release failed lapses at its expiry or lease.
   */
  async release(key: string): Promise<void> {
    this.uploads.release(key);
    await this.shared?.release(key);
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

/** uploadType of spec 4.5: `flash` (default) or `silverlight`, in any case. */
export function parseUploadType(value: string | undefined): UploadType {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'flash') return 'flash';
  if (v === 'silverlight') return 'silverlight';
  throw new ApiError('INVALID_PARAMETER', 'uploadType must be flash or silverlight');
}

/** A boolean option as a page or a form sends it: true/false in any case, 1/0, or absent (false). */
export function parseFlag(name: string, value: boolean | string | undefined): boolean {
  if (typeof value === 'boolean') return value;
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  throw new ApiError('INVALID_PARAMETER', `${name} must be true or false`);
}

/** What the upload page is given of a grant: its credential and what it shows; not the secret's tag. */
function sessionOf(grant: UploadGrant, credential: string): UploadSession {
  const { videoId, appId, expiresAt, keepSource, maxBytes, uploadType } = grant;
  return { credential, expiresAt, videoId, appId, maxBytes, keepSource, uploadType, tusPath: '/upload/tus/' };
}
