/**
 * What delivery may serve (issue 4, item 5; issue 14): from a requested name to the key of a
 * stored object of a video in status 1, or a refusal; and the answer sent through the media store.
 * The route (routes/media.ts) does the HTTP framing and reaches media through this service only
 * (issue 11, item 7: routes reach services, never stores).
 *
 * No key is built from request text: a requested name must match the shape vop gives names, its
 * video id must name a video in status 1, and the file must be one that video lists (a rendition)
 * or one of the fixed names (cover, playlists, segments); the key is then made by mediaKey, the one
 * containment check, and read through the media store only.
 *
 * A playable video's record and its renditions are kept per process ({@link PlayableVideos}), so
 * that a player's Range requests and an HLS walk do not each read the database: on sql.js that was
 * a tenth of a small answer's CPU, on PostgreSQL a round trip per request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../core/errors.js';
import type { VopEventBus } from '../core/events.js';
import { sendMediaObject, type FileResponseOptions } from '../http/fileResponse.js';
import { HLS_VARIANT_FILE_RE, playlistSafe, SUBTITLES_GROUP, uniqueNames, type MasterMedia } from '../media/hls.js';
import { isCoverSize, type CoverSizeCache } from '../processing/coverSizeCache.js';
import { COVER_FILE, coverSizeFileName, HLS_MASTER, LABEL_RE, subtitleRenditionLabel, TEXT_TRACK_ID_RE, textTrackFile, videoIdOfCoverRequest, videoIdOfPlayFile } from '../processing/mediaNames.js';
import { mediaKey, readSmallObject, UnsafeMediaKeyError, type MediaStore } from '../storage/media/mediaStore.js';
import { ObjectInfoCache, type ObjectInfoCacheOptions } from '../storage/media/objectInfoCache.js';
import type { AppStore, TextTrackRecord, VideoRecord, VideoStore } from '../storage/types.js';
import type { MediaScope, MediaTokenRefusal, MediaTokens } from '../keys/mediaTokens.js';
import { VIDEO_ID_RE, VideoStatus } from '../core/videoStatus.js';

export interface MediaDeliveryDeps {
  videos: VideoStore;
  /** Whose video it is decides whether its plain address is served (AppRecord.mediaAccess). */
  apps: Pick<AppStore, 'get'>;
  /** Checks the tokens of signed addresses (keys/mediaTokens.ts), from memory. */
  tokens: MediaTokens;
  /** Where media are read from: only through this interface (issue 11). */
  objects: MediaStore;
  covers: CoverSizeCache;
  /** `video.status` on `events.everywhere` (every node's) tells the cache a video changed. */
  events: VopEventBus;
  /** The cache of playable videos: see {@link PlayableVideoCacheOptions}. */
  cache?: Partial<PlayableVideoCacheOptions>;
  /** The cache of objects' info, for a store without local files: see {@link ObjectInfoCache}. */
  objectInfo?: ObjectInfoCacheOptions;
}

export interface PlayableVideoCacheOptions {
  /**
   * Longest time a video's entry is used without asking the database again. A status change
   * empties it at once (its event); this bounds what an event lost on the way from another node
   * (the relay's listening connection down, cluster mode) could leave stale.
   */
  ttlMs: number;
  /** Most videos kept; the oldest entry goes first. */
  maxVideos: number;
}

const DEFAULT_CACHE: PlayableVideoCacheOptions = { ttlMs: 1000, maxVideos: 10_000 };

/** A video in status 1 as delivery needs it. */
export interface PlayableVideo {
  id: string;
  /** The full-size cover's file name, '' if none yet. */
  coverFile: string;
  /** Its renditions' `VideoURL`s (`<date>/<file>`). */
  renditions: ReadonlySet<string>;
  /** Its application serves signed addresses only: the plain ones are refused. */
  signed: boolean;
  /** Its text tracks (captions, chapters), oldest first. */
  textTracks: readonly TextTrackRecord[];
}

/** A cover to send: the key to try, and the size to make when it is missing. */
export interface CoverTarget {
  videoId: string;
  key: string;
  /** Spec 2.3's size `t`, when `key` is that size (made on first request by {@link MediaDeliveryService.makeCoverSize}). */
  size?: number;
}

export class MediaDeliveryService {
  private readonly playableVideos: PlayableVideos;
  /** Objects' info between requests, for a store without local files (S3): one call per GET, none per HEAD. */
  private readonly objectInfo: ObjectInfoCache | undefined;

  constructor(private readonly deps: MediaDeliveryDeps) {
    this.playableVideos = new PlayableVideos(deps.videos, deps.apps, deps.events, { ...DEFAULT_CACHE, ...deps.cache });
    if (!deps.objects.openLocalFileSync) {
      const objectInfo = new ObjectInfoCache(deps.objectInfo);
      deps.events.everywhere.on('video.status', (e) => objectInfo.forgetVideo(e.videoId));
      // The ladder rewrote the master playlist of a playable video: its size and tag changed.
      deps.events.everywhere.on('video.renditions', (e) => objectInfo.forgetVideo(e.videoId));
      this.objectInfo = objectInfo;
    }
  }

