import type { Readable } from 'node:stream';
import type { MediaArea } from './localMediaRoot.js';

/**
 * Where media live, as every part of vop sees them (issue 11, item 2): intake, transcode, covers,
 * HLS, delivery, deletion and sweeps ask this interface, never `fs`, so the same code runs on
 * local disk ({@link LocalObjectMediaStore}) and on S3-compatible object storage
 * ({@link S3MediaStore}). Only the local implementation knows paths.
 *
 * Objects are named by keys `<area>/<segment>/…/<segment>` (see {@link mediaKey}): every segment is
 * made from ids and labels, never from raw request text, and one check refuses the rest.
 * test/contracts/mediaStore.contract.ts is the contract: one suite run against every implementation.
 */
export interface MediaStore {
  /** Which implementation this is, for logs and /healthz. */
  readonly kind: 'local' | 's3';

  /**
   * Stores an object, replacing any object under `key`. Atomic: until the promise resolves no
   * reader sees the new object, and a put that fails leaves no object (and no partial one) under
   * `key` — an earlier object under the same key is kept. A file source is read and left alone,
   * unless it is handed over (`move`, see {@link MediaSource}).
   */
  put(key: string, source: MediaSource, options?: PutOptions): Promise<MediaObjectInfo>;

  /** Size and version of an object, or undefined if there is none under `key`. */
  stat(key: string): Promise<MediaObjectInfo | undefined>;

  /**
   * The bytes of an object, whole or from `range.start` to `range.end` inclusive (HTTP Range's
   * form; delivery checks the range against {@link stat} first). Rejects with
   * {@link MediaObjectNotFoundError} if there is no object, and, given `ifMatch` (an etag as
   * {@link stat} gave it), with {@link MediaObjectChangedError} if the object is no longer that
   * one: delivery answers from an object's info kept from an earlier request, and the bytes it
   * sends must be the ones that info describes (on S3 this is the GET's If-Match, no extra call).
   */
  openRange(key: string, range?: ByteRange, options?: { ifMatch?: string }): Promise<Readable>;

  /**
   * Optional, for delivery's hot path on local disk (issue 14): the object opened as a local file,
   * with the same info {@link stat} gives, or undefined if there is no object under `key`. Opened
   * and fstat'ed synchronously, as nginx opens files: on a local file system an open costs a few
   * microseconds, while each trip of `stat`/`openRange` through libuv's thread pool cost 30 to 50
   * µs of CPU, and they made a small Range answer 4 times as dear as a bare Node answer of the same
   * bytes. The info is of the open file: what is read is what was checked, even if a put renames a
   * new object into place meanwhile. The caller reads `fd` and calls `release` once done, never
   * closes it: the store may keep it open for the next request (storage/media/openFileCache.ts).
   * Stores without local files (S3) leave this out; callers then use stat and openRange.
   */
  openLocalFileSync?(key: string): LocalMediaFile | undefined;

  /** Removes one object; nothing happens if there is none. */
  delete(key: string): Promise<void>;

  /**
   * Removes every object under `prefix` taken as whole segments (`hls/<videoId>` removes
   * `hls/<videoId>/…`, never `hls/<videoId>x/…`), and resolves with how many were removed.
   */
  deletePrefix(prefix: string): Promise<number>;

  /** Every object under `prefix` (whole segments, at any depth), sorted by key. For sweeps. */
  list(prefix: string): Promise<MediaObjectInfo[]>;

  /**
   * Removes what puts cut off by a crash left directly under `prefix` (local disk: the hidden
   * temporary files of puts, up to a whole rendition each; S3: multipart uploads never completed,
   * whose parts are stored and billed but are no object) and resolves with the names they were
   * for. Only puts of names starting with `startingWith` (a video's own files in a shared folder):
   * a put in progress among them would be cut off too, so call this only when none can be (a
   * transcode's `recover`, before the job runs again).
   */
  removeIncomplete(prefix: string, startingWith?: string): Promise<string[]>;

  /**
   * The names one level below `prefix` (an object's last segment, or the next segment of deeper
   * keys), each once, sorted: `listNames('hls')` gives the video ids with HLS without reading
   * every segment's entry. For start-up listings.
   */
  listNames(prefix: string): Promise<string[]>;

  /**
   * Runs `fn` with a local file holding the object (PeerTube's `makeAvailableVideoFiles`): ffmpeg
   * needs a path. On local disk that is the file itself; elsewhere a scratch copy, removed when
   * `fn` settles. The file is for reading: what `fn` writes to it is never stored. `signal`
   * stops a copy under way (a job cut off: its node lost the lease, or it was cancelled), which
   * rejects with the signal's reason.
   */
  withLocalCopy<T>(key: string, fn: (file: string) => Promise<T>, o?: { signal?: AbortSignal }): Promise<T>;

  /** {@link withLocalCopy} for several objects at once: `fn` gets their files in `keys`' order. */
  makeAvailable<T>(keys: readonly string[], fn: (files: string[]) => Promise<T>, o?: { signal?: AbortSignal }): Promise<T>;

  /**
   * A short-lived URL that answers `method` for the object directly (Range and HEAD included),
   * or undefined when this store has none (local disk: delivery streams the bytes itself).
   */
  presignedUrl(key: string, options: PresignOptions): Promise<string | undefined>;

  /** Free bytes where objects are written, or undefined when the store has no such bound (S3). */
  freeBytes(): Promise<number | undefined>;

