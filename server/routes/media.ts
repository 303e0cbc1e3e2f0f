/**
 * Delivery (issue 4, item 5): the files behind `MediaSever.PlayURL` / `DownloadURL` + VideoURL,
 * `PicSavePath` (with spec 2.3's `?t=`), and the HLS playlists of `HlsURL`.
 *
 *   GET|HEAD /media/play/<date>/<file>           a rendition, inline
 *   GET|HEAD /media/download/<date>/<file>       the same, as an attachment
 *   GET|HEAD /media/cover/<videoId>.jpg[?t=n]    the cover; t = 2..7 the sizes of spec 2.3
 *   GET|HEAD /media/hls/<videoId>/master.m3u8    the master playlist
 *   GET|HEAD /media/hls/<videoId>/<label>/<file> a variant playlist or segment
 *   GET|HEAD /media/text/<videoId>/<id>.vtt      a text track (captions, chapters, storyboard), whole
 *   GET|HEAD /media/text/<videoId>/<id>/<n>.jpg  a storyboard's sprite image
 *   GET|HEAD /media/s/<token>/<any of the above>  the same at a signed address (keys/mediaTokens.ts)
 *
 * One of the hot paths (http/hotPaths.ts): answered on node:http, not through Express (issue 14).
 * Range, validators and conditional requests: http/fileResponse.ts. What may be served, and the
 * bytes, come from the media-delivery service (services/mediaDelivery.ts): this file reaches no
 * store (issue 11, item 7). No key is built from request text: a requested name must match the
 * shape we give names, its video id must name a video in status 1, and the file must be one that
 * video lists (a rendition) or one of the fixed names (cover, playlists, segments).
 *
 * Media is not authenticated by the spec's token: `<video>` tags and players fetch it without one.
 * A public application's video's files are as private as its id (a random UUID, 122 bits) is
 * unguessable; a signed application's are served only at addresses whose token opens that video
 * and has not expired (services/mediaAccess.ts).
 */
import crypto from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import { ApiError } from '../core/errors.js';
import { sendHotError, type Answer, type HotHandler, type HotRequest } from '../http/hotPaths.js';
import { noteRoute } from '../http/routeTemplate.js';
import type { MediaDeliveryService } from '../services/mediaDelivery.js';
import { SIGNED_SEGMENT } from '../keys/mediaTokens.js';
import { withSubtitles } from '../media/hls.js';

export interface MediaDeliveryDeps {
  /** What may be served, and the bytes: the only way to media from here. */
  delivery: MediaDeliveryService;
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
  vtt: 'text/vtt; charset=utf-8',
};

/**
 * The route templates of the shapes above, as the request metrics label them (http/routeTemplate.ts):
 * never the raw path, which names a video. A path of no shape keeps the prefix's, `/media/{*rest}`.
 */
const PLAY = '/media/play/:date/:file';
const DOWNLOAD = '/media/download/:date/:file';
const COVER = '/media/cover/:file';
const HLS_MASTER = '/media/hls/:videoId/:file';
const HLS_VARIANT = '/media/hls/:videoId/:label/:file';
const TEXT = '/media/text/:videoId/:file';
const SIGNED_TEXT = `/media/${SIGNED_SEGMENT}/:token/text/:videoId/:file`;
const SPRITE = '/media/text/:videoId/:track/:file';
const SIGNED_SPRITE = `/media/${SIGNED_SEGMENT}/:token/text/:videoId/:track/:file`;
const SIGNED_PLAY = `/media/${SIGNED_SEGMENT}/:token/play/:date/:file`;
const SIGNED_DOWNLOAD = `/media/${SIGNED_SEGMENT}/:token/download/:date/:file`;
const SIGNED_COVER = `/media/${SIGNED_SEGMENT}/:token/cover/:file`;
const SIGNED_HLS_MASTER = `/media/${SIGNED_SEGMENT}/:token/hls/:videoId/:file`;
const SIGNED_HLS_VARIANT = `/media/${SIGNED_SEGMENT}/:token/hls/:videoId/:label/:file`;

