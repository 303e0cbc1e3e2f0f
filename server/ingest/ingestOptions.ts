import ipaddr from 'ipaddr.js';
import { assertRetryConfig, type RetryConfig } from '../core/retry.js';

const GB = 1024 ** 3;

/** The two upload types of spec 4.5 (historical names: both use tus now). */
export type UploadType = 'flash' | 'silverlight';

/** Options of a pull from a URL (SourceFileGetType 2). */
export interface PullOptions {
  /** Largest source accepted; a larger Content-Length fails at once, a longer body is cut off. */
  maxBytes: number;
  /** Redirects followed at most (each hop's address is checked again). */
  maxRedirects: number;
  /** Time allowed to open the TCP (and TLS) connection of one hop. */
  connectTimeoutMs: number;
  /** Time allowed without a byte from the source before the attempt fails. */
  idleTimeoutMs: number;
  /**
   * Time one attempt may take in all, however steadily the bytes come (a slow endless body);
   * counted from the answer's headers (connecting and waiting have the timeouts above).
   */
  deadlineMs: number;
  /**
   * Slowest a source may send, averaged over each `minRateWindowMs`: a source trickling a byte
   * now and then never meets the idle timeout, yet holds a download slot. 0: no minimum.
   */
  minBytesPerSecond: number;
  /** The window that rate is measured over. */
  minRateWindowMs: number;
  /** Downloads that run at once. */
  concurrency: number;
  /** Retries of transient failures (connection errors, timeouts, 5xx, 408, 429); 4xx are not retried. */
  retry: RetryConfig;
  /**
   * CIDRs opted in: loopback and link-local addresses are refused unless one of these names them
   * (`127.0.0.0/8` to pull from this machine). Private LAN and public addresses need no entry.
   */
  allow: string[];
  /** CIDRs a source address must not be in (narrows the default policy). */
  deny: string[];
}

/** Options of ingest: uploads (tus and multipart), pulls, and the checks on a complete file. */
export interface IngestOptions {
  /** Largest upload per uploadType (spec 8: 2 GB flash, 6 GB silverlight). */
  maxUploadBytes: Record<UploadType, number>;
  /** Largest file of `POST /Api/Video/Upload`. */
  multipartMaxBytes: number;
  /** How long a credential from openUploadSession may be used. */
  credentialTtlMs: number;
  /** How long after its creation an unfinished tus upload expires (its file is then removed). */
  uploadExpiryMs: number;
  /** How often expired tus uploads are looked for and removed. */
  expirySweepMs: number;
  /** Free disk bytes that must remain once an upload or download of the announced size is stored. */
  freeSpaceMarginBytes: number;
  /**
   * While an upload is received (a tus PATCH, a multipart body) or a pull downloads, the free
   * space is checked again after every this many bytes: below the margin, the upload stops with
   * 507 (tus keeps what it received and resumes later; multipart drops its partial file), and the
   * download fails (retried later).
   */
  spaceCheckIntervalBytes: number;
  /**
   * Share (above 0, at most 1) of a disk's room (its free space beyond the margin) that one
   * application's uploads under way may hold in declared bytes not yet sent; a creation past it
   * is refused with 507, unless it is the application's only upload holding any there.
   */
  appReservationShare: number;
  /** The same share for one client address (an IPv6 client by its /64), whatever the application. */
  addressReservationShare: number;
  /**
   * A tus upload that receives no bytes for this long stops holding its declared bytes (it keeps
   * its video, and may resume: it is then reserved again, or refused with 507 if it no longer fits).
   */
  reservationIdleMs: number;
  /** Time ffprobe may take on a complete file; past it, the file counts as unreadable. */
  probeTimeoutMs: number;
  /** Pull from a URL. */
  pull: PullOptions;
}

/** Every option may be left out; nested groups may be given in part. */
export type IngestOptionsInput = Partial<Omit<IngestOptions, 'maxUploadBytes' | 'pull'>> & {
  maxUploadBytes?: Partial<Record<UploadType, number>>;
  pull?: Partial<Omit<PullOptions, 'retry'>> & { retry?: Partial<RetryConfig> };
};

