/**
 * Delivery (issue 4, item 5): the files behind `MediaSever.PlayURL` / `DownloadURL` + VideoURL,
 * `PicSavePath` (with spec 2.3's `?t=`), and the HLS playlists of `HlsURL`.
 *
 *   GET|HEAD /media/play/<date>/<file>           a rendition, inline
 *   GET|HEAD /media/download/<date>/<file>       the same, as an attachment
 *   GET|HEAD /media/cover/<videoId>.jpg[?t=n]    the cover; t = 2..7 the sizes of spec 2.3
 *   GET|HEAD /media/hls/<videoId>/master.m3u8    the master playlist
 *   GET|HEAD /media/hls/<videoId>/<label>/<file> a variant playlist or segment
 *
 * One of the hot paths (http/hotPaths.ts): answered on node:http, not through Express (issue 14).
 * Range, validators and conditional requests: http/fileResponse.ts. No key is built from request
 * text: a requested name must match the shape we give names, its video id must name a video in
 * status 1, and the file must be one that video lists (a rendition) or one of the fixed names
 * (cover, playlists, segments); the key is then made by mediaKey, the one containment check, and
 * read through the media store only.
 *
 * Media is not authenticated: `<video>` tags and players fetch it without the spec's token. A
 * video's files are as private as its id (a random UUID, 122 bits) is unguessable.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import { ApiError } from '../errors.js';
import { sendMediaObject } from '../http/fileResponse.js';
import { sendHotError, type Answer, type HotHandler, type HotRequest } from '../http/hotPaths.js';
import { HLS_VARIANT_FILE_RE } from '../media/hls.js';
import { isCoverSize, type CoverSizeCache } from '../processing/coverSizeCache.js';
import { COVER_FILE, coverSizeFileName, HLS_MASTER, LABEL_RE, videoIdOfCoverRequest, videoIdOfPlayFile } from '../processing/mediaNames.js';
import { VIDEO_ID_RE, VideoStatus } from '../services/videoStatus.js';
import { mediaKey, UnsafeMediaKeyError, type MediaStore } from '../storage/media/mediaStore.js';
import type { VideoRecord, VideoStore } from '../storage/types.js';

export interface MediaDeliveryDeps {
  videos: VideoStore;
  /** Where media are read from: only through this interface (issue 11). */
  objects: MediaStore;
  covers: CoverSizeCache;
  /** A stalled client's answer is given up after this long (ServerOptions.sendTimeoutMs). */
  sendTimeoutMs: number;
  log: (line: string) => void;
}

/**
 * How long clients and caches may use a media answer before asking again: not at all. A video
 * that is deleted (or otherwise leaves status 1) must stop being served at once, also from the
 * caches between (issue 12); each use revalidates by the ETag, which costs a 304 and no body.
 */
const MAX_AGE_SECONDS = 0;

/** Bytes read from disk per chunk of a streamed body: one read and one socket write per MiB of a multi-GB file. */
const READ_CHUNK_BYTES = 1024 * 1024;

/** On every answer about a file: never sniffed; players on the applications' own pages fetch playlists and segments by XHR (hls.js). */
const FILE_HEADERS = ['X-Content-Type-Options', 'nosniff', 'Access-Control-Allow-Origin', '*'];

/** Every refusal here (unknown, not playable, deleted) is kept by no cache: a successful answer sets its own Cache-Control. */
const REFUSAL_HEADERS = { 'Cache-Control': 'no-store' };

/** Content types by extension, for everything processing writes (a kept source keeps its container's). */
const CONTENT_TYPES: Record<string, string> = {
  mp4: 'video/mp4',
  m4s: 'video/mp4',
  webm: 'video/webm',
  mkv: 'video/x-matroska',
  mov: 'video/quicktime',
  ts: 'video/mp2t',
  avi: 'video/x-msvideo',
  flv: 'video/x-flv',
  mpg: 'video/mpeg',
  wmv: 'video/x-ms-wmv',
  ogv: 'video/ogg',
  '3gp': 'video/3gpp',
  jpg: 'image/jpeg',
  m3u8: 'application/vnd.apple.mpegurl',
};