  /**
   * The video if it is playable and may be served at this address; a 404 if it is not playable
   * (unknown, or not in status 1: nothing of it is served), a 403 if the address is refused.
   * `token`: the signed address's, checked first and from memory (no database read for a forged
   * one); absent for a plain address, which a signed application's video is not served at.
   */
  async playable(videoId: string | undefined, token: string | undefined, scope: MediaScope = 'media'): Promise<PlayableVideo> {
    if (!videoId || !VIDEO_ID_RE.test(videoId)) throw new ApiError('NOT_FOUND');
    if (token !== undefined && !this.deps.tokens.known(token, videoId, scope)) {
      const refused = await this.deps.tokens.check(token, videoId, scope);
      if (refused) throw new ApiError('MEDIA_ADDRESS_REFUSED', TOKEN_REFUSALS[refused]);
    }
    const video = await this.playableVideos.get(videoId);
    if (!video) throw new ApiError('NOT_FOUND');
    if (video.signed && token === undefined) {
      throw new ApiError('MEDIA_ADDRESS_REFUSED', "this video's application serves its media at signed addresses only: ask the API for the video's addresses");
    }
    return video;
  }

  /** The key of rendition `<date>/<file>` (spec 2.5 VideoURL) of a playable video that lists it. */
  async renditionKey(date: string, file: string, token: string | undefined): Promise<string> {
    const video = await this.playable(videoIdOfPlayFile(date, file), token);
    if (!video.renditions.has(`${date}/${file}`)) throw new ApiError('NOT_FOUND');
    return key('play', date, file);
  }

  /**
   * The cover `<videoId>.jpg` (the address of `PicSavePath`) at spec 2.3's size `t`: any `t`
   * other than 2 to 7 gets the full-size cover.
   */
  async cover(file: string, t: number, token: string | undefined): Promise<CoverTarget> {
    const video = await this.playable(videoIdOfCoverRequest(file), token, 'cover');
    // No cover yet: nothing to serve, nor to make a size from. (A cover file gone is a 404 on sending.)
    if (!video.coverFile) throw new ApiError('NOT_FOUND');
    if (!isCoverSize(t)) return { videoId: video.id, key: key('covers', video.id, COVER_FILE) };
    return { videoId: video.id, key: key('covers', video.id, coverSizeFileName(t)), size: t };
  }

  /** Makes a cover's size (it was found missing) and resolves with its key; undefined if the full-size cover is gone. */
  async makeCoverSize(target: CoverTarget): Promise<string | undefined> {
    if (target.size === undefined || !isCoverSize(target.size)) return undefined;
    const name = await this.deps.covers.ensure(target.videoId, target.size);
    return name ? key('covers', target.videoId, name) : undefined;
  }

  /**
   * The key of an HLS file: the master playlist (`variant` undefined), a variant's playlist or
   * segment; with the master, the subtitle renditions it is served with (its caption tracks).
   */
  async hlsKey(videoId: string, variant: string | undefined, file: string, token: string | undefined): Promise<{ key: string; subtitles?: MasterMedia[] }> {
    const video = await this.playable(videoId, token);
    if (variant === undefined) {
      if (file !== HLS_MASTER) throw new ApiError('NOT_FOUND');
      return { key: key('hls', video.id, HLS_MASTER), subtitles: subtitleRenditions(video.textTracks) };
    }
    if (!LABEL_RE.test(variant) || !HLS_VARIANT_FILE_RE.test(file)) throw new ApiError('NOT_FOUND');
    return { key: key('hls', video.id, variant, file) };
  }

  /** The key of a text track's WebVTT file `<id>.vtt` of a playable video that has it. */
  async textTrackKey(videoId: string, file: string, token: string | undefined): Promise<string> {
    const video = await this.playable(videoId, token);
    const id = file.endsWith('.vtt') ? file.slice(0, -'.vtt'.length) : '';
    if (!TEXT_TRACK_ID_RE.test(id) || !video.textTracks.some((t) => t.id === id)) throw new ApiError('NOT_FOUND');
    return key('text', video.id, textTrackFile(id));
  }

  /** The key of a storyboard's sprite `<n>.jpg` (`text/<videoId>/<trackId>/<n>.jpg`) of a playable video that has that storyboard. */
  async storyboardImageKey(videoId: string, trackId: string, file: string, token: string | undefined): Promise<string> {
    const video = await this.playable(videoId, token);
    if (!TEXT_TRACK_ID_RE.test(trackId) || !/^\d{1,4}\.jpg$/.test(file) || !video.textTracks.some((t) => t.id === trackId && t.kind === 'storyboard')) throw new ApiError('NOT_FOUND');
    return key('text', video.id, trackId, file);
  }