export const DEFAULT_INGEST_OPTIONS: IngestOptions = {
  maxUploadBytes: { flash: 2 * GB, silverlight: 6 * GB },
  multipartMaxBytes: 2 * GB,
  credentialTtlMs: 6 * 3600_000,
  uploadExpiryMs: 24 * 3600_000,
  expirySweepMs: 15 * 60_000,
  freeSpaceMarginBytes: 512 * 1024 ** 2,
  spaceCheckIntervalBytes: 64 * 1024 ** 2,
  appReservationShare: 0.5,
  addressReservationShare: 0.25,
  reservationIdleMs: 10 * 60_000,
  probeTimeoutMs: 60_000,
  pull: {
    maxBytes: 6 * GB,
    maxRedirects: 5,
    connectTimeoutMs: 10_000,
    idleTimeoutMs: 30_000,
    deadlineMs: 4 * 3600_000,
    minBytesPerSecond: 16 * 1024,
    minRateWindowMs: 60_000,
    concurrency: 2,
    retry: { maxRetries: 4, baseDelayMs: 5_000, maxDelayMs: 300_000, jitter: true },
    allow: [],
    deny: [],
  },
};

/** Fills defaults and validates; throws an Error that names the bad option. */
export function resolveIngestOptions(input: IngestOptionsInput = {}): IngestOptions {
  const d = DEFAULT_INGEST_OPTIONS;
  const o: IngestOptions = {
    ...d,
    ...input,
    maxUploadBytes: { ...d.maxUploadBytes, ...input.maxUploadBytes },
    pull: { ...d.pull, ...input.pull, retry: { ...d.pull.retry, ...input.pull?.retry } },
  };
  const positive = (name: string, v: number) => {
    if (!Number.isSafeInteger(v) || v < 1) throw new Error(`Option ingest.${name} must be a whole number of at least 1.`);
  };
  positive('maxUploadBytes.flash', o.maxUploadBytes.flash);
  positive('maxUploadBytes.silverlight', o.maxUploadBytes.silverlight);
  positive('multipartMaxBytes', o.multipartMaxBytes);
  positive('credentialTtlMs', o.credentialTtlMs);
  positive('uploadExpiryMs', o.uploadExpiryMs);
  positive('expirySweepMs', o.expirySweepMs);
  positive('probeTimeoutMs', o.probeTimeoutMs);
  positive('spaceCheckIntervalBytes', o.spaceCheckIntervalBytes);
  positive('reservationIdleMs', o.reservationIdleMs);
  for (const name of ['appReservationShare', 'addressReservationShare'] as const) {
    const v = o[name];
    if (!(typeof v === 'number' && v > 0 && v <= 1)) throw new Error(`Option ingest.${name} must be a number above 0 and at most 1 (a share of the free space).`);
  }
  if (!Number.isSafeInteger(o.freeSpaceMarginBytes) || o.freeSpaceMarginBytes < 0) throw new Error('Option ingest.freeSpaceMarginBytes must be a whole number from 0.');
  const p = o.pull;
  positive('pull.maxBytes', p.maxBytes);
  positive('pull.connectTimeoutMs', p.connectTimeoutMs);
  positive('pull.idleTimeoutMs', p.idleTimeoutMs);
  positive('pull.deadlineMs', p.deadlineMs);
  positive('pull.minRateWindowMs', p.minRateWindowMs);
  if (!(Number.isFinite(p.minBytesPerSecond) && p.minBytesPerSecond >= 0)) throw new Error('Option ingest.pull.minBytesPerSecond must be 0 (no minimum) or more.');
  positive('pull.concurrency', p.concurrency);
  if (!Number.isInteger(p.maxRedirects) || p.maxRedirects < 0 || p.maxRedirects > 20) throw new Error('Option ingest.pull.maxRedirects must be a whole number from 0 to 20.');
  assertRetryConfig('Option ingest.pull.retry', p.retry);
  for (const [name, list] of [['allow', p.allow], ['deny', p.deny]] as const) {
    if (!Array.isArray(list)) throw new Error(`Option ingest.pull.${name} must be a list of CIDRs.`);
    for (const cidr of list) {
      if (typeof cidr !== 'string' || !ipaddr.isValidCIDR(cidr)) throw new Error(`Option ingest.pull.${name}: "${String(cidr)}" is not a CIDR (like 10.0.0.0/8 or fd00::/8).`);
    }
  }
  return o;
}