  /**
   * `file` will be handed over (`put` with `move`) once the rest of its work is done: the store may
   * begin on it now. On local disk its bytes are flushed, so that the fsync before the rename
   * finds little left to write; elsewhere nothing happens. Never fails: the put decides.
   */
  prepareMove(file: string): Promise<void>;
}

/**
 * What {@link MediaStore.put} stores: a local file (read in place) or a stream (read to its end).
 * A file with `move: true` is handed over: the store may rename it into place (local disk, same
 * file system: no second write of a multi-GB rendition) and removes it once the object is
 * stored; on failure it may or may not still be there, and the caller's clean-up removes it.
 */
export type MediaSource = { file: string; move?: boolean } | { stream: Readable };

export interface PutOptions {
  /** The Content-Type object storage answers with (presigned GETs); default application/octet-stream. */
  contentType?: string;
}

export interface PresignOptions {
  /** Seconds the URL stays valid: 1 to 604800 (S3's limit of seven days). */
  ttlSeconds: number;
  /** The method the URL is signed for: a GET URL does not answer HEAD on S3. Default GET. */
  method?: 'GET' | 'HEAD';
}

/** An object opened as a local file ({@link MediaStore.openLocalFileSync}). */
export interface LocalMediaFile {
  /** An open file descriptor, read-only; valid until {@link release}. Never closed by the caller. */
  fd: number;
  /** What {@link MediaStore.stat} answers, taken from the open file. */
  info: MediaObjectInfo;
  /**
   * Bytes `start` to `end` (inclusive, within the object), in parts to send in order, through the
   * store's cache of recently read blocks; what is not cached is read blocking, so keep it to
   * small answers. Throws if the file is shorter than its info says. The parts may be views of
   * the cache: never write to them.
   */
  readSync(start: number, end: number): Buffer[];
  /** As {@link readSync}, but what is not cached is read in the thread pool. */
  read(start: number, end: number): Buffer[] | Promise<Buffer[]>;
  /** Done reading: the store closes the descriptor, or keeps it for the next reader. Once is enough; more do nothing. */
  release(): void;
}

/** Bytes `start` to `end`, both inclusive, as in `Range: bytes=start-end`. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface MediaObjectInfo {
  key: string;
  /** Bytes. */
  size: number;
  /** Last modification, ms since the epoch. */
  modifiedAt: number;
  /** Changes whenever the object's bytes may have (an ETag for HTTP validators). */
  etag: string;
}

/** The object under a key is not the one an etag named ({@link MediaStore.openRange}'s `ifMatch`). */
export class MediaObjectChangedError extends Error {
  constructor(readonly key: string) {
    super(`Media object ${JSON.stringify(key)} changed`);
    this.name = 'MediaObjectChangedError';
  }
}

/** No object under a key. */
export class MediaObjectNotFoundError extends Error {
  readonly code = 'ENOENT';
  constructor(readonly key: string) {
    super(`No media object ${JSON.stringify(key)}`);
  }
}

/** One key segment, made from ids and labels: no separators, no dot-only or hidden names. */
const SAFE_SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/;
const AREAS: ReadonlySet<string> = new Set<MediaArea>(['incoming', 'sources', 'play', 'hls', 'covers', 'text']);

/** The key of `segments` inside `area` (`hls/<videoId>/master.m3u8`); throws if a segment is unsafe. */
export function mediaKey(area: MediaArea, ...segments: string[]): string {
  // Each segment on its own: joined, `a/b` would pass as two.
  for (const s of segments) if (typeof s !== 'string' || !SAFE_SEGMENT.test(s)) throw new UnsafeMediaKeyError([area, ...segments].join('/'));
  return checkMediaKey([area, ...segments].join('/'));
}

/**
 * `key` itself if it is `<area>[/<segment>…]` with a known area and safe segments (no `..`, no
 * `/` inside a segment, no empty segment, no leading or trailing slash); throws otherwise. Every
 * method of every store calls this first.
 */
export function checkMediaKey(key: string): string {
  if (typeof key !== 'string') throw new UnsafeMediaKeyError(String(key));
  const [area, ...segments] = key.split('/');
  if (!AREAS.has(area!) || segments.some((s) => !SAFE_SEGMENT.test(s))) throw new UnsafeMediaKeyError(key);
  return key;
}

/** Whether `key` is a checked key (a name found in a listing may be something else: a put in progress, another program's object). */
export function isMediaKey(key: string): boolean {
  try {
    checkMediaKey(key);
    return true;
  } catch {
    return false;
  }
}

/** A key that is not made of a known area and safe segments. */
export class UnsafeMediaKeyError extends Error {
  constructor(readonly key: string) {
    super(`Unsafe media key: ${JSON.stringify(key)}`);
  }
}

/** The area and the segments of a checked key. */
export function splitMediaKey(key: string): { area: MediaArea; segments: string[] } {
  const [area, ...segments] = checkMediaKey(key).split('/');
  return { area: area as MediaArea, segments };
}

/** Checks a range against an object's size: whole numbers, start ≤ end < size. */
export function assertRange(key: string, range: ByteRange, size: number): void {
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start || end >= size) {
    throw new RangeError(`Range ${start}-${end} is outside ${JSON.stringify(key)} (${size} bytes)`);
  }
}

/** The bytes of a small stored object (a playlist, a WebVTT file); undefined when there is none. */
export async function readSmallObject(objects: Pick<MediaStore, 'stat' | 'openRange'>, key: string): Promise<Buffer | undefined> {
  if (!(await objects.stat(key))) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of await objects.openRange(key)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
