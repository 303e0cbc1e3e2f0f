import { ApiError } from '../core/errors.js';
import type { AuthService } from '../auth/authService.js';
import { SourceFileGetType, VIDEO_ID_RE } from '../core/videoStatus.js';
import type { LocalMediaRoot } from '../storage/media/localMediaRoot.js';
import type { AppRecord, AppStore, VideoRecord, VideoStore } from '../storage/types.js';
import type { IngestOptions, UploadType } from './ingestOptions.js';
import { SourceIntake, awaitsUpload, notAVideoError } from './sourceIntake.js';
import { obviousNonVideo } from './quickLook.js';
import { UploadCredentials, type UploadGrant } from './uploadCredential.js';
import type { SharedReservations } from './sharedReservations.js';
import { UploadRoom } from './uploadRoom.js';

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
  /** The reservations every node sees (the one process's, embedded), and this node's part in them (issue 12, item 7). */
  shared: SharedReservations;
}

/**
 * Who may send a video's file, and where it goes once complete. The tus endpoint, the
 * multipart endpoint, the upload page and the pull job all ask here.
 */
export class IngestService {
  readonly intake: SourceIntake;
  /** The disk space promised to the uploads under way, and the uploads themselves (uploadRoom.ts). */
  readonly room: UploadRoom;
  private readonly now: () => number;

  constructor(private readonly deps: IngestServiceDeps) {
    this.intake = deps.intake;
    this.now = deps.now ?? Date.now;
    this.room = new UploadRoom({ media: deps.media, options: deps.options, now: this.now, shared: deps.shared });
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
