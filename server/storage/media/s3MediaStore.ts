import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import {
  MediaObjectChangedError,
  MediaObjectNotFoundError,
  isMediaKey,
  splitMediaKey,
  type ByteRange,
  type MediaObjectInfo,
  type MediaSource,
  type MediaStore,
  type PresignOptions,
  type PutOptions,
  UnsafeMediaKeyError,
} from './mediaStore.js';
import { s3ClientConfig, validateS3Options, type S3MediaStoreOptions } from './s3Options.js';

/** S3's longest presigned URL life: seven days. */
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;

/**
 * {@link MediaStore} on S3-compatible object storage (AWS S3, Ceph RGW, SeaweedFS, Garage), with
 * the reference SDK. Keys are the object names inside one bucket. S3 makes a PUT and a completed
 * multipart upload visible at once and whole, and lib-storage aborts a multipart upload that
 * fails, so a put is atomic as the interface asks. Open with {@link openS3MediaStore}.
 */
export class S3MediaStore implements MediaStore {
  readonly kind = 's3' as const;
  readonly options: S3MediaStoreOptions;
  readonly client: S3Client;

  constructor(input: Partial<S3MediaStoreOptions>) {
    this.options = validateS3Options(input);
    const o = this.options;
    this.client = new S3Client(s3ClientConfig(o));
  }

  /** The object name of a key with at least one segment below its area. */
  private objectKey(key: string): string {
    const { segments } = splitMediaKey(key);
    if (segments.length === 0) throw new UnsafeMediaKeyError(key);
    return key;
  }

