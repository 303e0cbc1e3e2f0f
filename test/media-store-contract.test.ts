import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectMediaStore } from '../server/storage/media/localObjectMediaStore.js';
import { MediaObjectChangedError, MediaObjectNotFoundError, mediaKey, type MediaStore } from '../server/storage/media/mediaStore.js';
import { openMediaStore } from '../server/storage/media/openMediaStore.js';
import { openS3MediaStore, S3MediaStore } from '../server/storage/media/s3MediaStore.js';
import { s3OptionsFromEnv, validateS3Options } from '../server/storage/media/s3Options.js';
import { LocalMediaStore } from '../server/storage/mediaStore.js';
import { startCeph, type TestCeph } from './helpers/ceph.js';
import { tempDataDir } from './helpers/server.js';

/**
 * One contract suite for MediaStore (server/storage/media/mediaStore.ts), written once and run
 * against every implementation — local disk and S3 on a real Ceph RGW (test/helpers/ceph.ts) —
 * the way tus-node-server runs one suite against every store. A store passes by what its methods
 * answer, never by how it keeps the bytes.
 */

interface OpenedMediaStore {
  store: MediaStore;
  /** True when withLocalCopy hands out a scratch copy (removed after) rather than the object's own file. */
  copies: boolean;
  close(): Promise<void>;
}

type MediaStoreFactory = () => Promise<OpenedMediaStore>;

/** The smallest part S3 takes; puts larger than this go in parts (multipart upload). */
const PART = 5 * 1024 * 1024;

const bytes = (n: number, seed = 1) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return b;
};
const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** A stream of `data` in 64 KiB chunks that fails after `failAfter` bytes, if given. */
function streamOf(data: Buffer, failAfter?: number): Readable {
  let offset = 0;
  return new Readable({
    read() {
      if (failAfter !== undefined && offset >= failAfter) {
        this.destroy(new Error('source broke off'));
        return;
      }
      if (offset >= data.length) {
        this.push(null);
        return;
      }
      const end = Math.min(data.length, offset + 64 * 1024, failAfter ?? Infinity);
      this.push(data.subarray(offset, end));
      offset = end;
    },
  });
}

