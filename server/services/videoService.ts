import crypto from 'node:crypto';
import { ApiError } from '../core/errors.js';
import type { VopEventBus } from '../core/events.js';
import type { AppRecord, AppStore, Page, RenditionRecord, VideoRecord, VideoStore, WindowCounters } from '../storage/types.js';
import { FIELD_LIMITS, cutToCodePoints, normalizeTags } from './fields.js';
import { SourceFileGetType, VIDEO_ID_RE, VideoStatus } from '../core/videoStatus.js';

/** Options of {@link VideoService}. */
export interface VideoServiceOptions {
  /** Largest PageSize a list call accepts; larger asks get 202 Invalid Paging. */
  maxPageSize: number;
  /** Spec 4.3: default PageSize of the uploader list. */
  defaultUserPageSize: number;
  /** Spec 4.4: default PageSize of the full list. */
  defaultListPageSize: number;
  /**
   * Registrations one application may make per minute (a burst of that many, refilled evenly);
   * past it, 308. 0: no limit. On by default: an application server in a loop, or a stolen page
   * credential, otherwise fills the database as fast as it can call (issue 12, item 10).
   */
  registrationsPerMinute: number;
  /** Videos one application may have (deleted ones not counted); past it, 309. 0: no quota, the default. */
  maxVideosPerApp: number;
}

export const DEFAULT_VIDEO_OPTIONS: VideoServiceOptions = {
  maxPageSize: 200,
  defaultUserPageSize: 10,
  defaultListPageSize: 50,
  registrationsPerMinute: 600,
  maxVideosPerApp: 0,
};

/** The registration form of spec 4.2, as raw strings (undefined when absent). */
export interface RegistrationInput {
  VideoTitle?: string;
  Description?: string;
  Tags?: string;
  Actors?: string;
  CreateUser?: string;
  SourceFileGetType?: string;
  SourceFilePath?: string;
}

const MAX_PAGE_INDEX = 10_000_000;

/** Every status but 0 (waiting for deletion): the videos a quota counts. */
const LIVE_STATUSES = Object.values(VideoStatus).filter((v) => v !== VideoStatus.WaitingForDeletion);

