/**
 * Answers GET and HEAD with a media object: validators, conditional requests and single byte
 * ranges (RFC 9110 sections 8.8, 13 and 14), read through the MediaStore only.
 *
 * Two ways to the bytes, the same HTTP for both:
 * - a store with {@link MediaStore.openLocalFileSync} (local disk) opens the file once and answers
 *   from that descriptor: a body up to {@link SYNC_READ_MAX_BYTES} is read with one blocking
 *   pread and sent with the headers in one write, as nginx does (a Range of 1 or 64 KiB, a
 *   playlist, a cover); one up to {@link CACHED_READ_MAX_BYTES} (an HLS segment) is read in the
 *   thread pool and sent the same way; a larger one streams through two reused buffers. Both
 *   read through the store's cache of recently read blocks, which spares most reads. This is what makes a
 *   small Range answer cost about what a bare Node server answering the same bytes costs: every
 *   trip through libuv's thread pool costs 30 to 50 µs of CPU on this hardware;
 * - any other store (S3): {@link MediaStore.stat} for the validators (kept between requests by
 *   an {@link ObjectInfoCache} when given one), then {@link MediaStore.openRange} for the bytes,
 *   with If-Match on the info's etag, piped out.
 *
 * Why not Express's `res.sendFile` (the `send` module), which does the same HTTP: it allocates a
 * fresh buffer for every chunk (a third more CPU per byte on multi-gigabyte renditions than two
 * reused ones), reads by path rather than through the store, and costs thread-pool trips a small
 * answer cannot afford. The HTTP rules follow `send`'s choices where the RFC leaves room (weak
 * comparison for ETags, a reversed range answered 416, several ranges answered with the whole
 * file), so clients see the same behaviour.
 *
 * A client that stops taking bytes has its answer given up after `sendTimeoutMs` (nginx's
 * `send_timeout`): it would otherwise pin a descriptor and the buffers for ever. Any progress
 * counts, not only a whole chunk taken: see {@link SendTimeout}.
 */
import { SendTimeout } from './sendTimeout.js';
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { writeAnswer, type Answer } from './hotPaths.js';
import { MediaObjectChangedError, MediaObjectNotFoundError, type LocalMediaFile, type MediaObjectInfo, type MediaStore } from '../storage/media/mediaStore.js';
import type { ObjectInfoCache } from '../storage/media/objectInfoCache.js';

export interface FileResponseOptions {
  /** Content-Type of a 200 or 206 answer. */
  contentType: string;
  /** `Cache-Control: public, max-age=<n>`; 0: `public, no-cache` (kept, but revalidated by its ETag on every use). */
  maxAgeSeconds: number;
  /** Headers of every answer about the object (200, 206, 304, 412, 416): CORS, nosniff. */
  headers?: readonly string[];
  /** Headers of a successful answer only (200, 206), as name, value, name, value: Content-Disposition, say. */
  successHeaders?: readonly string[];
  /** Bytes read per chunk when a body is streamed; two such buffers serve the whole answer. */
  chunkBytes: number;
  /** How long the socket may take no byte at all before the answer is given up ({@link SendTimeout}). */
  sendTimeoutMs: number;
  /**
   * Sends an answer made whole (no body, or one read at once): the hot paths' batched write
   * (http/hotPaths.ts). Default: at once.
   */
  answer?: Answer;
  /** For a store without local files: objects' info kept between requests (see {@link ObjectInfoCache}). */
  objectInfo?: ObjectInfoCache;
}

/** Writes a whole answer at once. */
const answerNow: Answer = (res, status, headers, body) => writeAnswer(res, status, headers, body);

/**
 * Bodies up to this size are read from a local file with one blocking pread (microseconds from
 * the page cache; nginx reads every file so). Larger ones are read in the thread pool, chunk by
 * chunk, so that a cold read of a large range never holds the event loop for long.
 */
export const SYNC_READ_MAX_BYTES = 128 * 1024;

/**
 * Bodies up to this size (HLS segments, covers) are read whole, through the store's cache of
 * recently read blocks (storage/media/openFileCache.ts), and sent with their headers in one write;
 * larger ones (renditions, downloads) stream through two reused buffers without touching that
 * cache, so that one download does not push out what many viewers share.
 */
