/**
 * MediaStore.openLocalFileSync (issue 14), the local store's optional way for delivery to read an
 * object: the same info as stat, the bytes of the very file that info was taken from, and
 * nothing for what is no object.
 */
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalObjectMediaStore } from '../server/storage/media/localObjectMediaStore.js';
import { mediaKey, UnsafeMediaKeyError, type LocalMediaFile } from '../server/storage/media/mediaStore.js';
import { LocalMediaStore } from '../server/storage/mediaStore.js';
import { tempDataDir } from './helpers/server.js';

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
    const store = new LocalObjectMediaStore(new LocalMediaStore(tempDataDir()));
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
    const local = new LocalMediaStore(tempDataDir());
    const store = new LocalObjectMediaStore(local);
    expect(store.openLocalFileSync(mediaKey('play', '20260101', 'none.mp4'))).toBeUndefined();
    fs.mkdirSync(local.path('hls', 'v2', '180p'), { recursive: true });
    const before = fs.readdirSync('/proc/self/fd').length;
    expect(store.openLocalFileSync(mediaKey('hls', 'v2', '180p'))).toBeUndefined();
    expect(fs.readdirSync('/proc/self/fd').length).toBe(before); // the folder's fd was closed
    expect(() => store.openLocalFileSync('play/../admin-token')).toThrow(UnsafeMediaKeyError);
    expect(() => store.openLocalFileSync('play')).toThrow(UnsafeMediaKeyError);
  });
});
