import type { MediaObjectInfo, MediaStore } from './mediaStore.js';

/** Bounds of {@link ObjectInfoCache}. */
export interface ObjectInfoCacheOptions {
  /** Longest time an object's info is used without asking the store again. */
  ttlMs: number;
  /** Most objects kept; the oldest entry goes first. */
  maxObjects: number;
}

export const DEFAULT_OBJECT_INFO_CACHE: ObjectInfoCacheOptions = { ttlMs: 10_000, maxObjects: 10_000 };

/**
 * Media objects' info (size, etag, date) kept for delivery from a store without local files (S3;
 * issue 14): each media request asked the bucket twice, HeadObject for the validators and the
 * range's check, then GetObject for the bytes. With the info kept, a GET is one GetObject, sent
 * with If-Match on the kept etag (MediaStore.openRange's `ifMatch`), so the bytes are always the
 * ones the info describes: an object replaced meanwhile fails the GET, and delivery asks anew
 * ({@link forget}). A HEAD, a 304 or a 416 is answered from the kept info without a call: it may
 * describe an object replaced or removed on another node for up to `ttlMs`, but a video's media
 * change only while it is out of status 1, which delivery checks first on every request
 * (services/mediaDelivery.ts), and {@link forgetVideo} drops a video's entries on its status event.
 * Missing objects are never kept: a miss always asks the store.
 */
export class ObjectInfoCache {
  private readonly entries = new Map<string, { info: MediaObjectInfo; until: number }>();

  constructor(private readonly o: ObjectInfoCacheOptions = DEFAULT_OBJECT_INFO_CACHE) {}

  /** The info of `key`, kept or from `store.stat`; undefined if there is no object. */
  async stat(store: MediaStore, key: string): Promise<MediaObjectInfo | undefined> {
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && hit.until > now) return hit.info;
    const info = await store.stat(key);
    this.entries.delete(key);
    if (!info) return undefined;
    if (this.entries.size >= this.o.maxObjects) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { info, until: now + this.o.ttlMs });
    return info;
  }

  /** Drops `key`: the store said it changed or is gone. */
  forget(key: string): void {
    this.entries.delete(key);
  }

  /** Drops every object of video `videoId` (its id is in each of its keys: play, covers, hls, sources). */
  forgetVideo(videoId: string): void {
    for (const key of this.entries.keys()) if (key.includes(videoId)) this.entries.delete(key);
  }

  /** Objects kept now (for tests). */
  get size(): number {
    return this.entries.size;
  }
}