export const CACHED_READ_MAX_BYTES = 1024 * 1024;

/**
 * Sends the object under `key` (a key made by mediaKey: the caller has decided it may be served).
 * Resolves true once the answer is complete or the client has gone; false, having sent nothing,
 * if there is no object under `key`.
 */
export async function sendMediaObject(req: IncomingMessage, res: ServerResponse, objects: MediaStore, key: string, o: FileResponseOptions): Promise<boolean> {
  // The client left while the request waited (a video lookup, a cover made): nothing to open for it.
  if (res.destroyed) return true;
  if (objects.openLocalFileSync) {
    const file = objects.openLocalFileSync(key);
    if (!file) return false;
    await sendFromFd(req, res, file, o);
    return true;
  }
  let plan: AnswerPlan;
  let stream: Readable;
  // Twice at most: kept info that no longer matches the object is asked for anew, once.
  for (let attempt = 0; ; attempt++) {
    const info = o.objectInfo ? await o.objectInfo.stat(objects, key) : await objects.stat(key);
    if (!info) return false;
    plan = answerPlan(req, info, o);
    // Past the end of kept info: the object may have been replaced by a longer one; ask before refusing.
    if (plan.status === 416 && o.objectInfo && attempt === 0) {
      o.objectInfo.forget(key);
      continue;
    }
    if (!plan.body) {
      (o.answer ?? answerNow)(res, plan.status, plan.headers);
      return true;
    }
    try {
      // If-Match: the bytes are the ones the info (validators, length, range check) describes.
      stream = await objects.openRange(key, plan.body, { ifMatch: info.etag });
      break;
    } catch (err) {
      // Gone between the stat and the open: as if it had never been there.
      if (err instanceof MediaObjectNotFoundError) {
        o.objectInfo?.forget(key);
        return false;
      }
      // Replaced since its info was taken (kept from an earlier request, or a put in between).
      if (err instanceof MediaObjectChangedError && attempt === 0) {
        o.objectInfo?.forget(key);
        continue;
      }
      throw err;
    }
  }
  if (res.destroyed) {
    stream.destroy();
    return true;
  }
  res.writeHead(plan.status, plan.headers);
  await pump(stream, res, o.sendTimeoutMs);
  return true;
}

/** Bytes in `body` (first and last inclusive). */
function bodyLength(body: { start: number; end: number }): number {
  return body.end - body.start + 1;
}

/** What to answer: the status, its headers, and the bytes of the body if there is one. */
interface AnswerPlan {
  status: number;
  headers: string[];
  body?: { start: number; end: number };
}

/** The answer for `info`, by the request's method, conditions and Range. */
function answerPlan(req: IncomingMessage, info: MediaObjectInfo, o: FileResponseOptions): AnswerPlan {
  const etag = `W/"${info.etag}"`;
  const mtime = Math.floor(info.modifiedAt / 1000);
  const headers = [
    'Accept-Ranges', 'bytes',
    'ETag', etag,
    'Last-Modified', new Date(mtime * 1000).toUTCString(),
    'Cache-Control', o.maxAgeSeconds > 0 ? `public, max-age=${o.maxAgeSeconds}` : 'public, no-cache',
    ...(o.headers ?? []),
  ];
  const pre = preconditions(req, etag, mtime);
  if (pre !== undefined) return { status: pre, headers };
  const size = info.size;
  const range = req.method === 'GET' && isRangeFresh(req, etag, mtime) ? parseRange(req.headers.range, size) : undefined;
  if (range === 'unsatisfiable') {
    // RFC 9110 15.5.17: the current length, as `bytes */<length>`.
    headers.push('Content-Range', `bytes */${size}`);
    return { status: 416, headers };
  }
  headers.push(...(o.successHeaders ?? []), 'Content-Type', o.contentType);
  const start = range?.start ?? 0;
  const end = range?.end ?? size - 1;
  if (range) headers.push('Content-Range', `bytes ${start}-${end}/${size}`);
  headers.push('Content-Length', String(Math.max(0, end - start + 1)));
  const status = range ? 206 : 200;
  // HEAD: the headers a GET would have, no body (Node sends none for HEAD either way).
  return req.method === 'HEAD' || end < start ? { status, headers } : { status, headers, body: { start, end } };
}

