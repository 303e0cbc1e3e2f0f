/**
 * Answers GET and HEAD with a file: validators, conditional requests and single byte ranges
 * (RFC 9110 sections 8.8, 13 and 14), streamed through a few reused buffers.
 *
 * Why not Express's `res.sendFile` (the `send` module), which does the same HTTP: it streams with
 * `fs.createReadStream`, which allocates a fresh buffer for every chunk. On multi-gigabyte
 * renditions that churn costs a third more CPU per byte than reading into two buffers reused for
 * the whole answer (measured: about 600 against 850 ms of CPU per GiB at 1 MiB chunks), and a
 * file server spends its time on exactly that. The HTTP rules below follow `send`'s choices where
 * the RFC leaves room (weak comparison for ETags, a reversed range answered 416, several ranges
 * answered with the whole file), so clients see the same behaviour.
 *
 * The caller has already decided that `file` may be served (and checked that it lies inside its
 * area): this module only reads it.
 */
import type { Stats } from 'node:fs';
import fsp, { type FileHandle } from 'node:fs/promises';
import type { Request, Response } from 'express';

export interface FileResponseOptions {
  /** Content-Type of a 200 or 206 answer. */
  contentType: string;
  /** `Cache-Control: public, max-age=<n>`; 0: `public, no-cache` (kept, but revalidated by its ETag on every use). */
  maxAgeSeconds: number;
  /** Headers of a successful answer only (200, 206): Content-Disposition, say. */
  headers?: Record<string, string>;
  /** Bytes read from disk per chunk; two such buffers serve the whole answer. */
  chunkBytes: number;
  /**
   * How long one chunk may wait to be taken by the socket before the answer is given up (nginx's
   * `send_timeout`): a client that stops reading would otherwise pin the two buffers for ever.
   */
  sendTimeoutMs: number;
}

/** The file is not there (or is not a regular file): the caller answers 404. */
export class FileNotFoundError extends Error {
  override name = 'FileNotFoundError';
}

