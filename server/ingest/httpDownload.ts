import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { formatBytes } from '../core/formatBytes.js';
import { DEFAULT_INGEST_OPTIONS, type PullOptions } from './ingestOptions.js';
import { RefusedAddressError, type CheckedAddress, type PullPolicy } from './pullPolicy.js';

/** The pull options one download reads, each documented (and defaulted) once, on {@link PullOptions}. */
type DownloadLimits = Pick<PullOptions, 'maxBytes' | 'maxRedirects' | 'connectTimeoutMs' | 'idleTimeoutMs' | 'deadlineMs' | 'minBytesPerSecond' | 'minRateWindowMs'>;

/** Options of {@link downloadToFile}: the pull's limits, and what the caller plugs in. */
export interface DownloadOptions extends DownloadLimits {
  /** Which addresses may be connected to; every hop is checked. */
  policy: PullPolicy;
  /** Called every `checkRoomEveryBytes` written; rejects when the disk is too full to go on. */
  checkRoom?: () => Promise<void>;
  /** How often `checkRoom` is called: IngestOptions.spaceCheckIntervalBytes, its default if absent. */
  checkRoomEveryBytes?: number;
  /** Aborts the download (job cancelled, server stopping). */
  signal?: AbortSignal;
  /** Called once the size is known (if the source says it), before a byte is written; may reject. */
  beforeSave?: (total: number | undefined) => Promise<void>;
  /** Called as bytes arrive. */
  onProgress?: (p: { received: number; total: number | undefined }) => void;
}

/** A failed download; `permanent` ones (4xx, refused address, too large) are not worth retrying. */
export class DownloadError extends Error {
  override name = 'DownloadError';
  /**
   * @param allowable The pull policy refused the address, and an `allow` CIDR naming it would let
   *   the pull through (RefusedAddressError.allowable).
   */
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly allowable = false,
  ) {
    super(message);
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** 4xx answers that say "later", not "never". */
const TRANSIENT_4XX = new Set([408, 425, 429]);
/** Connection failures that a later attempt may not meet. */
const TRANSIENT_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'ENETDOWN', 'EHOSTDOWN', 'ENOSPC']);

/**
 * Downloads `url` into `dest` (http and https only). Every hop, redirects included, is resolved
 * and checked by the policy before connecting, and the connection is pinned to the checked
 * address (a custom `lookup` that returns only it), so a second DNS answer cannot swap it.
 * Redirects are followed by hand, at most `maxRedirects`. Rejects with {@link DownloadError}.
 */
export async function downloadToFile(url: string, dest: string, opts: DownloadOptions): Promise<{ bytes: number; finalUrl: string }> {
  let current = parseSource(url);
  for (let hop = 0; ; hop++) {
    const pinned = await check(current, opts.policy);
    const res = await get(current, pinned, opts);
    const status = res.statusCode ?? 0;
    if (REDIRECTS.has(status)) {
      res.resume();
      const location = res.headers.location;
      if (!location) throw new DownloadError(`redirect (${status}) without a Location from ${current.host}`, true);
      if (hop >= opts.maxRedirects) throw new DownloadError(`more than ${opts.maxRedirects} redirects`, true);
      current = parseSource(new URL(location, current).toString());
      continue;
    }
    if (status < 200 || status > 299 || status === 206) {
      res.resume();
      const permanent = status >= 400 && status < 500 && !TRANSIENT_4XX.has(status);
      throw new DownloadError(`the source answered HTTP ${status}${res.statusMessage ? ` ${res.statusMessage}` : ''} (${current.host})`, permanent);
    }
    const bytes = await save(res, dest, opts);
    return { bytes, finalUrl: current.toString() };
  }
}

function parseSource(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DownloadError('the source is not a URL', true);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DownloadError(`only http and https sources are fetched, not ${url.protocol.replace(':', '')}`, true);
  if (url.username || url.password) throw new DownloadError('sources with user names or passwords in the URL are not fetched', true);
  return url;
}

async function check(url: URL, policy: PullPolicy): Promise<CheckedAddress> {
  try {
    return await policy.resolve(url.hostname);
  } catch (err) {
    if (err instanceof RefusedAddressError) throw new DownloadError(err.message, true, err.allowable);
    const code = (err as NodeJS.ErrnoException).code;
    throw new DownloadError(`${url.hostname} could not be resolved (${code ?? String(err)})`, code !== 'ENOTFOUND');
  }
}