/** Answers from an open file (openLocalFileSync), and releases it once done. */
async function sendFromFd(req: IncomingMessage, res: ServerResponse, file: LocalMediaFile, o: FileResponseOptions): Promise<void> {
  if (res.destroyed) {
    // The client left while this request waited: nothing to read for it.
    file.release();
    return;
  }
  let plan: AnswerPlan;
  let small: Buffer[] | undefined;
  try {
    plan = answerPlan(req, file.info, o);
    if (plan.body && bodyLength(plan.body) <= SYNC_READ_MAX_BYTES) small = file.readSync(plan.body.start, plan.body.end);
  } catch (err) {
    file.release();
    throw err;
  }
  if (!plan.body || small) {
    file.release();
    (o.answer ?? answerNow)(res, plan.status, plan.headers, small);
    return;
  }
  if (bodyLength(plan.body) <= CACHED_READ_MAX_BYTES) {
    // A mid-sized body (an HLS segment): read, or found in the store's cache, whole, and sent with
    // its headers in one write, under the send timeout even when it was all cached (a client that
    // stops reading would otherwise hold up to a megabyte for as long as it likes).
    let parts: Buffer[];
    try {
      parts = await file.read(plan.body.start, plan.body.end);
    } finally {
      file.release();
    }
    if (res.destroyed) return;
    const stall = new SendTimeout(res, o.sendTimeoutMs);
    await new Promise<void>((resolve) => {
      const done = () => {
        stall.clear();
        resolve();
      };
      res.once('close', done);
      writeAnswer(res, plan.status, plan.headers, parts, done);
    });
    return;
  }
  res.writeHead(plan.status, plan.headers);
  await streamFd(file, res, plan.body.start, plan.body.end, o.chunkBytes, o.sendTimeoutMs);
}

/**
 * Writes bytes `start`..`end` of `file` to `res` through two reused buffers, then releases it;
 * resolves once the answer is complete or given up. A buffer is read into again only once the
 * socket has taken what was last written from it. A socket that takes no byte for
 * `sendTimeoutMs` ends the answer (the connection is destroyed); so does a client that leaves.
 */
function streamFd(file: LocalMediaFile, res: ServerResponse, start: number, end: number, chunkBytes: number, sendTimeoutMs: number): Promise<void> {
  const { fd } = file;
  return new Promise<void>((resolve) => {
    const size = Math.min(chunkBytes, end - start + 1);
    // The second buffer only for a body of more than one chunk (an HLS segment is read whole into one).
    const buffers = [Buffer.allocUnsafeSlow(size), end - start + 1 > size ? Buffer.allocUnsafeSlow(size) : undefined];
    const taken = [true, true];
    let slot = 0;
    let pos = start;
    let reading = false;
    let ending = false;
    let finished = false;
    const stall = new SendTimeout(res, sendTimeoutMs);
    const finish = () => {
      if (finished) return;
      finished = true;
      stall.clear();
      // Never release under a read in flight: once closed, the number could be another file's by the time it runs.
      if (!reading) file.release();
      resolve();
    };
    res.once('close', finish);
    const next = () => {
      if (finished || reading || ending) return;
      if (res.destroyed) return finish();
      if (pos > end) {
        ending = true;
        res.end(finish);
        return;
      }
      if (!taken[slot]) return; // the socket still holds this buffer: its write callback calls next
      const buf = buffers[slot]!;
      const mine = slot;
      reading = true;
      fs.read(fd, buf, 0, Math.min(size, end - pos + 1), pos, (err, bytesRead) => {
        reading = false;
        if (finished) {
          file.release();
          return;
        }
        if (err || bytesRead === 0) {
          // Unreadable, or shorter than announced: the promised length cannot be met.
          res.destroy(err ?? new Error('file shorter than its announced length'));
          return finish();
        }
        pos += bytesRead;
        stall.touch(); // a slow disk is not the client's stall
        taken[mine] = false;
        slot = 1 - mine;
        res.write(bytesRead === buf.length ? buf : buf.subarray(0, bytesRead), () => {
          taken[mine] = true;
          next();
        });
        next();
      });
    };
    next();
  });
}

