/**
 * The console's "Try the upload widget" page: a video registered for an application as its own
 * server would register it, and the spec 4.5 values the real widget needs for it. The console
 * holds the admin's rights, not the application's secret, so the token is made here: the secret
 * never leaves the server, and what the browser gets is what an application's page would get.
 */
import { ApiError } from '../core/errors.js';
import { computeToken } from '../core/tokens.js';
import { SourceFileGetType } from '../core/videoStatus.js';
import type { VideoService } from '../services/videoService.js';
import type { TryUploadValues } from '../http/adminApiTypes.js';
import type { AppStore, VideoRecord } from '../storage/types.js';

/** Who registered a try-out video, as its uploader (`CreateUser`): the console, not a person of the application. */
export const TRY_UPLOAD_USER = 'console';

export interface TryUploadDeps {
  apps: Pick<AppStore, 'get'>;
  videos: Pick<VideoService, 'register' | 'get'>;
  /** How far a Timestamp may be from the server's clock (auth.maxClockSkewSeconds): the values' lifetime. */
  maxClockSkewSeconds: number;
  now?: () => number;
}

/** Registers try-out videos and makes their widget values. */
export class TryUpload {
  private readonly now: () => number;

  constructor(private readonly deps: TryUploadDeps) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * Without `videoId`: registers a video for the application (spec 4.2, `SourceFileGetType` 1,
   * uploader "console", title "Try-out <time>"), through the same service and limits as the API.
   * With one of its videos' ids: fresh values for that video (the old ones expired), nothing
   * registered. Refuses a disabled application (102), as the API and the widget would.
   */
  async values(appId: string, videoId?: unknown): Promise<Omit<TryUploadValues, 'scripts'>> {
    const app = await this.deps.apps.get(appId);
    if (!app) throw new ApiError('APP_NOT_FOUND');
    if (app.disabled) throw new ApiError('APP_DISABLED');
    let video: VideoRecord;
    if (videoId === undefined || videoId === null) {
      video = await this.deps.videos.register(app, {
        VideoTitle: `Try-out ${new Date(this.now()).toISOString().slice(0, 19).replace('T', ' ')} UTC`,
        CreateUser: TRY_UPLOAD_USER,
        SourceFileGetType: String(SourceFileGetType.Upload),
      });
    } else {
      if (typeof videoId !== 'string') throw new ApiError('INVALID_PARAMETER', 'videoId must be a string');
      video = await this.deps.videos.get(app, videoId);
    }
    const seconds = Math.floor(this.now() / 1000);
    const timestamp = String(seconds);
    return {
      appId: app.appId,
      timestamp,
      token: computeToken(timestamp, app.secret),
      videoId: video.id,
      expiresAt: new Date((seconds + this.deps.maxClockSkewSeconds) * 1000).toISOString(),
      video: { id: video.id, title: video.title, status: video.status, createUser: video.createUser },
    };
  }
}
