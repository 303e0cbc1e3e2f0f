import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { afterEach, describe, expect, it } from 'vitest';
import { MediaObjectChangedError, MediaObjectNotFoundError, mediaKey, type MediaStore } from '../../server/storage/media/mediaStore.js';
import { tempDataDir } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';

/**
 * The contract of MediaStore (server/storage/media/mediaStore.ts), written once and run against
 * every implementation: local disk (test/storage/media-store-contract-local.test.ts, quick tier) and S3 on
 * a real Ceph RGW (test/storage/media-store-contract-s3.test.ts, full tier), the way tus-node-server runs
 * one suite against every store. A store passes by what its methods answer, never by how it keeps
 * the bytes.
 */

/** A media store, empty, of one implementation. */
export interface OpenedMediaStore {
  store: MediaStore;
  /** True when withLocalCopy hands out a scratch copy (removed after) rather than the object's own file. */
  copies: boolean;
  close(): Promise<void>;
}

/** Makes an empty media store per call (called inside each test, so it may use a service a `beforeAll` started). */
export type MediaStoreFactory = () => Promise<OpenedMediaStore>;

/** The smallest part S3 takes; puts larger than this go in parts (multipart upload). */
export const PART = 5 * 1024 * 1024;

/** `n` bytes of a pattern that `seed` varies. */
export const bytes = (n: number, seed = 1) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return b;
};
const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** A stream of `data` in 64 KiB chunks that fails after `failAfter` bytes, if given. */
export function streamOf(data: Buffer, failAfter?: number): Readable {
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

/**
 * The contract: every test on a new empty store from `factory`, closed after it. `name` names the
 * implementation in the suite's title.
 */
export function mediaStoreContract(name: string, factory: MediaStoreFactory): void {
  describe(`media store contract: ${name}`, () => {
    let opened: OpenedMediaStore;
    let s: MediaStore;
    let scratch: string;
    const open: OpenedMediaStore[] = [];
    const fresh = async () => {
      opened = await factory();
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
      // A file prepared for its move is taken the same; preparing a missing one does not fail.
      const prepared = srcFile(data, 'prepared.bin');
      await s.prepareMove(prepared);
      await s.put(mediaKey('play', '20261123', 'prepared-720p.mp4'), { file: prepared, move: true });
      expect(sha(await read(mediaKey('play', '20261123', 'prepared-720p.mp4')))).toBe(sha(data));
      await expect(s.prepareMove(moved)).resolves.toBeUndefined();
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
      const removed = await waitUntil('the stalled put found incomplete and removed', async () => {
        // Another video's names are not touched.
        expect(await s.removeIncomplete('play/20261123', 'vid2_')).toEqual([]);
        const r = await s.removeIncomplete('play/20261123', 'vid1_');
        return r.length > 0 ? r : notYet(r);
      }, { timeoutMs: 10_000, pollMs: 50 });
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