/** The hot-path handler of `/media/`: every method, every path below it. */
export function mediaDelivery(deps: MediaDeliveryDeps): HotHandler {
  const { delivery } = deps;

  /** Sends the object under `key`; resolves false, having sent nothing, if there is none. */
  const trySend = (req: IncomingMessage, res: ServerResponse, answer: Answer, key: string, successHeaders?: string[]): Promise<boolean> => {
    const dot = key.lastIndexOf('.');
    return delivery.send(req, res, key, {
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

  const rendition = async (req: IncomingMessage, res: ServerResponse, answer: Answer, token: string | undefined, date: string, file: string, download: boolean) => {
    const key = await delivery.renditionKey(date, file, token);
    // Names are [A-Za-z0-9_.-] (checked by the service's shape checks and mediaKey): no quoting or encoding needed in the header.
    await send(req, res, answer, key, download ? ['Content-Disposition', `attachment; filename="${file}"`] : undefined);
  };

  const cover = async (req: IncomingMessage, res: ServerResponse, answer: Answer, token: string | undefined, file: string, query: string) => {
    // Spec 2.3 lists t = 2 to 7. Any other t (its table starts at 2, so an application may well
    // send t=1 for "the original") gets the full-size cover rather than a broken picture.
    // querystring.parse is the parser Express is set to ('simple'): t=2&t=3 is no size.
    const tParam = query === '' ? undefined : querystring.parse(query).t;
    const target = await delivery.cover(file, Number(typeof tParam === 'string' ? tParam : NaN), token);
    if (target.size === undefined) return send(req, res, answer, target.key);
    // Once made, a size is served with one open; it is made only when that open finds nothing.
    if (await trySend(req, res, answer, target.key)) return;
    const made = await delivery.makeCoverSize(target);
    if (!made) throw new ApiError('NOT_FOUND'); // the full-size cover's file is gone
    await send(req, res, answer, made);
  };

  const hls = async (req: IncomingMessage, res: ServerResponse, answer: Answer, token: string | undefined, videoId: string, variant: string | undefined, file: string) => {
    const target = await delivery.hlsKey(videoId, variant, file, token);
    if (!target.subtitles || target.subtitles.length === 0) return send(req, res, answer, target.key);
    // A master with captions: the stored one with its subtitle renditions added, as the video's
    // caption tracks stand now (processing/textTracks.ts says why it is made here).
    const stored = await delivery.readText(target.key);
    if (stored === undefined) throw new ApiError('NOT_FOUND');
    sendText(req, res, answer, withSubtitles(stored, target.subtitles), CONTENT_TYPES.m3u8!);
  };

  const text = async (req: IncomingMessage, res: ServerResponse, answer: Answer, token: string | undefined, videoId: string, file: string) => {
    await send(req, res, answer, await delivery.textTrackKey(videoId, file, token));
  };

  const route = async (req: IncomingMessage, res: ServerResponse, hot: HotRequest): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      throw new ApiError('METHOD_NOT_ALLOWED');
    }
    let parts = segmentsAfterMedia(hot.path);
    // A signed address: `s/<token>/` before the plain address's segments.
    let token: string | undefined;
    if (parts.length > 2 && parts[0] === SIGNED_SEGMENT) [token, parts] = [parts[1]!, parts.slice(2)];
    const [kind, a, b, c] = parts;
    const signed = token !== undefined;
    switch (parts.length === 0 ? '' : kind!.toLowerCase()) {
      case 'play':
      case 'download': {
        if (parts.length !== 3) break;
        const download = kind!.toLowerCase() === 'download';
        noteRoute(res, download ? (signed ? SIGNED_DOWNLOAD : DOWNLOAD) : signed ? SIGNED_PLAY : PLAY);
        return rendition(req, res, hot.answer, token, a!, b!, download);
      }
      case 'cover':
        if (parts.length !== 2) break;
        noteRoute(res, signed ? SIGNED_COVER : COVER);
        return cover(req, res, hot.answer, token, a!, hot.query);
      case 'text':
        if (parts.length === 4) {
          noteRoute(res, signed ? SIGNED_SPRITE : SPRITE);
          return send(req, res, hot.answer, await delivery.storyboardImageKey(a!, b!, c!, token));
        }
        if (parts.length !== 3) break;
        noteRoute(res, signed ? SIGNED_TEXT : TEXT);
        return text(req, res, hot.answer, token, a!, b!);
      case 'hls':
        if (parts.length === 3) {
          noteRoute(res, signed ? SIGNED_HLS_MASTER : HLS_MASTER);
          return hls(req, res, hot.answer, token, a!, undefined, b!);
        }
        if (parts.length === 4) {
          noteRoute(res, signed ? SIGNED_HLS_VARIANT : HLS_VARIANT);
          return hls(req, res, hot.answer, token, a!, b!, c!);
        }
        break;
    }
    throw new ApiError('NOT_FOUND');
  };

  return (req, res, hot) => route(req, res, hot).catch((err: unknown) => sendHotError(req, res, err, deps.log, REFUSAL_HEADERS, hot.answer));
}

/**
 * Answers GET or HEAD with `body`, made for this request (a master playlist with its captions):
 * its ETag from its bytes, so a player that has it gets a 304; a Range is answered with the
 * whole body (RFC 9110 lets a server ignore it), as the body is a few hundred bytes.
 */
function sendText(req: IncomingMessage, res: ServerResponse, answer: Answer, body: string, contentType: string): void {
  const bytes = Buffer.from(body);
  const etag = `"t${crypto.createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`;
  const headers = [...FILE_HEADERS, 'ETag', etag, 'Cache-Control', `max-age=${MAX_AGE_SECONDS}`];
  const known = (req.headers['if-none-match'] ?? '').split(',').map((t) => t.trim().replace(/^W\//, ''));
  if (known.includes(etag) || known.includes('*')) return answer(res, 304, headers);
  answer(res, 200, [...headers, 'Content-Type', contentType, 'Content-Length', String(bytes.length)], req.method === 'HEAD' ? undefined : bytes);
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
