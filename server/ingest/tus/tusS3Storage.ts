import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3 } from '@aws-sdk/client-s3';
import { S3Store } from '@tus/s3-store';
import type { KvStore, Upload } from '@tus/server';
import { VIDEO_ID_RE } from '../../core/videoStatus.js';
import { isPathInsideDirectory } from '../../storage/media/localMediaRoot.js';
import { s3ClientConfig, type S3MediaStoreOptions } from '../../storage/media/s3Options.js';
import { expiresAt, isComplete, UPLOAD_ID_RE, type StoreHooks, type TusStorage } from './tusStorage.js';

/** What S3Store keeps per upload in its cache (its `MetadataValue`). */
type S3Metadata = Parameters<NonNullable<ConstructorParameters<typeof S3Store>[0]['cache']>['set']>[1];

/**
 * No cache: S3Store's default keeps each upload's description in this process's memory, which
 * goes stale as soon as another node finishes or terminates the upload (this node would then
 * still take it for live). One GET of `<id>.info` per use is the price of no per-process truth.
 */
const NO_CACHE: KvStore<S3Metadata> = {
  get: async () => undefined,
  set: async () => undefined,
  delete: async () => undefined,
};

/** The object names S3Store gives an upload: its bytes (the multipart upload's key), description, and a short tail. */
const STALE_NAME_RE = /^([0-9a-f]{32})(\.info|\.part)?$/;

/** Options of {@link S3TusStorage}. */
export interface S3TusStorageOptions {
  /** The bucket and how to reach it: the media store's own options. */
  s3: S3MediaStoreOptions;
  /** How long an unfinished upload lives (IngestOptions.uploadExpiryMs). */
  expiryMs: number;
  /** Where a finished upload is fetched to for intake: on the media root's file system (`<dataDir>/scratch/tus`). */
  scratchDir: string;
}

/**
 * @tus/s3-store's S3Store whose writes pass through the upload's meter, and with no per-process
 * cache ({@link NO_CACHE}).
 */
class MeteredS3Store extends S3Store {
  constructor(
    options: ConstructorParameters<typeof S3Store>[0],
    private readonly hooks: StoreHooks,
  ) {
    super(options);
  }

  /** The SDK client, for what S3Store does not do (listing, fetching a finished upload). */
  get s3(): S3 {
    return this.client;
  }