export function mediaStoreContract(name: string, factory: () => MediaStoreFactory): void {
  describe(`media store contract: ${name}`, () => {
    let opened: OpenedMediaStore;
    let s: MediaStore;
    let scratch: string;
    const open: OpenedMediaStore[] = [];
    const fresh = async () => {
      opened = await factory()();
      s = opened.store;
      open.push(opened);
      scratch = tempDataDir('vop-media-contract-src-');
    };
    afterEach(async () => {
      while (open.length) await open.pop()!.close();
    });
    const srcFile = (data: Buffer, name = 'src.bin') => {
      const file = path.join(scratch, name);
      fs.writeFileSync(file, data);
      return file;
    };
    const read = async (key: string, range?: { start: number; end: number }) => buffer(await s.openRange(key, range));

    it('stores a file and a stream, and answers stat and ranges: first byte, middle, last byte, whole', async () => {
      await fresh();
      const data = bytes(100_000);
      const key = mediaKey('play', '20261123', 'v1-720p.mp4');
      const info = await s.put(key, { file: srcFile(data) }, { contentType: 'video/mp4' });
      expect(info).toMatchObject({ key, size: data.length });
      expect(info.etag).toMatch(/\S/);
      expect(Math.abs(info.modifiedAt - Date.now())).toBeLessThan(120_000);
      expect(await s.stat(key)).toEqual(info);

      expect(await read(key, { start: 0, end: 0 })).toEqual(data.subarray(0, 1));
      expect(await read(key, { start: 4000, end: 54_321 })).toEqual(data.subarray(4000, 54_322));
      expect(await read(key, { start: data.length - 1, end: data.length - 1 })).toEqual(data.subarray(data.length - 1));
      expect(sha(await read(key))).toBe(sha(data));
      expect(sha(await read(key, { start: 0, end: data.length - 1 }))).toBe(sha(data));

      const streamed = mediaKey('covers', 'v1', 'cover.jpg');
      const small = bytes(777, 2);
      expect((await s.put(streamed, { stream: streamOf(small) })).size).toBe(777);
      expect(await read(streamed)).toEqual(small);
      // The source file is read, not moved.
      expect(fs.existsSync(path.join(scratch, 'src.bin'))).toBe(true);
    });

    it('stores an empty object', async () => {
      await fresh();
      const key = mediaKey('hls', 'v1', 'empty.ts');
      expect((await s.put(key, { stream: streamOf(Buffer.alloc(0)) })).size).toBe(0);
      expect((await s.stat(key))?.size).toBe(0);
      expect((await read(key)).length).toBe(0);
    });

    it('reads an object only while it is the one an etag names (ifMatch), whole or a range', async () => {
      await fresh();
      const key = mediaKey('hls', 'v1', '360p', 'seg_00001.ts');
      const first = await s.put(key, { stream: streamOf(bytes(5000, 3)) });
      expect(await buffer(await s.openRange(key, { start: 10, end: 19 }, { ifMatch: first.etag }))).toEqual(bytes(5000, 3).subarray(10, 20));
      expect(await buffer(await s.openRange(key, undefined, { ifMatch: first.etag }))).toEqual(bytes(5000, 3));
      // Replaced by an object of the same size: the old etag no longer reads it, the new one does.
      const second = await s.put(key, { stream: streamOf(bytes(5000, 4)) });
      expect(second.etag).not.toBe(first.etag);
      await expect(s.openRange(key, { start: 10, end: 19 }, { ifMatch: first.etag })).rejects.toThrow(MediaObjectChangedError);
      await expect(s.openRange(key, undefined, { ifMatch: first.etag })).rejects.toThrow(MediaObjectChangedError);
      expect(await buffer(await s.openRange(key, { start: 10, end: 19 }, { ifMatch: second.etag }))).toEqual(bytes(5000, 4).subarray(10, 20));
      // Gone: not found, whatever the etag.
      await s.delete(key);
      await expect(s.openRange(key, undefined, { ifMatch: second.etag })).rejects.toThrow(MediaObjectNotFoundError);
    });

    it('refuses a range outside the object and answers not-found for a missing one', async () => {
      await fresh();
      const key = mediaKey('sources', 'v1', 'source');
      await s.put(key, { stream: streamOf(bytes(10)) });
      await expect(s.openRange(key, { start: 5, end: 10 })).rejects.toThrow(RangeError);
      await expect(s.openRange(key, { start: 10, end: 12 })).rejects.toThrow(RangeError);
      await expect(s.openRange(key, { start: 4, end: 3 })).rejects.toThrow(RangeError);
      const missing = mediaKey('sources', 'v2', 'source');
      expect(await s.stat(missing)).toBeUndefined();
      await expect(s.openRange(missing)).rejects.toThrow(MediaObjectNotFoundError);
      await expect(s.openRange(missing, { start: 0, end: 0 })).rejects.toThrow(MediaObjectNotFoundError);
      await expect(s.withLocalCopy(missing, async () => 1)).rejects.toThrow(MediaObjectNotFoundError);
    });

    it('replaces an object whole, with a new etag', async () => {
      await fresh();
      const key = mediaKey('covers', 'v1', 'cover.jpg');
      const first = await s.put(key, { stream: streamOf(bytes(5000, 1)) });
      const second = await s.put(key, { stream: streamOf(bytes(3000, 2)) });
      expect(second.size).toBe(3000);
      expect(second.etag).not.toBe(first.etag);
      expect(await read(key)).toEqual(bytes(3000, 2));
    });

    it('a put whose source fails leaves nothing, and keeps the object it was replacing', async () => {
      await fresh();
      const key = mediaKey('sources', 'v1', 'source');
      await expect(s.put(key, { stream: streamOf(bytes(200_000), 100_000) })).rejects.toThrow(/source broke off/);
      expect(await s.stat(key)).toBeUndefined();
      expect(await s.list('sources')).toEqual([]);
      await expect(s.put(key, { file: path.join(scratch, 'no-such-file') })).rejects.toThrow();
      expect(await s.stat(key)).toBeUndefined();

      const old = bytes(4321, 3);
      await s.put(key, { stream: streamOf(old) });
      await expect(s.put(key, { stream: streamOf(bytes(200_000), 150_000) })).rejects.toThrow(/source broke off/);
      expect(await read(key)).toEqual(old);
      expect((await s.list('sources')).map((o) => o.key)).toEqual([key]);
    });

    it('takes a handed-over file (move): the object holds its bytes and the file is gone; a plain file put leaves the file', async () => {
      await fresh();
      const data = bytes(70_000, 9);
      const moved = srcFile(data, 'moved.bin');
      const key = mediaKey('play', '20261123', 'moved-720p.mp4');
      expect((await s.put(key, { file: moved, move: true })).size).toBe(data.length);
      expect(fs.existsSync(moved)).toBe(false);
      expect(sha(await read(key))).toBe(sha(data));
      const kept = srcFile(bytes(10, 2), 'kept.bin');
      await s.put(mediaKey('covers', 'v1', 'cover.jpg'), { file: kept });
      expect(fs.readFileSync(kept)).toEqual(bytes(10, 2));
      // A handed-over file that is not there fails, and stores nothing.
      await expect(s.put(mediaKey('covers', 'v1', 'gone.jpg'), { file: moved, move: true })).rejects.toThrow();
      expect(await s.stat(mediaKey('covers', 'v1', 'gone.jpg'))).toBeUndefined();
    });

    it('names what lies one level below a prefix, once each, objects and deeper keys alike', async () => {
      await fresh();
      for (const k of ['hls/v2/720p/seg_0.ts', 'hls/v2/master.m3u8', 'hls/v1/master.m3u8', 'hls/v10/720p/index.m3u8', 'hlsx/nope', 'covers/v1/cover.jpg']) {
        if (k.startsWith('hlsx')) continue;
        await s.put(k, { stream: streamOf(bytes(3)) });
      }
      expect(await s.listNames('hls')).toEqual(['v1', 'v10', 'v2']);
      expect(await s.listNames('hls/v2')).toEqual(['720p', 'master.m3u8']);
      expect(await s.listNames('hls/v3')).toEqual([]);
      await s.deletePrefix('hls/v10');
      expect(await s.listNames('hls')).toEqual(['v1', 'v2']);
    });

    it('removes the leftovers of a put cut off, for the names asked only', async () => {
      await fresh();
      // A put whose source stalls after two parts: as a crash leaves it (a hidden temporary file
      // on disk, an open multipart upload on S3).
      let sent = 0;
      const stalled = new Readable({
        read() {
          if (sent >= 2 * PART + 1) return; // and never ends
          const n = Math.min(64 * 1024, 2 * PART + 1 - sent);
          sent += n;
          this.push(bytes(n));
        },
      });
      const key = mediaKey('play', '20261123', 'vid1_720p.mp4');
      const put = s.put(key, { stream: stalled });
      put.catch(() => undefined);
      await s.put(mediaKey('play', '20261123', 'vid1_480p.mp4'), { stream: streamOf(bytes(10)) });
      let removed: string[] = [];
      for (let i = 0; i < 200 && removed.length === 0; i++) {
        // Another video's names are not touched.
        expect(await s.removeIncomplete('play/20261123', 'vid2_')).toEqual([]);
        removed = await s.removeIncomplete('play/20261123', 'vid1_');
        if (removed.length === 0) await new Promise((r) => setTimeout(r, 50));
      }
      expect(removed).toHaveLength(1);
      expect(removed[0]).toContain('vid1_720p.mp4');
      stalled.destroy(new Error('source broke off'));
      await expect(put).rejects.toThrow();
      expect((await s.list('play')).map((o) => o.key)).toEqual([mediaKey('play', '20261123', 'vid1_480p.mp4')]);
      expect(await s.removeIncomplete('play/20261123', 'vid1_')).toEqual([]);
    });

    it('stores an object larger than a part (multipart on S3) and fails one whole when its source breaks after two parts', async () => {
      await fresh();
      const data = bytes(2 * PART + 12345, 4);
      const key = mediaKey('sources', 'big', 'source');
      await s.put(key, { file: srcFile(data) });
      expect((await s.stat(key))?.size).toBe(data.length);
      expect(sha(await read(key))).toBe(sha(data));
      expect(await read(key, { start: PART - 2, end: PART + 1 })).toEqual(data.subarray(PART - 2, PART + 2));

      const broken = mediaKey('sources', 'broken', 'source');
      await expect(s.put(broken, { stream: streamOf(data, 2 * PART + 100) })).rejects.toThrow(/source broke off/);
      expect(await s.stat(broken)).toBeUndefined();
      expect((await s.list('sources')).map((o) => o.key)).toEqual([key]);
    });

    it('deletes one object, and a missing one without complaint', async () => {
      await fresh();
      const key = mediaKey('covers', 'v1', 'cover.jpg');
      await s.put(key, { stream: streamOf(bytes(10)) });
      await s.delete(key);
      expect(await s.stat(key)).toBeUndefined();
      await s.delete(key);
    });

    it('lists and deletes by prefix in whole segments, at any depth, sorted', async () => {
      await fresh();
      const keys = ['hls/v1/master.m3u8', 'hls/v1/720p/seg-0001.ts', 'hls/v1/720p/index.m3u8', 'hls/v1x/master.m3u8', 'covers/v1/cover.jpg'];
      for (const [i, k] of keys.entries()) await s.put(k, { stream: streamOf(bytes(100 + i, i)) });
      const listed = await s.list('hls/v1');
      expect(listed.map((o) => o.key)).toEqual(['hls/v1/720p/index.m3u8', 'hls/v1/720p/seg-0001.ts', 'hls/v1/master.m3u8']);
      expect(listed.map((o) => o.size)).toEqual([102, 101, 100]);
      expect((await s.list('hls')).map((o) => o.key)).toEqual(['hls/v1/720p/index.m3u8', 'hls/v1/720p/seg-0001.ts', 'hls/v1/master.m3u8', 'hls/v1x/master.m3u8']);
      expect(await s.list('hls/v1/720p/seg-0001.ts')).toEqual([]);
      expect(await s.list('play')).toEqual([]);
      expect(await s.list('hls/nobody')).toEqual([]);

      expect(await s.deletePrefix('hls/v1')).toBe(3);
      expect((await s.list('hls')).map((o) => o.key)).toEqual(['hls/v1x/master.m3u8']);
      expect(await s.stat('covers/v1/cover.jpg')).toBeDefined();
      expect(await s.deletePrefix('hls/v1')).toBe(0);
      expect(await s.deletePrefix('hls')).toBe(1);
      expect(await s.list('hls')).toEqual([]);
      expect(await s.stat('covers/v1/cover.jpg')).toBeDefined();
    });

    it('withLocalCopy gives a file with the bytes for the callback; a scratch copy is gone after and never stored back', async () => {
      await fresh();
      const data = bytes(30_000, 5);
      const key = mediaKey('sources', 'v1', 'source.mp4');
      await s.put(key, { stream: streamOf(data) });
      let seen = '';
      const result = await s.withLocalCopy(key, async (file) => {
        seen = file;
        expect(path.isAbsolute(file)).toBe(true);
        expect(sha(fs.readFileSync(file))).toBe(sha(data));
        if (opened.copies) {
          expect(path.extname(file)).toBe('.mp4');
          fs.writeFileSync(file, 'scribbled');
        }
        return 42;
      });
      expect(result).toBe(42);
      expect(sha(await read(key))).toBe(sha(data));
      if (opened.copies) expect(fs.existsSync(seen)).toBe(false);
      else expect(fs.existsSync(seen)).toBe(true);

      // A callback that throws: the error comes back, the scratch copy still goes.
      await expect(
        s.withLocalCopy(key, async (file) => {
          seen = file;
          throw new Error('ffmpeg failed');
        }),
      ).rejects.toThrow('ffmpeg failed');
      if (opened.copies) expect(fs.existsSync(seen)).toBe(false);
    });

    it('makeAvailable gives several files in the order asked', async () => {
      await fresh();
      const a = mediaKey('hls', 'v1', 'a.ts');
      const b = mediaKey('covers', 'v1', 'a.ts');
      await s.put(a, { stream: streamOf(bytes(10, 1)) });
      await s.put(b, { stream: streamOf(bytes(20, 2)) });
      const files = await s.makeAvailable([b, a], async (files) => {
        expect(fs.readFileSync(files[0]!)).toEqual(bytes(20, 2));
        expect(fs.readFileSync(files[1]!)).toEqual(bytes(10, 1));
        return files;
      });
      expect(files).toHaveLength(2);
      if (opened.copies) for (const f of files) expect(fs.existsSync(f)).toBe(false);
      await expect(s.makeAvailable([a, mediaKey('hls', 'v1', 'missing.ts')], async () => 1)).rejects.toThrow(MediaObjectNotFoundError);
    });

    it('a local copy stops with its signal: aborted before, or while the bytes come, with the reason and no file left', async () => {
      await fresh();
      const key = mediaKey('play', '20240101', 'sig.mp4');
      await s.put(key, { stream: streamOf(bytes(8 * 1024 * 1024, 3)) });
      const reason = new Error('the lease was lost');
      let ran = false;
      await expect(s.withLocalCopy(key, async () => (ran = true), { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
      expect(ran).toBe(false);
      // Aborted a moment after the copy began: a scratch copy stops (a local file has nothing to copy, and runs).
      const controller = new AbortController();
      const copying = s.makeAvailable([key], async (files) => files, { signal: controller.signal });
      setImmediate(() => controller.abort(reason));
      const outcome = await copying.then((files) => ({ files }), (err: unknown) => ({ err }));
      if ('err' in outcome) {
        expect(opened.copies).toBe(true);
        expect(outcome.err).toBe(reason);
      } else {
        for (const f of outcome.files) if (opened.copies) expect(fs.existsSync(f)).toBe(false);
      }
    });

    it('refuses every unsafe key before touching anything', async () => {
      await fresh();
      const good = mediaKey('hls', 'v1', 'x.ts');
      await s.put(good, { stream: streamOf(bytes(10)) });
      const unsafe = ['..', 'hls/..', 'hls/../covers/v1', 'hls/v1/../../x', 'hls//x', 'hls/v1/', '/hls/v1', 'hls/.hidden', 'hls/v1\\x', 'nope/v1', '', 'hls/a b', 'hls/%2e%2e'];
      for (const key of unsafe) {
        await expect(s.put(key, { stream: streamOf(bytes(1)) }), key).rejects.toThrow(/Unsafe media key/);
        await expect(s.stat(key), key).rejects.toThrow(/Unsafe media key/);
        await expect(s.openRange(key), key).rejects.toThrow(/Unsafe media key/);
        await expect(s.delete(key), key).rejects.toThrow(/Unsafe media key/);
        await expect(s.deletePrefix(key), key).rejects.toThrow(/Unsafe media key/);
        await expect(s.list(key), key).rejects.toThrow(/Unsafe media key/);
        await expect(s.withLocalCopy(key, async () => 1), key).rejects.toThrow(/Unsafe media key/);
        await expect(s.presignedUrl(key, { ttlSeconds: 60 }), key).rejects.toThrow(/Unsafe media key/);
      }
      // An area alone names a prefix, never an object.
      await expect(s.put('hls', { stream: streamOf(bytes(1)) })).rejects.toThrow(/Unsafe media key/);
      await expect(s.stat('hls')).rejects.toThrow(/Unsafe media key/);
      expect(() => mediaKey('hls', 'v1', '..')).toThrow(/Unsafe media key/);
      expect(() => mediaKey('hls', 'a/b')).toThrow(/Unsafe media key/);
      expect(() => mediaKey('hls', '')).toThrow(/Unsafe media key/);
      // Nothing was written or removed.
      expect((await s.list('hls')).map((o) => o.key)).toEqual([good]);
    });
  });
}

/** Local disk: a data directory per test (under the run's temporary folder, removed at its end). */
mediaStoreContract('local disk', () => async () => {
  const local = new LocalMediaStore(tempDataDir('vop-media-contract-'));
  return { store: new LocalObjectMediaStore(local), copies: false, close: async () => undefined };
});

describe('local disk specifics', () => {
  it('keeps objects as files under the media root, hides puts in progress from list, and has no presigned URL', async () => {
    const local = new LocalMediaStore(tempDataDir('vop-media-contract-'));
    const s = new LocalObjectMediaStore(local);
    await s.put('play/20261123/v1-720p.mp4', { stream: streamOf(bytes(10)) });
    expect(fs.readFileSync(local.path('play', '20261123', 'v1-720p.mp4'))).toEqual(bytes(10));
    // What a put in progress looks like (atomicFile's hidden temporary name): never a key.
    fs.writeFileSync(path.join(local.path('play', '20261123'), '.v1-1080p.mp4.partial-abc.mp4'), 'half');
    expect((await s.list('play')).map((o) => o.key)).toEqual(['play/20261123/v1-720p.mp4']);
    expect(await s.presignedUrl('play/20261123/v1-720p.mp4')).toBeUndefined();
    expect(await s.freeBytes()).toBeGreaterThan(0);
    await s.deletePrefix('play');
    expect(fs.existsSync(local.path('play'))).toBe(true);
  });
});

describe('object storage options', () => {
  const env = { VOP_S3_ENDPOINT: 'http://127.0.0.1:7480', VOP_S3_BUCKET: 'vop-media', VOP_S3_ACCESS_KEY_ID: 'k', VOP_S3_SECRET_ACCESS_KEY: 's' };
  it('is off without VOP_S3_ENDPOINT, and reads the rest with defaults', () => {
    expect(s3OptionsFromEnv({})).toBeUndefined();
    expect(s3OptionsFromEnv({ ...env })).toMatchObject({ endpoint: 'http://127.0.0.1:7480', bucket: 'vop-media', region: 'us-east-1', forcePathStyle: false, createBucketIfMissing: true });
    expect(s3OptionsFromEnv({ ...env, VOP_S3_FORCE_PATH_STYLE: '1', VOP_S3_REGION: 'eu-west-3' })).toMatchObject({ forcePathStyle: true, region: 'eu-west-3' });
  });
  it('names the variable that is wrong', () => {
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_BUCKET: '' })).toThrow(/VOP_S3_BUCKET/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_BUCKET: 'Bad_Bucket' })).toThrow(/VOP_S3_BUCKET/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_ACCESS_KEY_ID: '' })).toThrow(/VOP_S3_ACCESS_KEY_ID/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_SECRET_ACCESS_KEY: undefined })).toThrow(/VOP_S3_SECRET_ACCESS_KEY/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_ENDPOINT: 'ftp://x' })).toThrow(/VOP_S3_ENDPOINT/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_ENDPOINT: 'not a url' })).toThrow(/VOP_S3_ENDPOINT/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_FORCE_PATH_STYLE: 'yes' })).toThrow(/VOP_S3_FORCE_PATH_STYLE/);
    expect(() => validateS3Options({ ...s3OptionsFromEnv(env), partSizeBytes: 1024 })).toThrow(/partSizeBytes/);
    expect(() => validateS3Options({ ...s3OptionsFromEnv(env), listPageSize: 1001 })).toThrow(/listPageSize/);
  });
  it('waits for an endpoint that does not answer with a log line per try, and gives up in bounded time', async () => {
    const lines: string[] = [];
    const started = Date.now();
    await expect(
      openS3MediaStore({ ...s3OptionsFromEnv({ ...env, VOP_S3_ENDPOINT: 'http://127.0.0.1:9' }), waitForEndpointMs: 1500, waitIntervalMs: 200, log: (l) => lines.push(l) }),
    ).rejects.toThrow(/did not answer within/);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines[0]).toMatch(/^Waiting for object storage at http:\/\/127\.0\.0\.1:9 \(bucket vop-media\), try 1/);
  });
});