/** The hot-path handler of `/media/`: every method, every path below it. */
export function mediaDelivery(deps: MediaDeliveryDeps): HotHandler {
  const { videos, objects } = deps;

  /** The video if it is playable; a 404 otherwise (unknown, or not in status 1: nothing of it is served). */
  const playable = async (videoId: string | undefined): Promise<VideoRecord> => {
    const video = videoId && VIDEO_ID_RE.test(videoId) ? await videos.get(videoId) : undefined;
    if (!video || video.status !== VideoStatus.Normal) throw new ApiError('NOT_FOUND');
    return video;
  };

  /** Sends the object under `key`; resolves false, having sent nothing, if there is none. */
  const trySend = (req: IncomingMessage, res: ServerResponse, answer: Answer, key: string, successHeaders?: string[]): Promise<boolean> => {
    const dot = key.lastIndexOf('.');
    return sendMediaObject(req, res, objects, key, {
      answer,
      contentType: CONTENT_TYPES[key.slice(dot + 1).toLowerCase()] ?? 'application/octet-stream',
      maxAgeSeconds: MAX_AGE_SECONDS,
      headers: FILE_HEADERS,
      successHeaders,
      chunkBytes: READ_CHUNK_BYTES,
      sendTimeoutMs: deps.sendTimeoutMs,
    });
  };

  /** {@link trySend}, with a missing object a 404. */
  const send = async (req: IncomingMessage, res: ServerResponse, answer: Answer, key: string, successHeaders?: string[]) => {
    if (!(await trySend(req, res, answer, key, successHeaders))) throw new ApiError('NOT_FOUND');
  };

  const rendition = async (req: IncomingMessage, res: ServerResponse, answer: Answer, date: string, file: string, download: boolean) => {
    const video = await playable(videoIdOfPlayFile(date, file));
    const relative = `${date}/${file}`;
    if (!(await videos.renditions(video.id)).some((x) => x.file === relative)) throw new ApiError('NOT_FOUND');
    // Names are [A-Za-z0-9_.-] (checked by videoIdOfPlayFile and mediaKey): no quoting or encoding needed in the header.
    await send(req, res, answer, mediaKey('play', date, file), download ? ['Content-Disposition', `attachment; filename="${file}"`] : undefined);
  };

  const cover = async (req: IncomingMessage, res: ServerResponse, answer: Answer, file: string, query: string) => {
    const video = await playable(videoIdOfCoverRequest(file));
    // No cover yet: nothing to serve, nor to make a size from. (A cover file gone is a 404 from send.)
    if (!video.coverFile) throw new ApiError('NOT_FOUND');
    // Spec 2.3 lists t = 2 to 7. Any other t (its table starts at 2, so an application may well
    // send t=1 for "the original") gets the full-size cover rather than a broken picture.
    // querystring.parse is the parser Express is set to ('simple'): t=2&t=3 is no size.
    const tParam = query === '' ? undefined : querystring.parse(query).t;
    const t = Number(typeof tParam === 'string' ? tParam : NaN);
    if (!isCoverSize(t)) {
      await send(req, res, answer, mediaKey('covers', video.id, COVER_FILE));
      return;
    }
    // Once made, a size is served with one open; it is made only when that open finds nothing.
    if (await trySend(req, res, answer, mediaKey('covers', video.id, coverSizeFileName(t)))) return;
    const name = await deps.covers.ensure(video.id, t);
    if (!name) throw new ApiError('NOT_FOUND'); // the full-size cover's file is gone
    await send(req, res, answer, mediaKey('covers', video.id, name));
  };

  const hls = async (req: IncomingMessage, res: ServerResponse, answer: Answer, videoId: string, variant: string | undefined, file: string) => {
    const video = await playable(videoId);
    if (variant === undefined) {
      if (file !== HLS_MASTER) throw new ApiError('NOT_FOUND');
      await send(req, res, answer, mediaKey('hls', video.id, HLS_MASTER));
      return;
    }
    if (!LABEL_RE.test(variant) || !HLS_VARIANT_FILE_RE.test(file)) throw new ApiError('NOT_FOUND');
    await send(req, res, answer, mediaKey('hls', video.id, variant, file));
  };

  const route = async (req: IncomingMessage, res: ServerResponse, hot: HotRequest): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      throw new ApiError('METHOD_NOT_ALLOWED');
    }
    const parts = segmentsAfterMedia(hot.path);
    const [kind, a, b, c] = parts;
    switch (parts.length === 0 ? '' : kind!.toLowerCase()) {
      case 'play':
      case 'download':
        if (parts.length === 3) return rendition(req, res, hot.answer, a!, b!, kind!.toLowerCase() === 'download');
        break;
      case 'cover':
        if (parts.length === 2) return cover(req, res, hot.answer, a!, hot.query);
        break;
      case 'hls':
        if (parts.length === 3) return hls(req, res, hot.answer, a!, undefined, b!);
        if (parts.length === 4) return hls(req, res, hot.answer, a!, b!, c!);
        break;
    }
    throw new ApiError('NOT_FOUND');
  };

  return (req, res, hot) =>
    route(req, res, hot).catch((err: unknown) => {
      // mediaKey refuses what the shape checks before it let through: no such file, like any other.
      sendHotError(req, res, err instanceof UnsafeMediaKeyError ? new ApiError('NOT_FOUND') : err, deps.log, REFUSAL_HEADERS, hot.answer);
    });
}

/**
 * The segments of a path below `/media/`, decoded (as Express decodes route parameters), with
 * one trailing slash allowed; a segment that does not decode, or decodes to one holding a `/`,
 * makes the path no media path (empty list). The handlers still check every segment's shape:
 * decoding only lets `%41` stand for `A` as Express did.
 */
function segmentsAfterMedia(path: string): string[] {
  let rest = path.slice('/media/'.length);
  if (rest.endsWith('/')) rest = rest.slice(0, -1);
  const parts = rest.split('/');
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (p === '') return [];
    if (p.includes('%')) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(p);
      } catch {
        return [];
      }
      if (decoded.includes('/')) return [];
      parts[i] = decoded;
    }
  }
  return parts;
}