/** Sends `file`; resolves once the answer is complete or the client has gone. */
export async function sendFileResponse(req: Request, res: Response, file: string, o: FileResponseOptions): Promise<void> {
  let fh: FileHandle;
  try {
    // Open, then fstat the open file: what is checked is what is sent, even if the name is replaced meanwhile.
    fh = await fsp.open(file, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') throw new FileNotFoundError(file);
    throw err;
  }
  try {
    const stat = await fh.stat();
    if (!stat.isFile()) throw new FileNotFoundError(file);
    const etag = weakEtag(stat);
    res.setHeader('Accept-Ranges', 'bytes');
    res.setHeader('ETag', etag);
    res.setHeader('Last-Modified', stat.mtime.toUTCString());
    res.setHeader('Cache-Control', o.maxAgeSeconds > 0 ? `public, max-age=${o.maxAgeSeconds}` : 'public, no-cache');

    const pre = preconditions(req, etag, stat.mtime);
    if (pre !== undefined) {
      res.status(pre).end();
      return;
    }

    const size = stat.size;
    const range = req.method === 'GET' && isRangeFresh(req, etag, stat.mtime) ? parseRange(req.headers.range, size) : undefined;
    if (range === 'unsatisfiable') {
      // RFC 9110 15.5.17: the current length, as `bytes */<length>`.
      res.status(416).setHeader('Content-Range', `bytes */${size}`);
      res.end();
      return;
    }
    for (const [k, v] of Object.entries(o.headers ?? {})) res.setHeader(k, v);
    res.setHeader('Content-Type', o.contentType);
    const start = range?.start ?? 0;
    const end = range?.end ?? size - 1;
    if (range) {
      res.status(206).setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
    }
    res.setHeader('Content-Length', String(Math.max(0, end - start + 1)));
    if (req.method === 'HEAD' || end < start) {
      res.end();
      return;
    }
    await streamRange(fh, res, start, end, o.chunkBytes, o.sendTimeoutMs);
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** `W/"<size hex>-<mtime ms hex>"`: the form `send` (the `etag` module) gives files. */
function weakEtag(stat: Stats): string {
  return `W/"${stat.size.toString(16)}-${stat.mtime.getTime().toString(16)}"`;
}

/**
 * RFC 9110 13.2.2, in its order: If-Match / If-Unmodified-Since (412), then If-None-Match /
 * If-Modified-Since (304 for GET and HEAD). Resolves with the status to answer, if any.
 */
function preconditions(req: Request, etag: string, mtime: Date): 304 | 412 | undefined {
  const ifMatch = req.headers['if-match'];
  if (ifMatch !== undefined) {
    if (!matchesAny(ifMatch, etag)) return 412;
  } else {
    const since = parseDate(req.headers['if-unmodified-since']);
    if (since !== undefined && wholeSeconds(mtime) > since) return 412;
  }
  const ifNoneMatch = req.headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    return matchesAny(ifNoneMatch, etag) ? 304 : undefined;
  }
  const modifiedSince = parseDate(req.headers['if-modified-since']);
  if (modifiedSince !== undefined && wholeSeconds(mtime) <= modifiedSince) return 304;
  return undefined;
}

/** `*`, or a list holding `etag` (weak comparison, RFC 9110 8.8.3.2: W/ is ignored on both sides). */
function matchesAny(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  const ours = opaque(etag);
  return header.split(',').some((t) => opaque(t) === ours);
}

/** If-Range (RFC 9110 13.1.5): the range applies only if the file is still the one named. */
function isRangeFresh(req: Request, etag: string, mtime: Date): boolean {
  const header = req.headers['if-range'];
  if (header === undefined) return true;
  const ifRange = Array.isArray(header) ? header.join(',') : header;
  if (/^\s*(W\/)?"/.test(ifRange)) return ifRange.trim() === etag;
  const date = parseDate(ifRange);
  return date !== undefined && wholeSeconds(mtime) <= date;
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

/**
 * Writes bytes `start`..`end` of the open file to `res`, through two reused buffers. A chunk the
 * socket has not taken within `sendTimeoutMs` ends the answer (the connection is destroyed).
 */
async function streamRange(fh: FileHandle, res: Response, start: number, end: number, chunkBytes: number, sendTimeoutMs: number): Promise<void> {
  const length = end - start + 1;
  const size = Math.min(chunkBytes, length);
  const buffers = [Buffer.allocUnsafeSlow(size), Buffer.allocUnsafeSlow(size)];
  // A buffer is read into again only once the socket has taken what was last written from it.
  const flushed: Array<Promise<void>> = [Promise.resolve(), Promise.resolve()];
  // The client may have left during the open and stat awaits, its 'close' already fired: ask
  // `res.destroyed` (set when the socket closes) rather than wait for an event that has passed.
  const closed = new Promise<void>((resolve) => {
    if (res.destroyed) resolve();
    else res.once('close', () => resolve());
  });
  // One timer for the whole answer, pushed back by every chunk the socket takes: the limit is on
  // a stall, not on the length of the answer. Destroying the answer settles `closed`.
  const stall = setTimeout(() => res.destroy(new Error(`the client took nothing for ${sendTimeoutMs} ms`)), sendTimeoutMs);
  let pos = start;
  let i = 0;
  try {
    while (pos <= end && !res.destroyed) {
      const slot = i++ % 2;
      await Promise.race([flushed[slot], closed]);
      if (res.destroyed) return;
      stall.refresh();
      const buf = buffers[slot]!;
      const { bytesRead } = await fh.read(buf, 0, Math.min(size, end - pos + 1), pos);
      if (bytesRead === 0) {
        // The file shrank under us: the promised length cannot be met, so the answer is cut off.
        res.destroy(new Error('file shorter than its announced length'));
        return;
      }
      pos += bytesRead;
      flushed[slot] = new Promise<void>((resolve) => res.write(bytesRead === buf.length ? buf : buf.subarray(0, bytesRead), () => resolve()));
    }
    if (res.destroyed) return;
    await Promise.race([new Promise<void>((resolve) => res.end(resolve)), closed]);
  } finally {
    clearTimeout(stall);
  }
}

function parseDate(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

/** HTTP dates have whole seconds: a file modified at 12.345 s is "not modified since 12 s". */
function wholeSeconds(d: Date): number {
  return Math.floor(d.getTime() / 1000);
}