/** S3 on a real Ceph RGW: the run's one cluster (test/helpers/ceph.ts), a bucket per test. */
describe('Ceph RGW', () => {
  let ceph: TestCeph | undefined;
  const logs: string[] = [];
  beforeAll(async () => {
    ceph = await startCeph();
    console.log(`Ceph RGW started in ${ceph.startMs} ms`);
  }, 120_000);
  afterAll(async () => ceph?.stop(), 30_000);

  const openBucket = (bucket = `vop-${crypto.randomBytes(6).toString('hex')}`, more: Record<string, unknown> = {}) =>
    openS3MediaStore({
      ...s3OptionsFromEnv({
        VOP_S3_ENDPOINT: ceph!.endpoint,
        VOP_S3_BUCKET: bucket,
        VOP_S3_ACCESS_KEY_ID: ceph!.accessKeyId,
        VOP_S3_SECRET_ACCESS_KEY: ceph!.secretAccessKey,
        VOP_S3_FORCE_PATH_STYLE: '1',
      }),
      partSizeBytes: PART,
      scratchDir: tempDataDir('vop-s3-scratch-'),
      log: (l) => logs.push(l),
      ...more,
    });

  mediaStoreContract('S3 (Ceph RGW)', () => async () => {
    const store = await openBucket();
    return { store, copies: true, close: async () => store.close() };
  });

  describe('S3 specifics', () => {
    let store: S3MediaStore;
    beforeAll(async () => {
      store = await openBucket();
    });
    afterAll(() => store?.close());

    it('creates the bucket when missing, with a log line, and opens an existing one quietly', async () => {
      const bucket = `vop-created-${crypto.randomBytes(4).toString('hex')}`;
      logs.length = 0;
      const first = await openBucket(bucket);
      expect(logs).toEqual([`Object storage: created bucket ${bucket} at ${ceph!.endpoint}.`]);
      await first.put('covers/v1/cover.jpg', { stream: streamOf(bytes(3)) });
      first.close();
      logs.length = 0;
      const again = await openBucket(bucket);
      expect(logs).toEqual([]);
      expect((await again.stat('covers/v1/cover.jpg'))?.size).toBe(3);
      again.close();
    });

    it('openMediaStore picks object storage when VOP_S3_ENDPOINT is set, local disk otherwise', async () => {
      const local = new LocalMediaStore(tempDataDir('vop-media-contract-'));
      const onDisk = await openMediaStore(local, {});
      expect(onDisk.store.kind).toBe('local');
      onDisk.close();
      const bucket = `vop-env-${crypto.randomBytes(4).toString('hex')}`;
      const env = {
        VOP_S3_ENDPOINT: ceph!.endpoint,
        VOP_S3_BUCKET: bucket,
        VOP_S3_ACCESS_KEY_ID: ceph!.accessKeyId,
        VOP_S3_SECRET_ACCESS_KEY: ceph!.secretAccessKey,
        VOP_S3_FORCE_PATH_STYLE: '1',
      };
      const inS3 = await openMediaStore(local, env, { log: () => undefined });
      try {
        expect(inS3.store.kind).toBe('s3');
        await inS3.store.put('covers/v1/cover.jpg', { stream: streamOf(bytes(4)) });
        // The object is in the bucket the environment named, and not on the local disk.
        const direct = await openBucket(bucket);
        expect((await direct.stat('covers/v1/cover.jpg'))?.size).toBe(4);
        direct.close();
        expect(fs.existsSync(local.path('covers', 'v1', 'cover.jpg'))).toBe(false);
      } finally {
        inS3.close();
      }
      await expect(openMediaStore(local, { ...env, VOP_S3_BUCKET: 'Bad_Bucket' })).rejects.toThrow(/VOP_S3_BUCKET/);
    });

    it('refuses a wrong secret with an error that names the variables to check', async () => {
      await expect(openBucket(undefined, { secretAccessKey: 'wrong' })).rejects.toThrow(/refused bucket .*VOP_S3_SECRET_ACCESS_KEY/);
    });

    it('serves a presigned GET with Range (206) and a presigned HEAD, and refuses the GET URL for HEAD', async () => {
      const data = bytes(10_000, 6);
      const key = 'play/20261123/v1-720p.mp4';
      await store.put(key, { stream: streamOf(data) }, { contentType: 'video/mp4' });
      const get = await store.presignedUrl(key, { ttlSeconds: 60 });
      expect(get.startsWith(`${ceph!.endpoint}/`)).toBe(true);
      const whole = await fetch(get);
      expect(whole.status).toBe(200);
      expect(whole.headers.get('content-type')).toBe('video/mp4');
      expect(Buffer.from(await whole.arrayBuffer())).toEqual(data);
      const part = await fetch(get, { headers: { Range: 'bytes=100-199' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes 100-199/${data.length}`);
      expect(Buffer.from(await part.arrayBuffer())).toEqual(data.subarray(100, 200));
      const last = await fetch(get, { headers: { Range: 'bytes=-1' } });
      expect(last.status).toBe(206);
      expect(Buffer.from(await last.arrayBuffer())).toEqual(data.subarray(data.length - 1));

      const head = await fetch(await store.presignedUrl(key, { ttlSeconds: 60, method: 'HEAD' }), { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe(String(data.length));
      expect(head.headers.get('accept-ranges')).toBe('bytes');
      // A signature covers its method: the GET URL is no HEAD URL.
      expect((await fetch(get, { method: 'HEAD' })).status).toBe(403);
      // Nor is it a key to anything else.
      expect((await fetch(get.replace('v1-720p.mp4', 'v1-1080p.mp4'))).status).toBe(403);
    });

    it('presigned URLs expire, and their life is bounded', async () => {
      const key = 'covers/v1/cover.jpg';
      await store.put(key, { stream: streamOf(bytes(5)) });
      const url = await store.presignedUrl(key, { ttlSeconds: 1 });
      expect((await fetch(url)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 2100));
      expect((await fetch(url)).status).toBe(403);
      await expect(store.presignedUrl(key, { ttlSeconds: 0 })).rejects.toThrow(RangeError);
      await expect(store.presignedUrl(key, { ttlSeconds: 8 * 24 * 3600 })).rejects.toThrow(RangeError);
    });

    it('a multipart put that fails leaves no upload behind', async () => {
      const data = bytes(2 * PART + 10, 7);
      await expect(store.put('sources/v9/source', { stream: streamOf(data, 2 * PART + 5) })).rejects.toThrow(/source broke off/);
      const uploads = await store.client.send(new ListMultipartUploadsCommand({ Bucket: store.options.bucket }));
      expect(uploads.Uploads ?? []).toEqual([]);
    });

    it('lists and deletes past one page of results', async () => {
      const paged = await openBucket(undefined, { listPageSize: 2 });
      try {
        const keys = Array.from({ length: 7 }, (_, i) => `hls/many/seg-${i}.ts`);
        for (const k of keys) await paged.put(k, { stream: streamOf(Buffer.from(k)) });
        await paged.put('hls/other/seg-0.ts', { stream: streamOf(Buffer.from('x')) });
        expect((await paged.list('hls/many')).map((o) => o.key)).toEqual(keys);
        expect(await paged.deletePrefix('hls/many')).toBe(7);
        expect((await paged.list('hls')).map((o) => o.key)).toEqual(['hls/other/seg-0.ts']);
      } finally {
        paged.close();
      }
    });
  });
});