  /** The text of a small object this service made (a master playlist); undefined when there is none. */
  async readText(objectKey: string): Promise<string | undefined> {
    return (await readSmallObject(this.deps.objects, objectKey))?.toString('utf8');
  }

  /**
   * Sends the object under `key` (one this service made); resolves false, having sent nothing, if
   * there is none. See http/fileResponse.ts.
   */
  send(req: IncomingMessage, res: ServerResponse, objectKey: string, o: FileResponseOptions): Promise<boolean> {
    return sendMediaObject(req, res, this.deps.objects, objectKey, this.objectInfo ? { ...o, objectInfo: this.objectInfo } : o);
  }
}

/**
 * The master playlist's subtitle renditions of a video's caption tracks: named by their labels,
 * none DEFAULT (a viewer turns captions on), those in a language AUTOSELECT (a player may turn on
 * the viewer's), forced ones FORCED.
 */
export function subtitleRenditions(tracks: readonly TextTrackRecord[]): MasterMedia[] {
  const captions = tracks.filter((t) => t.kind === 'captions');
  const names = uniqueNames(captions.map((t) => playlistSafe(t.label) || t.id));
  return captions.map((t, i) => ({
    type: 'SUBTITLES' as const,
    groupId: SUBTITLES_GROUP,
    name: names[i]!,
    ...(t.language ? { language: t.language } : {}),
    default: false,
    autoselect: t.language !== '',
    ...(t.forced ? { forced: true } : {}),
    uri: `${subtitleRenditionLabel(t.id)}/index.m3u8`,
  }));
}

/** What a refused token is told (the detail of MEDIA_ADDRESS_REFUSED). */
const TOKEN_REFUSALS: Record<MediaTokenRefusal, string> = {
  malformed: 'the address is not one vop signed',
  altered: 'the address was altered, or its key was revoked',
  expired: 'the address has expired: ask the API for the video again',
  scope: "the address's token opens another part of the video (a cover's opens the cover only)",
};

/** mediaKey, with a refusal a 404 like any other missing file: the shape checks before it let the name through. */
function key(...[area, ...segments]: Parameters<typeof mediaKey>): string {
  try {
    return mediaKey(area, ...segments);
  } catch (err) {
    if (err instanceof UnsafeMediaKeyError) throw new ApiError('NOT_FOUND');
    throw err;
  }
}

/**
 * Playable videos by id, each with its renditions, kept for at most `ttlMs`. A `video.status` event
 * for a video (from any node: `events.everywhere`, HlsPresence's way) drops its entry at once: a
 * video leaves status 1 before its files go (deletion), and its renditions and cover change only
 * while it is out of status 1 (a transcode runs in 5), so an entry never names files the video no
 * longer has for longer than its event takes to arrive. The ladder adds renditions in status 1
 * and never removes one; its `video.renditions` event drops the entry too, so the new files are
 * served as soon as the event comes. A look-up under way when an event comes
 * is answered but not kept (the change counter), so a read from before the change cannot outlive
 * it. Only videos in status 1 are kept: a refusal always asks the database. Whether its application
 * serves signed addresses only is kept with it: a change of that setting reaches every node's
 * delivery within `ttlMs`.
 */
class PlayableVideos {
  private readonly entries = new Map<string, { video: PlayableVideo; until: number }>();
  /** Counts status changes: a look-up's answer is kept only if none came while it ran. */
  private changes = 0;

  constructor(
    private readonly videos: VideoStore,
    private readonly apps: Pick<AppStore, 'get'>,
    events: VopEventBus,
    private readonly o: PlayableVideoCacheOptions,
  ) {
    const forget = (e: { videoId: string }) => {
      this.changes++;
      this.entries.delete(e.videoId);
    };
    events.everywhere.on('video.status', forget);
    // The ladder added renditions to a playable video (processing/ladderJob.ts).
    events.everywhere.on('video.renditions', forget);
    // Its application added or removed a caption track.
    events.everywhere.on('video.textTracks', forget);
  }

  async get(videoId: string): Promise<PlayableVideo | undefined> {
    const now = Date.now();
    const hit = this.entries.get(videoId);
    if (hit && hit.until > now) return hit.video;
    const changesBefore = this.changes;
    const record: VideoRecord | undefined = await this.videos.get(videoId);
    if (!record || record.status !== VideoStatus.Normal) return undefined;
    const [renditions, app, textTracks] = await Promise.all([this.videos.renditions(videoId), this.apps.get(record.appId), this.videos.textTracks(videoId)]);
    const video: PlayableVideo = { id: record.id, coverFile: record.coverFile, renditions: new Set(renditions.map((r) => r.file)), signed: app?.mediaAccess === 'signed', textTracks };
    if (this.changes === changesBefore) {
      this.entries.delete(videoId); // re-inserted last: the map's order is the entries' age
      if (this.entries.size >= this.o.maxVideos) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(videoId, { video, until: now + this.o.ttlMs });
    }
    return video;
  }
}