  /**
   * Waits (bounded by `waitForEndpointMs`, one clear log line per try) until the endpoint
   * answers, then creates the bucket if it is missing and `createBucketIfMissing` is on.
   */
  async ensureBucket(): Promise<void> {
    const o = this.options;
    const deadline = Date.now() + o.waitForEndpointMs;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.send(new HeadBucketCommand({ Bucket: o.bucket }));
        return;
      } catch (err) {
        const status = httpStatus(err);
        if (status === 404) {
          if (!o.createBucketIfMissing) throw new Error(`Object storage bucket ${o.bucket} does not exist at ${o.endpoint} (and creating it is off).`);
          try {
            await this.client.send(new CreateBucketCommand({ Bucket: o.bucket }));
          } catch (createErr) {
            if (!['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes((createErr as Error).name)) throw createErr;
          }
          o.log(`Object storage: created bucket ${o.bucket} at ${o.endpoint}.`);
          return;
        }
        if (status === 403 || status === 400) {
          throw new Error(`Object storage at ${o.endpoint} refused bucket ${o.bucket} (HTTP ${status}, ${(err as Error).name}): check VOP_S3_ACCESS_KEY_ID, VOP_S3_SECRET_ACCESS_KEY and VOP_S3_BUCKET.`);
        }
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new Error(`Object storage at ${o.endpoint} did not answer within ${Math.round(o.waitForEndpointMs / 1000)} s: ${(err as Error).message}`);
        }
        o.log(`Waiting for object storage at ${o.endpoint} (bucket ${o.bucket}), try ${attempt}: ${(err as Error).message || (err as Error).name}`);
        await sleep(Math.min(o.waitIntervalMs, left));
      }
    }
  }

  async put(key: string, source: MediaSource, options: PutOptions = {}): Promise<MediaObjectInfo> {
    const Key = this.objectKey(key);
    const Body = 'file' in source ? fs.createReadStream(source.file) : source.stream;
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.options.bucket, Key, Body, ContentType: options.contentType ?? 'application/octet-stream' },
      partSize: this.options.partSizeBytes,
      queueSize: this.options.queueSize,
      // A failed multipart upload is aborted: its parts are never an object.
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } finally {
      if (!Body.destroyed) Body.destroy();
    }
    const info = await this.stat(key);
    if (!info) throw new Error(`Object storage lost ${JSON.stringify(key)} right after storing it.`);
    if ('file' in source && source.move) await fs.promises.rm(source.file, { force: true });
    return info;
  }

  async stat(key: string): Promise<MediaObjectInfo | undefined> {
    const Key = this.objectKey(key);
    try {
      const r = await this.client.send(new HeadObjectCommand({ Bucket: this.options.bucket, Key }));
      return { key, size: r.ContentLength ?? 0, modifiedAt: r.LastModified?.getTime() ?? 0, etag: unquote(r.ETag) };
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    }
  }

  async openRange(key: string, range?: ByteRange, options: { ifMatch?: string } = {}): Promise<Readable> {
    const Key = this.objectKey(key);
    if (range && (!Number.isSafeInteger(range.start) || !Number.isSafeInteger(range.end) || range.start < 0 || range.end < range.start)) {
      throw new RangeError(`Range ${range.start}-${range.end} is not a byte range`);
    }
    let r;
    try {
      r = await this.client.send(
        new GetObjectCommand({
          Bucket: this.options.bucket,
          Key,
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
          IfMatch: options.ifMatch !== undefined ? `"${options.ifMatch}"` : undefined,
        }),
      );
    } catch (err) {
      const status = httpStatus(err);
      if (status === 404) throw new MediaObjectNotFoundError(key);
      if (status === 412) throw new MediaObjectChangedError(key);
      if (status === 416) throw new RangeError(`Range ${range?.start}-${range?.end} is outside ${JSON.stringify(key)}`);
      throw err;
    }
    const body = r.Body as Readable;
    // S3 shortens a range that runs past the end; the interface refuses it, as local disk does.
    const total = /\/(\d+)$/.exec(r.ContentRange ?? '')?.[1];
    if (range && total !== undefined && range.end >= Number(total)) {
      body.destroy();
      throw new RangeError(`Range ${range.start}-${range.end} is outside ${JSON.stringify(key)} (${total} bytes)`);
    }
    return body;
  }

  async delete(key: string): Promise<void> {
    const Key = this.objectKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key }));
  }

  async deletePrefix(prefix: string): Promise<number> {
    let removed = 0;
    // A page at a time (at most 1000 keys, DeleteObjects' own limit): memory stays bounded
    // however many segments a video has.
    for await (const page of this.pages(prefix)) {
      if (page.length === 0) continue;
      const r = await this.client.send(
        new DeleteObjectsCommand({ Bucket: this.options.bucket, Delete: { Objects: page.map((o) => ({ Key: o.key })), Quiet: true } }),
      );
      if (r.Errors?.length) {
        const e = r.Errors[0]!;
        throw new Error(`Object storage kept ${r.Errors.length} object(s) under ${JSON.stringify(prefix)}: ${e.Key}: ${e.Code} ${e.Message ?? ''}`);
      }
      removed += page.length;
    }
    return removed;
  }

  async list(prefix: string): Promise<MediaObjectInfo[]> {
    const found: MediaObjectInfo[] = [];
    for await (const page of this.pages(prefix)) found.push(...page);
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async removeIncomplete(prefix: string, startingWith = ''): Promise<string[]> {
    splitMediaKey(prefix);
    const removed: string[] = [];
    let KeyMarker: string | undefined;
    let UploadIdMarker: string | undefined;
    do {
      const r = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.options.bucket, Prefix: `${prefix}/${startingWith}`, KeyMarker, UploadIdMarker }));
      for (const u of r.Uploads ?? []) {
        // Directly under the prefix only, as on local disk.
        if (!u.Key || !u.UploadId || u.Key.slice(prefix.length + 1).includes('/')) continue;
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.options.bucket, Key: u.Key, UploadId: u.UploadId }));
        removed.push(u.Key.slice(prefix.length + 1));
      }
      KeyMarker = r.IsTruncated ? r.NextKeyMarker : undefined;
      UploadIdMarker = r.IsTruncated ? r.NextUploadIdMarker : undefined;
    } while (KeyMarker);
    return removed;
  }

  /** The name of some object in the bucket, whatever its name (a key of ours or not); undefined if the bucket is empty. */
  async anyObject(): Promise<string | undefined> {
    const r = await this.client.send(new ListObjectsV2Command({ Bucket: this.options.bucket, MaxKeys: 1 }));
    return r.Contents?.[0]?.Key;
  }

  async listNames(prefix: string): Promise<string[]> {
    splitMediaKey(prefix);
    const names = new Set<string>();
    let ContinuationToken: string | undefined;
    do {
      // Delimiter: S3 rolls deeper keys up into one common prefix each, so this reads one entry per name.
      const r = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.options.bucket, Prefix: `${prefix}/`, Delimiter: '/', ContinuationToken, MaxKeys: this.options.listPageSize }),
      );
      for (const o of r.Contents ?? []) if (o.Key && isMediaKey(o.Key)) names.add(o.Key.slice(prefix.length + 1));
      for (const p of r.CommonPrefixes ?? []) {
        const name = p.Prefix?.slice(prefix.length + 1, -1);
        if (name && isMediaKey(`${prefix}/${name}`)) names.add(name);
      }
      ContinuationToken = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (ContinuationToken);
    return [...names].sort();
  }

  /** The objects under `prefix` (whole segments), one list request's page at a time. */
  private async *pages(prefix: string): AsyncGenerator<MediaObjectInfo[]> {
    splitMediaKey(prefix);
    let ContinuationToken: string | undefined;
    do {
      const r = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.options.bucket, Prefix: `${prefix}/`, ContinuationToken, MaxKeys: this.options.listPageSize }),
      );
      const page: MediaObjectInfo[] = [];
      for (const o of r.Contents ?? []) {
        // Objects someone else put in the bucket under names that are not keys stay unseen.
        if (!o.Key || !isMediaKey(o.Key)) continue;
        page.push({ key: o.Key, size: o.Size ?? 0, modifiedAt: o.LastModified?.getTime() ?? 0, etag: unquote(o.ETag) });
      }
      yield page;
      ContinuationToken = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  async withLocalCopy<T>(key: string, fn: (file: string) => Promise<T>, o: { signal?: AbortSignal } = {}): Promise<T> {
    return this.makeAvailable([key], (files) => fn(files[0]!), o);
  }

  async makeAvailable<T>(keys: readonly string[], fn: (files: string[]) => Promise<T>, o: { signal?: AbortSignal } = {}): Promise<T> {
    for (const key of keys) this.objectKey(key);
    o.signal?.throwIfAborted();
    const base = this.options.scratchDir ?? os.tmpdir();
    await fs.promises.mkdir(base, { recursive: true });
    const dir = await fs.promises.mkdtemp(path.join(base, 'vop-s3-copy-'));
    try {
      const files: string[] = [];
      for (const [i, key] of keys.entries()) {
        // One folder per key keeps the object's own name (ffmpeg reads the extension).
        const sub = path.join(dir, String(i));
        await fs.promises.mkdir(sub);
        const file = path.join(sub, key.slice(key.lastIndexOf('/') + 1));
        // With the signal: a node paused past its lease stops copying when it wakes, at once,
        // rather than when a stream that may never end does.
        await pipeline(await this.openRange(key), fs.createWriteStream(file, { flags: 'wx' }), { signal: o.signal });
        files.push(file);
      }
      return await fn(files);
    } catch (err) {
      // pipeline rejects with an AbortError of its own: the caller is told why it was stopped.
      if (o.signal?.aborted && (err as Error).name === 'AbortError') throw o.signal.reason;
      throw err;
    } finally {
      await fs.promises.rm(dir, { recursive: true, force: true });
    }
  }

  async presignedUrl(key: string, options: PresignOptions): Promise<string> {
    const Key = this.objectKey(key);
    const { ttlSeconds, method = 'GET' } = options;
    if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_PRESIGN_SECONDS) {
      throw new RangeError(`A presigned URL lives 1 to ${MAX_PRESIGN_SECONDS} s, not ${ttlSeconds}`);
    }
    const input = { Bucket: this.options.bucket, Key };
    const command = method === 'HEAD' ? new HeadObjectCommand(input) : new GetObjectCommand(input);
    return getSignedUrl(this.client, command, { expiresIn: ttlSeconds });
  }

  async freeBytes(): Promise<undefined> {
    return undefined;
  }

  /** Nothing to begin: the upload reads the file when it is put. */
  async prepareMove(): Promise<void> {}

  /** Closes the client's connections. */
  close(): void {
    this.client.destroy();
  }
}

/** Makes the store and waits for its bucket (see {@link S3MediaStore.ensureBucket}). */
export async function openS3MediaStore(options: Partial<S3MediaStoreOptions>): Promise<S3MediaStore> {
  const store = new S3MediaStore(options);
  try {
    await store.ensureBucket();
  } catch (err) {
    store.close();
    throw err;
  }
  return store;
}

function httpStatus(err: unknown): number | undefined {
  return (err as S3ServiceException)?.$metadata?.httpStatusCode;
}

function unquote(etag: string | undefined): string {
  return (etag ?? '').replace(/^"|"$/g, '');
}