/** Videos as applications see them: register, read, list (spec 4.1 to 4.4). */
export class VideoService {
  constructor(
    private readonly videos: VideoStore,
    private readonly apps: AppStore,
    /** Where the registration rate counts (Stores.counters: every node's in cluster mode). */
    private readonly counters: WindowCounters,
    private readonly events: VopEventBus,
    private readonly opts: VideoServiceOptions = DEFAULT_VIDEO_OPTIONS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The per-application rate and quota of registrations: checked before anything is written,
   * so a refused call costs one count at most. The quota counts the application's videos that
   * are not deleted (status 0).
   */
  private async admitRegistration(appId: string): Promise<void> {
    const perMinute = this.opts.registrationsPerMinute;
    if (perMinute > 0) {
      // A fixed minute per application, counted in Stores.counters (in cluster mode the database,
      // each call one upsert, so the rate holds across nodes rather than per node).
      const now = this.now();
      const key = `registrations:${appId}`;
      if ((await this.counters.hit(key, 60_000, now)) > perMinute) {
        const waitSeconds = Math.max(1, Math.ceil(((await this.counters.windowEnd(key, 60_000, now)) - now) / 1000));
        throw new ApiError('REGISTRATION_RATE_LIMITED', `at most ${perMinute} registrations a minute per application; try again in ${waitSeconds} s`);
      }
    }
    const quota = this.opts.maxVideosPerApp;
    if (quota > 0) {
      const { total: live } = await this.videos.search({ appId, statuses: LIVE_STATUSES }, { offset: 0, limit: 1 });
      if (live >= quota) throw new ApiError('VIDEO_QUOTA_EXCEEDED', `this application has ${live} videos, its quota is ${quota}; delete some or ask the admin for more`);
    }
  }

  /** Spec 4.2. Resolves with the new video once it is durable. */
  async register(app: AppRecord, input: RegistrationInput): Promise<VideoRecord> {
    await this.admitRegistration(app.appId);
    const title = cutToCodePoints(input.VideoTitle ?? '', FIELD_LIMITS.VideoTitle);
    if (title.trim() === '') throw new ApiError('MISSING_PARAMETER', 'VideoTitle');
    const typeText = (input.SourceFileGetType ?? '').trim();
    if (typeText === '') throw new ApiError('MISSING_PARAMETER', 'SourceFileGetType');
    // Spec 4.2 rule 3 leaves other values open: we refuse them rather than guess.
    if (typeText !== '1' && typeText !== '2') throw new ApiError('INVALID_PARAMETER', 'SourceFileGetType must be 1 (upload) or 2 (download from URL)');
    const sourceType = Number(typeText);

    let sourceUrl = '';
    if (sourceType === SourceFileGetType.Download) {
      // Spec 4.2 rule 2 and section 8: cut to 200 characters, then it must be a full address
      // with a file extension.
      sourceUrl = cutToCodePoints((input.SourceFilePath ?? '').trim(), FIELD_LIMITS.SourceFilePath);
      if (sourceUrl === '') throw new ApiError('MISSING_PARAMETER', 'SourceFilePath (required when SourceFileGetType is 2)');
      checkSourceUrl(sourceUrl);
    }
    // Rule 1: with type 1 SourceFilePath is left empty; anything sent there is ignored.

    const now = this.now();
    const video: VideoRecord = {
      id: crypto.randomUUID(),
      appId: app.appId,
      title,
      description: cutToCodePoints(input.Description ?? '', FIELD_LIMITS.Description),
      tags: normalizeTags(input.Tags ?? ''),
      actors: cutToCodePoints(input.Actors ?? '', FIELD_LIMITS.Actors),
      createUser: cutToCodePoints(input.CreateUser ?? '', FIELD_LIMITS.CreateUser),
      status: sourceType === SourceFileGetType.Upload ? VideoStatus.NotUploaded : VideoStatus.WaitingForDownload,
      statusReason: '',
      sourceType,
      sourceUrl,
      duration: 0,
      coverFile: '',
      sourceFile: '',
      keepSource: false,
      createdAt: now,
      updatedAt: now,
    };
    await this.videos.insert(video);
    this.events.emit('video.registered', { videoId: video.id, appId: app.appId, sourceType });
    return video;
  }

  /** Spec 4.1: one of the caller's own videos. Another application's video is "not found". */
  async get(app: AppRecord, id: string | undefined): Promise<VideoRecord> {
    const video = await this.videos.get(videoIdOf(id));
    if (!video || video.appId !== app.appId) throw new ApiError('VIDEO_NOT_FOUND');
    return video;
  }

  /** As {@link get}, with the video's renditions as they were at the same moment (the detail call). */
  async getWithRenditions(app: AppRecord, id: string | undefined): Promise<{ video: VideoRecord; renditions: RenditionRecord[] }> {
    const found = await this.videos.getWithRenditions(videoIdOf(id));
    if (!found || found.video.appId !== app.appId) throw new ApiError('VIDEO_NOT_FOUND');
    return found;
  }

  /** Spec 4.4: the caller's videos, newest first. */
  async list(app: AppRecord, pageIndex?: string, pageSize?: string): Promise<{ total: number; items: VideoRecord[] }> {
    return this.videos.listByApp(app.appId, this.page(pageIndex, pageSize, this.opts.defaultListPageSize));
  }

  /**
   * Spec 4.3: the videos one uploader registered through application `aId`. The caller may name
   * itself, or an application the admin granted it; any other aId is refused the same way
   * whether it exists or not.
   */
  async listByUser(
    app: AppRecord,
    aId: string | undefined,
    createUser: string | undefined,
    pageIndex?: string,
    pageSize?: string,
  ): Promise<{ total: number; items: VideoRecord[] }> {
    if (!createUser) throw new ApiError('MISSING_PARAMETER', 'createUser');
    const target = (aId ?? '').trim();
    if (target === '') throw new ApiError('MISSING_PARAMETER', 'aId');
    const page = this.page(pageIndex, pageSize, this.opts.defaultUserPageSize);
    if (target !== app.appId && !(await this.apps.grants(app.appId)).includes(target)) {
      throw new ApiError('ACCESS_DENIED', `this application may not list the videos of application ${target}`);
    }
    return this.videos.listByAppAndUser(target, cutToCodePoints(createUser, FIELD_LIMITS.CreateUser), page);
  }

  private page(indexText: string | undefined, sizeText: string | undefined, defaultSize: number): Page {
    const index = parseWhole(indexText, 0);
    if (index === undefined || index > MAX_PAGE_INDEX) throw new ApiError('INVALID_PAGING', 'PageIndex must be a whole number from 0');
    const size = parseWhole(sizeText, defaultSize);
    if (size === undefined || size < 1 || size > this.opts.maxPageSize) {
      throw new ApiError('INVALID_PAGING', `PageSize must be a whole number from 1 to ${this.opts.maxPageSize}`);
    }
    return { offset: index * size, limit: size };
  }
}

/** Spec 4.1's Id, checked: a video id (any case), or a refusal that says what is wrong. */
function videoIdOf(id: string | undefined): string {
  const videoId = (id ?? '').trim().toLowerCase();
  if (videoId === '') throw new ApiError('MISSING_PARAMETER', 'Id');
  if (!VIDEO_ID_RE.test(videoId)) throw new ApiError('INVALID_PARAMETER', 'Id is not a video id');
  return videoId;
}

/** An absent or empty value gives the default; anything but digits gives undefined. */
function parseWhole(text: string | undefined, dflt: number): number | undefined {
  const t = (text ?? '').trim();
  if (t === '') return dflt;
  if (!/^\d{1,9}$/.test(t)) return undefined;
  return Number(t);
}

function checkSourceUrl(value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ApiError('INVALID_PARAMETER', 'SourceFilePath must be a full http or https address');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ApiError('INVALID_PARAMETER', 'SourceFilePath must be http or https');
  const last = decodeURIComponentSafe(url.pathname.split('/').pop() ?? '');
  if (!/\.[A-Za-z0-9]{1,10}$/.test(last)) throw new ApiError('INVALID_PARAMETER', 'SourceFilePath must name a file with its extension (spec 4.2 rule 2)');
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