/** One GET, on a fresh connection pinned to `pinned`, with connect and idle timeouts. */
function get(url: URL, pinned: CheckedAddress, opts: DownloadOptions): Promise<http.IncomingMessage> {
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
  const request = url.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'GET',
      agent: false,
      lookup,
      signal: opts.signal,
      headers: { 'user-agent': 'vop-pull/1', accept: '*/*', 'accept-encoding': 'identity' },
    });
    const connectTimer = setTimeout(() => req.destroy(Object.assign(new Error(`no connection to ${url.host} within ${opts.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' })), opts.connectTimeoutMs);
    req.on('socket', (socket) => {
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
    });
    req.setTimeout(opts.idleTimeoutMs, () => req.destroy(Object.assign(new Error(`${url.host} sent nothing for ${opts.idleTimeoutMs} ms`), { code: 'ETIMEDOUT' })));
    req.on('response', (res) => {
      clearTimeout(connectTimer);
      resolve(res);
    });
    req.on('error', (err) => {
      clearTimeout(connectTimer);
      reject(classify(err, opts.signal));
    });
    req.on('close', () => clearTimeout(connectTimer));
    req.end();
  });
}

/** Streams the body to `dest`, cut off past `maxBytes`. */
async function save(res: http.IncomingMessage, dest: string, opts: DownloadOptions): Promise<number> {
  const declared = res.headers['content-length'] !== undefined ? Number(res.headers['content-length']) : undefined;
  const total = declared !== undefined && Number.isFinite(declared) ? declared : undefined;
  if (total !== undefined && total > opts.maxBytes) {
    res.destroy();
    throw new DownloadError(`the source is ${formatBytes(total)}, over the ${formatBytes(opts.maxBytes)} limit`, true);
  }
  try {
    await opts.beforeSave?.(total);
  } catch (err) {
    res.destroy();
    throw err;
  }
  let received = 0;
  let checkedAt = 0;
  // Checked again as the body arrives: one without a Content-Length has announced nothing.
  const checkEvery = opts.checkRoomEveryBytes ?? DEFAULT_INGEST_OPTIONS.spaceCheckIntervalBytes;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      received += chunk.length;
      if (received > opts.maxBytes) return done(new DownloadError(`the source is over the ${formatBytes(opts.maxBytes)} limit`, true));
      opts.onProgress?.({ received, total });
      if (opts.checkRoom && received - checkedAt >= checkEvery) {
        checkedAt = received;
        opts.checkRoom().then(() => done(null, chunk), done);
        return;
      }
      done(null, chunk);
    },
  });
  // The deadline and the minimum rate: a source that keeps sending, slowly or without end, still
  // lets go of its slot. Both are worth a retry later (the network may be at fault).
  const started = Date.now();
  let windowStart = started;
  let windowStartBytes = 0;
  const watchdog = setInterval(() => {
    const now = Date.now();
    if (now - started > opts.deadlineMs) {
      res.destroy(new DownloadError(`the download took longer than ${Math.round(opts.deadlineMs / 1000)} s`, false));
    } else if (now - windowStart >= opts.minRateWindowMs) {
      const rate = (received - windowStartBytes) / ((now - windowStart) / 1000);
      if (rate < opts.minBytesPerSecond) {
        res.destroy(new DownloadError(`the source sent ${formatBytes(received - windowStartBytes)} in ${Math.round((now - windowStart) / 1000)} s, slower than the minimum of ${formatBytes(opts.minBytesPerSecond)}/s`, false));
      }
      windowStart = now;
      windowStartBytes = received;
    }
  }, Math.min(1000, opts.minRateWindowMs / 4, opts.deadlineMs / 4));
  try {
    await pipeline(res, counter, fs.createWriteStream(dest, { mode: 0o600 }), { signal: opts.signal });
  } catch (err) {
    throw classify(err, opts.signal);
  } finally {
    clearInterval(watchdog);
  }
  if (total !== undefined && received !== total) throw new DownloadError(`the source sent ${received} of ${total} bytes`, false);
  return received;
}

function classify(err: unknown, signal: AbortSignal | undefined): Error {
  if (signal?.aborted) return signal.reason instanceof Error ? signal.reason : new Error('aborted');
  if (err instanceof DownloadError) return err;
  const code = (err as NodeJS.ErrnoException).code ?? '';
  const message = (err as Error).message ?? String(err);
  if (TRANSIENT_CODES.has(code)) return new DownloadError(message, false);
  // TLS failures (bad certificate, wrong host name) do not fix themselves.
  if (/CERT|SSL|TLS|ERR_TLS/.test(code)) return new DownloadError(`TLS failed: ${message}`, true);
  return new DownloadError(message, false);
}