/**
 * Pipes a store's stream to `res`; resolves once done or gone. The send timeout counts only while
 * written bytes wait for the socket to take them: time spent waiting for the store (a slow bucket)
 * is not the client's.
 */
async function pump(stream: Readable, res: ServerResponse, sendTimeoutMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => (res.destroyed ? resolve() : res.once('close', () => resolve())));
  const stall = new SendTimeout(res, sendTimeoutMs, false);
  /** Waits for `event` ('drain', or 'finish' after end), or the client's gone; the send timeout runs meanwhile. */
  const taken = (event: 'drain' | 'finish') =>
    new Promise<void>((resolve) => {
      stall.run(true);
      const done = () => {
        stall.run(false);
        res.off(event, done);
        resolve();
      };
      res.once(event, done);
      void closed.then(done);
    });
  try {
    for await (const chunk of stream) {
      if (res.destroyed) break;
      if (!res.write(chunk)) await taken('drain');
    }
    if (!res.destroyed) {
      const finished = taken('finish');
      res.end();
      await finished;
    }
  } catch (err) {
    // The store's stream failed mid-answer: the length promised cannot be met.
    res.destroy(err as Error);
  } finally {
    stall.clear();
    stream.destroy();
  }
}

/**
 * RFC 9110 13.2.2, in its order: If-Match / If-Unmodified-Since (412), then If-None-Match /
 * If-Modified-Since (304 for GET and HEAD). Resolves with the status to answer, if any.
 * `mtime` is in whole seconds, as HTTP dates are.
 */
function preconditions(req: IncomingMessage, etag: string, mtime: number): 304 | 412 | undefined {
  const ifMatch = req.headers['if-match'];
  if (ifMatch !== undefined) {
    if (!matchesAny(ifMatch, etag)) return 412;
  } else {
    const since = parseDate(req.headers['if-unmodified-since']);
    if (since !== undefined && mtime > since) return 412;
  }
  const ifNoneMatch = req.headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    return matchesAny(ifNoneMatch, etag) ? 304 : undefined;
  }
  const modifiedSince = parseDate(req.headers['if-modified-since']);
  if (modifiedSince !== undefined && mtime <= modifiedSince) return 304;
  return undefined;
}

/** `*`, or a list holding `etag` (weak comparison, RFC 9110 8.8.3.2: W/ is ignored on both sides). */
function matchesAny(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  const ours = opaque(etag);
  return header.split(',').some((t) => opaque(t) === ours);
}

/** If-Range (RFC 9110 13.1.5): the range applies only if the object is still the one named. */
function isRangeFresh(req: IncomingMessage, etag: string, mtime: number): boolean {
  const header = req.headers['if-range'];
  if (header === undefined) return true;
  const ifRange = Array.isArray(header) ? header.join(',') : header;
  if (/^\s*(W\/)?"/.test(ifRange)) return ifRange.trim() === etag;
  const date = parseDate(ifRange);
  return date !== undefined && mtime <= date;
}

/**
 * One `bytes` range (RFC 9110 14.1.2) as first and last byte; undefined to answer the whole
 * file (no Range, another unit, a malformed value, several ranges); 'unsatisfiable' for 416 (a
 * start at or past the end, a zero-length suffix, a reversed range).
 */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*bytes\s*=\s*(.*)$/i.exec(header);
  if (!m) return undefined;
  const specs = m[1]!.split(',');
  if (specs.length !== 1) return undefined;
  const spec = /^\s*(\d*)\s*-\s*(\d*)\s*$/.exec(specs[0]!);
  if (!spec || (spec[1] === '' && spec[2] === '')) return undefined;
  if (spec[1] === '') {
    const suffix = Number(spec[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(spec[1]);
  const last = spec[2] === '' ? size - 1 : Number(spec[2]);
  if (last < start || start >= size) return 'unsatisfiable';
  return { start, end: Math.min(last, size - 1) };
}

/** An HTTP date in whole seconds since the epoch, or undefined if it is none. */
function parseDate(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}
