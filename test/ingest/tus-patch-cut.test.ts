import fs from 'node:fs';
import type { MemoryLocker } from '@tus/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeClip } from '../helpers/clips.js';
import { openTusPatch, sha256, sha256File, tokenMetadata, tusCreate, tusHead, tusMetadata, tusPatch, tusUploadId, waitForIngest } from '../helpers/ingest.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';
import { isUnexpectedErrorLine } from '../../server/core/logLines.js';

let s: TestServer;
let clip: Buffer;

beforeAll(async () => {
  s = await startServer();
  const file = await makeClip({ seconds: 2 });
  clip = fs.readFileSync(file);
  fs.rmSync(file);
});
afterAll(async () => {
  // A client that goes away is no server error.
  expect(s.logs.filter(isUnexpectedErrorLine)).toEqual([]);
  await s.close();
});

const offsetOf = async (url: string) => Number((await tusHead(url)).headers.get('upload-offset'));

describe('a tus PATCH cut off by the client', () => {
  it('keeps the bytes that arrived and releases the lock at once; the upload resumes from there to the same hash', async () => {
    const client = await s.newApp();
    const videoId = await client.register();
    const created = await tusCreate(s.baseUrl, clip.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId)) });
    expect(created.res.status).toBe(201);
    const url = created.url!;
    const id = tusUploadId(url);
    const locks = (s.vop.tus.server.options.locker as MemoryLocker).locks;

    // The PATCH announces the whole file, sends half of it, then its connection drops.
    const half = Math.floor(clip.length / 2);
    const cut = openTusPatch(url, clip.length);
    cut.on('error', () => undefined);
    cut.write(clip.subarray(0, half));
    // Watched on disk: a HEAD would ask the PATCH for its lock and so end it.
    const file = s.vop.media.path('incoming', 'tus', id);
    await waitUntil('the half to be on disk', () => (fs.statSync(file).size === half ? true : notYet(fs.statSync(file).size)), { timeoutMs: 10_000 });
    expect(locks.has(id)).toBe(true);
    cut.destroy();

    // Released by the disconnect itself, well before @tus/server's lockDrainTimeout (3 s) would
    // have made the next PATCH wait for it.
    await waitUntil('the lock to be released', () => !locks.has(id) || undefined, { timeoutMs: 2000 });
    expect(await offsetOf(url)).toBe(half);

    // Resumed in two PATCHes from the offset the server gives: the file is exactly the clip.
    const threeQuarters = Math.floor((clip.length * 3) / 4);
    const next = await tusPatch(url, half, clip.subarray(half, threeQuarters));
    expect(next.status).toBe(204);
    expect(next.headers.get('upload-offset')).toBe(String(threeQuarters));
    const last = await tusPatch(url, threeQuarters, clip.subarray(threeQuarters));
    expect(last.status).toBe(204);
    expect(last.headers.get('x-video-status')).toBe('5');
    expect(await waitForIngest(s.vop, videoId)).toBe(5);
    expect(sha256File(s.vop.media.path('sources', videoId, 'source'))).toBe(sha256(clip));
  });
});