  /** The upload's description, or undefined when `<id>.info` is not there. */
  async describe(id: string): Promise<Upload | undefined> {
    try {
      return (await this.getMetadata(id)).file;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  override async create(upload: Upload): Promise<Upload> {
    return this.hooks.aroundCreate ? this.hooks.aroundCreate(upload, () => super.create(upload)) : super.create(upload);
  }

  /** As S3Store.remove (termination, a replaced upload), and the short tail S3Store leaves behind. */
  override async remove(id: string): Promise<void> {
    await super.remove(id);
    await this.client.deleteObject({ Bucket: this.bucket, Key: this.partKey(id, true) });
  }

  override async write(readable: Readable, id: string, offset: number): Promise<number> {
    const metered = this.hooks.meter(id, offset);
    this.hooks.receiving(id, 1);
    try {
      // The meter's refusal (507) ends the S3 write too, with the bytes before it kept as parts.
      const writing = super.write(metered, id, offset).catch((err: unknown) => {
        metered.destroy(err as Error);
        throw err;
      });
      const [, newOffset] = await Promise.all([pipeline(readable, metered), writing]);
      return newOffset;
    } finally {
      this.hooks.receiving(id, -1);
    }
  }
}

/**
 * Cluster mode's tus storage (issue 11, item 3): uploads under way live in the media bucket with
 * @tus/s3-store, so that any API node takes the next PATCH of an upload another began. S3Store
 * names an upload's objects at the bucket's root, apart from the media areas: `<id>` (an S3
 * multipart upload while under way, the whole file once complete), `<id>.info` (its
 * description) and `<id>.part` (a tail shorter than S3's smallest part, between two PATCHes).
 */
export class S3TusStorage implements TusStorage {
  readonly kind = 's3' as const;
  readonly store: MeteredS3Store;

  constructor(
    private readonly options: S3TusStorageOptions,
    hooks: StoreHooks,
  ) {
    // What a crash left here was being finished then; a sweep fetches it again.
    fs.rmSync(options.scratchDir, { recursive: true, force: true });
    const s3 = options.s3;
    this.store = new MeteredS3Store(
      {
        partSize: s3.partSizeBytes,
        expirationPeriodInMilliseconds: options.expiryMs,
        // Expiry is swept here (removeStale), not by bucket lifecycle rules on tags.
        useTags: false,
        cache: NO_CACHE,
        // The media store's client settings (s3Options.ts), on the same bucket.
        s3ClientConfig: { bucket: s3.bucket, ...s3ClientConfig(s3) },
      },
      hooks,
    );
  }

  private get bucket(): string {
    return this.options.s3.bucket;
  }

  async listUploadIds(): Promise<string[]> {
    const names = await this.rootNames();
    return [...names.keys()].filter((n) => n.endsWith('.info')).map((n) => n.slice(0, -5)).filter((id) => UPLOAD_ID_RE.test(id));
  }

  info(id: string): Promise<Upload | undefined> {
    return this.store.describe(id);
  }

  async lastWriteMs(id: string): Promise<number | undefined> {
    for (const key of [id, `${id}.part`]) {
      try {
        const head = await this.store.s3.headObject({ Bucket: this.bucket, Key: key });
        if (head.LastModified) return head.LastModified.getTime();
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    return undefined;
  }

  /**
   * Fetches the finished upload into this node's scratch folder: intake probes a file, and claims
   * it by a hard link on the media root's file system before handing it to the bucket under
   * `sources/<id>/source`. (A server-side copy would save the round trip; the probe would then
   * read the object through the media store's local copy. An optimisation for later.)
   */
  async withLocalFile<T>(id: string, use: (file: string) => Promise<T>): Promise<T> {
    if (!UPLOAD_ID_RE.test(id)) throw new Error(`Unsafe tus upload id: ${JSON.stringify(id)}`);
    const file = path.join(this.options.scratchDir, id);
    if (!isPathInsideDirectory(this.options.scratchDir, file)) throw new Error(`Unsafe tus upload id: ${JSON.stringify(id)}`);
    await fs.promises.mkdir(this.options.scratchDir, { recursive: true });
    try {
      const object = await this.store.s3.getObject({ Bucket: this.bucket, Key: id });
      await pipeline(object.Body as Readable, fs.createWriteStream(file));
      return await use(file);
    } finally {
      await fs.promises.rm(file, { force: true });
    }
  }

  /**
   * The description first: from then on the URL answers 404 on every node and nothing finishes
   * the upload again; the bytes follow (what a crash leaves of them, removeStale removes).
   */
  async forget(id: string): Promise<void> {
    const described = await this.store.s3.getObject({ Bucket: this.bucket, Key: `${id}.info` }).then(
      (o) => o.Metadata?.['upload-id'],
      (err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      },
    );
    await this.store.s3.deleteObject({ Bucket: this.bucket, Key: `${id}.info` });
    if (described) {
      await this.store.s3.abortMultipartUpload({ Bucket: this.bucket, Key: id, UploadId: described }).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    }
    await this.store.s3.deleteObjects({ Bucket: this.bucket, Delete: { Objects: [{ Key: id }, { Key: `${id}.part` }], Quiet: true } });
  }

  async removeStale(): Promise<number> {
    const now = Date.now();
    const cutoff = now - this.options.expiryMs;
    const names = await this.rootNames();
    let n = 0;
    // Unfinished uploads past their expiry (a PATCH to one is refused with 410 already).
    for (const name of names.keys()) {
      const id = STALE_NAME_RE.exec(name)?.[1];
      if (!id || !name.endsWith('.info')) continue;
      const upload = await this.store.getUpload(id).catch(() => undefined);
      const expires = upload && expiresAt(upload, this.options.expiryMs);
      if (upload && !isComplete(upload) && expires !== undefined && expires < now) {
        await this.forget(id);
        n++;
      }
    }
    // Bytes without a description (a creation cut off between the two, or a forget cut off
    // after the first step), once older than the expiry: the objects, then multipart uploads.
    for (const [name, modified] of names) {
      const id = STALE_NAME_RE.exec(name)?.[1];
      if (!id || name.endsWith('.info') || names.has(`${id}.info`) || modified >= cutoff) continue;
      await this.store.s3.deleteObject({ Bucket: this.bucket, Key: name });
      n++;
    }
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      const page = await this.store.s3.listMultipartUploads({ Bucket: this.bucket, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker });
      for (const u of page.Uploads ?? []) {
        // Only tus's own: the media store's puts in progress are multipart uploads too.
        if (!u.Key || !UPLOAD_ID_RE.test(u.Key) || names.has(`${u.Key}.info`) || !u.Initiated || u.Initiated.getTime() >= cutoff) continue;
        await this.store.s3.abortMultipartUpload({ Bucket: this.bucket, Key: u.Key, UploadId: u.UploadId });
        n++;
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      uploadIdMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined;
    } while (keyMarker !== undefined);
    return n;
  }

  /**
   * The upload that video `videoId`'s mark names, if any: `tus-videos/<videoId>` holds the id of
   * the last upload created for the video on any node (TusUploads keeps one live upload per video).
   */
  async uploadOfVideo(videoId: string): Promise<string | undefined> {
    try {
      const object = await this.store.s3.getObject({ Bucket: this.bucket, Key: videoMarkKey(videoId) });
      const id = (await object.Body?.transformToString())?.trim() ?? '';
      return UPLOAD_ID_RE.test(id) ? id : undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Marks `uploadId` as the video's upload (see {@link uploadOfVideo}). */
  async markVideo(videoId: string, uploadId: string): Promise<void> {
    await this.store.s3.putObject({ Bucket: this.bucket, Key: videoMarkKey(videoId), Body: uploadId, ContentType: 'text/plain' });
  }

  /** Removes the video's mark if it still names `uploadId`. */
  async unmarkVideo(videoId: string, uploadId: string): Promise<void> {
    if ((await this.uploadOfVideo(videoId)) !== uploadId) return;
    await this.store.s3.deleteObject({ Bucket: this.bucket, Key: videoMarkKey(videoId) });
  }

  /** The objects at the bucket's root (not in a media area), with when each was last written. */
  private async rootNames(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    let token: string | undefined;
    do {
      const page = await this.store.s3.listObjectsV2({ Bucket: this.bucket, Delimiter: '/', ContinuationToken: token });
      for (const o of page.Contents ?? []) if (o.Key) out.set(o.Key, o.LastModified?.getTime() ?? 0);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return out;
  }
}

/** Where a video's mark lives: beside the uploads, outside the media areas. */
function videoMarkKey(videoId: string): string {
  if (!VIDEO_ID_RE.test(videoId)) throw new Error(`Unsafe video id: ${JSON.stringify(videoId)}`);
  return `tus-videos/${videoId}`;
}

/** S3's answers for an object or multipart upload that is not there. */
function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; Code?: string; $metadata?: { httpStatusCode?: number } };
  return ['NotFound', 'NoSuchKey', 'NoSuchUpload'].includes(e?.name ?? '') || ['NoSuchKey', 'NoSuchUpload'].includes(e?.Code ?? '') || e?.$metadata?.httpStatusCode === 404;
}
