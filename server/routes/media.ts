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
 * Range, validators and conditional requests: http/fileResponse.ts. No path is built from
 * request text: a requested name must match the shape we give names, its video id must name a
 * video in status 1, and the file must be one that video lists (a rendition) or one of the fixed
 * names (cover, playlists, segments); the relative path then goes through the media store's
 * containment check before anything is opened.
 *
 * Media is not authenticated: `<video>` tags and players fetch it without the spec's token. A
 * video's files are as private as its id (a random UUID, 122 bits) is unguessable.
 */
import path from 'node:path';
import express, { type Request, type Response, type Router } from 'express';
import { ApiError } from '../errors.js';
import { FileNotFoundError, sendFileResponse } from '../http/fileResponse.js';
import { HLS_VARIANT_FILE_RE } from '../media/hls.js';
import { isCoverSize, type CoverSizeCache } from '../processing/coverSizeCache.js';
import { COVER_FILE, coverSizeFileName, HLS_MASTER, LABEL_RE, videoIdOfCoverRequest, videoIdOfPlayFile } from '../processing/mediaNames.js';
import { VIDEO_ID_RE, VideoStatus } from '../services/videoStatus.js';
import type { LocalMediaStore, MediaArea } from '../storage/mediaStore.js';
import type { VideoRecord, VideoStore } from '../storage/types.js';

export interface MediaRouteDeps {
  videos: VideoStore;
  media: LocalMediaStore;
  covers: CoverSizeCache;
  /** A stalled client's answer is given up after this long (ServerOptions.sendTimeoutMs). */
  sendTimeoutMs: number;
}

/**
 * How long clients and caches may use a media answer before asking again: not at all. A video
 * that is deleted (or otherwise leaves status 1) must stop being served at once, also from the
 * caches between (issue 12); each use revalidates by the ETag, which costs a 304 and no body.
 */
const MAX_AGE_SECONDS = 0;

/** Bytes read from disk per chunk: one read and one socket write per MiB of a multi-GB file. */
const READ_CHUNK_BYTES = 1024 * 1024;

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

export function mediaRouter(deps: MediaRouteDeps): Router {
  const { videos, media } = deps;
  const r = express.Router();
  // Every refusal here (unknown, not playable, deleted) is kept by no cache: a successful
  // answer sets its own Cache-Control.
  r.use('/media', (_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });

  /** The video if it is playable; a 404 otherwise (unknown, or not in status 1: nothing of it is served). */
  const playable = async (videoId: string | undefined): Promise<VideoRecord> => {
    const video = videoId && VIDEO_ID_RE.test(videoId) ? await videos.get(videoId) : undefined;
    if (!video || video.status !== VideoStatus.Normal) throw new ApiError('NOT_FOUND');
    return video;
  };

  /**
   * Sends `relative` from `area`, after the containment check; resolves false, having sent
   * nothing, if the file is not there.
   */
  const trySend = async (req: Request, res: Response, area: MediaArea, relative: string, headers?: Record<string, string>): Promise<boolean> => {
    const file = media.resolveRelative(area, relative);
    if (!file) return false;
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Players on the applications' own pages fetch playlists and segments by XHR (hls.js).
    res.setHeader('Access-Control-Allow-Origin', '*');
    const ext = path.extname(file).slice(1).toLowerCase();
    try {
      await sendFileResponse(req, res, file, {
        contentType: CONTENT_TYPES[ext] ?? 'application/octet-stream',
        maxAgeSeconds: MAX_AGE_SECONDS,
        headers,
        chunkBytes: READ_CHUNK_BYTES,
        sendTimeoutMs: deps.sendTimeoutMs,
      });
      return true;
    } catch (err) {
      if (err instanceof FileNotFoundError) return false;
      throw err;
    }
  };

  /** {@link trySend}, with a missing file a 404. */
  const send = async (req: Request, res: Response, area: MediaArea, relative: string, headers?: Record<string, string>) => {
    if (!(await trySend(req, res, area, relative, headers))) throw new ApiError('NOT_FOUND');
  };

  const rendition = (download: boolean) => async (req: Request, res: Response) => {
    const date = String(req.params.date);
    const file = String(req.params.file);
    const video = await playable(videoIdOfPlayFile(date, file));
    const relative = `${date}/${file}`;
    if (!(await videos.renditions(video.id)).some((x) => x.file === relative)) throw new ApiError('NOT_FOUND');
    // Names are [A-Za-z0-9_.-] (checked above): no quoting or encoding needed in the header.
    await send(req, res, 'play', relative, download ? { 'Content-Disposition': `attachment; filename="${file}"` } : undefined);
  };

  r.get('/media/play/:date/:file', rendition(false));
  r.get('/media/download/:date/:file', rendition(true));

  r.get('/media/cover/:file', async (req, res) => {
    const video = await playable(videoIdOfCoverRequest(String(req.params.file)));
    // No cover yet: nothing to serve, nor to make a size from. (A cover file gone is a 404 from send.)
    if (!video.coverFile) throw new ApiError('NOT_FOUND');
    // Spec 2.3 lists t = 2 to 7. Any other t (its table starts at 2, so an application may well
    // send t=1 for "the original") gets the full-size cover rather than a broken picture.
    const t = Number(typeof req.query.t === 'string' ? req.query.t : NaN);
    if (!isCoverSize(t)) {
      await send(req, res, 'covers', `${video.id}/${COVER_FILE}`);
      return;
    }
    // Once made, a size is served with one open; it is made only when that open finds nothing.
    if (await trySend(req, res, 'covers', `${video.id}/${coverSizeFileName(t)}`)) return;
    const name = await deps.covers.ensure(video.id, t);
    if (!name) throw new ApiError('NOT_FOUND'); // the full-size cover's file is gone
    await send(req, res, 'covers', `${video.id}/${name}`);
  });

  r.get('/media/hls/:videoId/:file', async (req, res) => {
    const video = await playable(String(req.params.videoId));
    if (req.params.file !== HLS_MASTER) throw new ApiError('NOT_FOUND');
    await send(req, res, 'hls', `${video.id}/${HLS_MASTER}`);
  });

  r.get('/media/hls/:videoId/:variant/:file', async (req, res) => {
    const video = await playable(String(req.params.videoId));
    const variant = String(req.params.variant);
    const file = String(req.params.file);
    if (!LABEL_RE.test(variant) || !HLS_VARIANT_FILE_RE.test(file)) throw new ApiError('NOT_FOUND');
    await send(req, res, 'hls', `${video.id}/${variant}/${file}`);
  });

  r.all('/media/{*rest}', (req, res) => {
    if (req.method === 'GET' || req.method === 'HEAD') throw new ApiError('NOT_FOUND');
    res.set('Allow', 'GET, HEAD');
    throw new ApiError('METHOD_NOT_ALLOWED');
  });
  return r;
}
