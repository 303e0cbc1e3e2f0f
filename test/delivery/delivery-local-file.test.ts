/**
 * MediaStore.openLocalFileSync (issue 14), the local store's optional way for delivery to read an
 * object: the same info as stat, the bytes of the very file that info was taken from, and
 * nothing for what is no object.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LocalObjectMediaStore } from '../../server/storage/media/localObjectMediaStore.js';
import { mediaKey, UnsafeMediaKeyError, type LocalMediaFile } from '../../server/storage/media/mediaStore.js';
import { LocalMediaRoot } from '../../server/storage/media/localMediaRoot.js';
import { tempDataDir } from '../helpers/server.js';

const open: LocalMediaFile[] = [];
afterEach(() => {
  for (const file of open.splice(0)) file.release();
});

function read(fd: number, length: number, position = 0): Buffer {
  const b = Buffer.alloc(length);
  return b.subarray(0, fs.readSync(fd, b, 0, length, position));
}

describe('LocalObjectMediaStore.openLocalFileSync', () => {
  it("opens an object with stat's info, and keeps reading that file when a put replaces it", async () => {
    const store = new LocalObjectMediaStore(new LocalMediaRoot(tempDataDir()));
    const key = mediaKey('hls', 'v1', '180p', 'seg_000.ts');
    await store.put(key, { stream: Readable.from([Buffer.from('first bytes')]) });
    const opened = store.openLocalFileSync(key)!;
    open.push(opened);
    expect(opened.info).toEqual(await store.stat(key));
    expect(read(opened.fd, 100).toString()).toBe('first bytes');

    await store.put(key, { stream: Readable.from([Buffer.from('second, longer bytes')]) });
    // The open file is the one its info describes; a new open sees the new object.
    expect(read(opened.fd, 100).toString()).toBe('first bytes');
    const again = store.openLocalFileSync(key)!;
    open.push(again);
    expect(read(again.fd, 100).toString()).toBe('second, longer bytes');
    expect(again.info.etag).not.toBe(opened.info.etag);
    expect(again.info).toEqual(await store.stat(key));
  });

  it('answers undefined for no object (missing, or a folder under the name), and refuses unsafe keys', () => {
    const local = new LocalMediaRoot(tempDataDir());
    const store = new LocalObjectMediaStore(local);
    expect(store.openLocalFileSync(mediaKey('play', '20260101', 'none.mp4'))).toBeUndefined();
    fs.mkdirSync(local.path('hls', 'v2', '180p'), { recursive: true });
    const before = fs.readdirSync('/proc/self/fd').length;
    expect(store.openLocalFileSync(mediaKey('hls', 'v2', '180p'))).toBeUndefined();
    // The folder's fd was closed: no more descriptors than before. (Not "as many": the quick
    // tier shares its worker, and another file's asynchronous close may land in between.)
    expect(fs.readdirSync('/proc/self/fd').length).toBeLessThanOrEqual(before);
    expect(() => store.openLocalFileSync('play/../admin-token')).toThrow(UnsafeMediaKeyError);
    expect(() => store.openLocalFileSync('play')).toThrow(UnsafeMediaKeyError);
  });
});

describe("the local store's cache of recently read blocks (LocalMediaFile.readSync and read)", () => {
  const BLOCK = 64 * 1024;
  const bytes = crypto.randomBytes(3 * BLOCK + 1000); // three whole blocks and a short last one

  async function storeWith(blockCacheBytes: number, content = bytes) {
    const store = new LocalObjectMediaStore(new LocalMediaRoot(tempDataDir()), { maxFiles: 10, inactiveMs: 10_000, blockCacheBytes, validMs: 0 });
    const key = mediaKey('hls', 'v3', '360p', 'seg_00000.ts');
    await store.put(key, { stream: Readable.from([content]) });
    return { store, key };
  }
  const opened = (store: LocalObjectMediaStore, key: string) => {
    const file = store.openLocalFileSync(key)!;
    open.push(file);
    return file;
  };

  it('answers every range with the bytes of the file, within a block, across blocks, to the short last one', async () => {
    const { store, key } = await storeWith(1024 * 1024);
    const file = opened(store, key);
    const ranges: Array<[number, number]> = [
      [1000, 2023], // inside the first block
      [BLOCK - 10, BLOCK + 9], // across two
      [1_000, 2 * BLOCK + 5_000], // across three
      [3 * BLOCK, bytes.length - 1], // the short last block
      [0, bytes.length - 1], // all of it
      [BLOCK - 1, BLOCK - 1], // one byte
    ];
    for (const [start, end] of ranges) {
      expect(Buffer.concat(file.readSync(start, end)).equals(bytes.subarray(start, end + 1)), `${start}-${end} sync`).toBe(true);
      expect(Buffer.concat(await file.read(start, end)).equals(bytes.subarray(start, end + 1)), `${start}-${end}`).toBe(true);
    }
    expect(store.openFiles.cachedBytes).toBe(bytes.length); // each block read once, all kept
  });

  it('reads a cached block no more: its bytes come from memory, and only a block not yet cached is read', async () => {
    const { store, key } = await storeWith(1024 * 1024);
    const file = opened(store, key);
    expect(Buffer.concat(file.readSync(1000, 2023)).equals(bytes.subarray(1000, 2024))).toBe(true);
    // The same kept file: whatever it is asked for from the cached block is answered without a read.
    const again = opened(store, key);
    expect(again.fd).toBe(file.fd);
    const spied = vi.spyOn(fs, 'readSync');
    try {
      expect(Buffer.concat(again.readSync(5000, 6000)).equals(bytes.subarray(5000, 6001))).toBe(true);
      expect(spied).not.toHaveBeenCalled();
      again.readSync(BLOCK + 1, BLOCK + 2); // the next block is not cached: read
      expect(spied).toHaveBeenCalledTimes(1);
    } finally {
      spied.mockRestore();
    }
  });

  it('keeps at most its bound, the least recently used block going first', async () => {
    const { store, key } = await storeWith(2 * BLOCK);
    const file = opened(store, key);
    file.readSync(0, 10); // block 0
    file.readSync(BLOCK, BLOCK + 10); // block 1
    file.readSync(5, 6); // block 0 again: now the most recent
    file.readSync(2 * BLOCK, 2 * BLOCK + 10); // block 2: block 1 goes
    expect(store.openFiles.cachedBytes).toBe(2 * BLOCK);
    const spied = vi.spyOn(fs, 'readSync');
    try {
      file.readSync(7, 8);
      expect(spied).not.toHaveBeenCalled(); // block 0 stayed
      file.readSync(BLOCK + 1, BLOCK + 2);
      expect(spied).toHaveBeenCalledTimes(1); // block 1 had gone
    } finally {
      spied.mockRestore();
    }
    expect(store.openFiles.cachedBytes).toBeLessThanOrEqual(2 * BLOCK);
  });

  it('never answers from the blocks of a file that was replaced or cut', async () => {
    const { store, key } = await storeWith(1024 * 1024);
    expect(Buffer.concat(opened(store, key).readSync(0, 99)).equals(bytes.subarray(0, 100))).toBe(true);
    // Replaced through the store: its entry and blocks go at once.
    const second = crypto.randomBytes(bytes.length);
    await store.put(key, { stream: Readable.from([second]) });
    expect(store.openFiles.cachedBytes).toBe(0);
    expect(Buffer.concat(opened(store, key).readSync(0, 99)).equals(second.subarray(0, 100))).toBe(true);
    // Rewritten in place by another hand: the next open sees another file, and reads it anew.
    const third = crypto.randomBytes(bytes.length + 1); // another size: timestamps alone may fall in the same clock tick
    fs.writeFileSync(store.local.path('hls', 'v3', '360p', 'seg_00000.ts'), third);
    expect(Buffer.concat(opened(store, key).readSync(0, 99)).equals(third.subarray(0, 100))).toBe(true);
    // Cut short under an open file: the promised bytes cannot be had, and it says so.
    const file = opened(store, key);
    fs.truncateSync(store.local.path('hls', 'v3', '360p', 'seg_00000.ts'), 1000);
    expect(() => file.readSync(BLOCK + 1, BLOCK + 2)).toThrow(/shorter than its announced length/);
    await expect(Promise.resolve().then(() => file.read(2 * BLOCK + 1, 2 * BLOCK + 2))).rejects.toThrow(/shorter than its announced length/);
  });
});

describe('files kept open (OpenFileCache)', () => {
  it('sees a change made beside the store within validMs, and answers the old file whole until then; its own writes at once', async () => {
    const store = new LocalObjectMediaStore(new LocalMediaRoot(tempDataDir()), { maxFiles: 10, inactiveMs: 10_000, blockCacheBytes: 1024 * 1024, validMs: 300 });
    const key = mediaKey('hls', 'v5', '360p', 'index.m3u8');
    await store.put(key, { stream: Readable.from([Buffer.from('first version')]) });
    const text = () => {
      const file = store.openLocalFileSync(key)!;
      try {
        return Buffer.concat(file.readSync(0, file.info.size - 1)).toString();
      } finally {
        file.release();
      }
    };
    expect(text()).toBe('first version');
    const onDisk = store.local.path('hls', 'v5', '360p', 'index.m3u8');
    fs.writeFileSync(`${onDisk}.new`, 'second version, by hand');
    fs.renameSync(`${onDisk}.new`, onDisk);
    const changedAt = Date.now();
    expect(text()).toBe('first version'); // within the window: the old file, whole, with its own length
    await expect.poll(text, { interval: 20, timeout: 5000 }).toBe('second version, by hand');
    expect(Date.now() - changedAt).toBeGreaterThanOrEqual(250);
    // Through the store: at once.
    await store.put(key, { stream: Readable.from([Buffer.from('third version, by the store')]) });
    expect(text()).toBe('third version, by the store');
  });

  it('closes a file nobody asked for during one to two of its inactive periods, and its blocks go with it', async () => {
    const store = new LocalObjectMediaStore(new LocalMediaRoot(tempDataDir()), { maxFiles: 10, inactiveMs: 100, blockCacheBytes: 1024 * 1024, validMs: 0 });
    const key = mediaKey('covers', 'v4', 'cover.jpg');
    await store.put(key, { stream: Readable.from([crypto.randomBytes(5000)]) });
    const file = store.openLocalFileSync(key)!;
    // Whether the descriptor is still open on this file (not on another one that took its number).
    const held = () => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${file.fd}`) === store.local.path('covers', 'v4', 'cover.jpg');
      } catch {
        return false; // no such descriptor
      }
    };
    file.readSync(0, 4999);
    file.release();
    expect(store.openFiles.size).toBe(1);
    expect(store.openFiles.cachedBytes).toBe(5000);
    expect(held()).toBe(true); // kept open for the next request
    // Asked for again within the period: kept through the next sweep. Time is the subject here:
    // the sleeps are set against the 100 ms inactive period.
    await new Promise((r) => setTimeout(r, 60));
    store.openLocalFileSync(key)!.release();
    await new Promise((r) => setTimeout(r, 80));
    expect(store.openFiles.size).toBe(1);
    // Then nobody asks: gone after at most two periods (and a margin), descriptor closed.
    await new Promise((r) => setTimeout(r, 250));
    expect(store.openFiles.size).toBe(0);
    expect(store.openFiles.cachedBytes).toBe(0);
    expect(held()).toBe(false);
  });
});
