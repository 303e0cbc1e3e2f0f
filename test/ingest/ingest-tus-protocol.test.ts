import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { openTusPatch, sha256, sha256File, tokenMetadata, tusCreate, tusHead, tusMetadata, tusPatch, tusUploadId, waitForIngest } from '../helpers/ingest.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';
import { isUnexpectedErrorLine } from '../../server/core/logLines.js';

/** Small limits so that "too large" needs no gigabytes. */
const FLASH_MAX = 400_000;
const SILVERLIGHT_MAX = 2_000_000;

let s: TestServer;
let client: SpecClient;
let clip: Buffer;

beforeAll(async () => {
  s = await startServer({ ingest: { maxUploadBytes: { flash: FLASH_MAX, silverlight: SILVERLIGHT_MAX } } });
  client = await s.newApp();
  const file = await makeClip({ seconds: 2 });
  clip = fs.readFileSync(file);
  fs.rmSync(file);
  expect(clip.length).toBeLessThan(FLASH_MAX);
});
afterAll(async () => {
  // Every failure above was an expected one: nothing reached the log as a server error.
  expect(s.logs.filter(isUnexpectedErrorLine)).toEqual([]);
  await s.close();
});

/** Registers a video and creates a tus upload of `length` bytes for it (authorised by metadata keys). */
async function newUpload(length = clip.length, extra: Record<string, string> = {}) {
  const videoId = await client.register();
  const created = await tusCreate(s.baseUrl, length, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId, extra)) });
  expect(created.res.status).toBe(201);
  const id = tusUploadId(created.url!);
  return { videoId, url: created.url!, file: s.vop.media.path('incoming', 'tus', id), created };
}

describe('tus protocol edge cases', () => {
  it('OPTIONS advertises the version, the extensions we serve and the largest size', async () => {
    const res = await fetch(`${s.baseUrl}/upload/tus/`, { method: 'OPTIONS' });
    expect(res.status).toBe(204);
    expect(res.headers.get('tus-version')).toBe('1.0.0');
    const ext = res.headers.get('tus-extension')!.split(',');
    expect(ext).toEqual(expect.arrayContaining(['creation', 'creation-with-upload', 'termination', 'expiration']));
    expect(ext).not.toContain('creation-defer-length');
    expect(res.headers.get('tus-max-size')).toBe(String(SILVERLIGHT_MAX));
    expect(res.headers.get('access-control-allow-headers')).toMatch(/X-Upload-Credential/);
  });

  it('creation answers 201 with Location and Upload-Expires; a request without Tus-Resumable gets 412', async () => {
    const { created, url } = await newUpload();
    expect(created.res.headers.get('upload-expires')).toBeTruthy();
    expect(new URL(url).pathname).toMatch(/^\/upload\/tus\/[0-9a-f]{32}$/);
    const res = await fetch(url, { method: 'HEAD' });
    expect(res.status).toBe(412);
  });

  it('a wrong Upload-Offset gets 409 and changes nothing', async () => {
    const { url, file } = await newUpload();
    expect((await tusPatch(url, 0, clip.subarray(0, 1000))).status).toBe(204);
    const before = fs.readFileSync(file);
    for (const offset of [0, 500, 1001]) {
      const res = await tusPatch(url, offset, clip.subarray(offset, offset + 1000));
      expect(res.status).toBe(409);
    }
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    expect((await tusHead(url)).headers.get('upload-offset')).toBe('1000');
  });

  it('a PATCH with another Content-Type gets 415 and changes nothing', async () => {
    const { url, file } = await newUpload();
    const origin = { Origin: 'http://app.example' };
    const res = await tusPatch(url, 0, clip.subarray(0, 1000), { 'Content-Type': 'application/octet-stream', ...origin });
    expect(res.status).toBe(415);
    expect(res.headers.get('tus-resumable')).toBe('1.0.0');
    expect(fs.statSync(file).size).toBe(0);
    // Readable from a page on another origin, with the CORS headers of @tus/server's own answers (a 409 here).
    const conflict = await tusPatch(url, 5, clip.subarray(0, 10), origin);
    expect(conflict.status).toBe(409);
    for (const h of ['access-control-allow-origin', 'access-control-expose-headers']) {
      expect(res.headers.get(h), h).toBeTruthy();
      expect(res.headers.get(h), h).toBe(conflict.headers.get(h));
    }
  });

  it('Upload-Length over the uploadType maximum gets 413; silverlight takes more than flash', async () => {
    const videoId = await client.register();
    const tooBig = await tusCreate(s.baseUrl, FLASH_MAX + 1, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId)) });
    expect(tooBig.res.status).toBe(413);
    expect(tooBig.body).toMatch(/^ErrorCode : 401, /);
    const asSilverlight = await tusCreate(s.baseUrl, FLASH_MAX + 1, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId, { uploadType: 'silverlight' })) });
    expect(asSilverlight.res.status).toBe(201);
    const overAll = await tusCreate(s.baseUrl, SILVERLIGHT_MAX + 1, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId, { uploadType: 'silverlight' })) });
    expect(overAll.res.status).toBe(413);
  });

  it('a deferred length is not accepted (the size must be checked up front)', async () => {
    const videoId = await client.register();
    const res = await fetch(`${s.baseUrl}/upload/tus/`, {
      method: 'POST',
      headers: { 'Tus-Resumable': '1.0.0', 'Upload-Defer-Length': '1', 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId)) },
    });
    expect(res.status).toBe(501);
  });

  it('authentication by metadata keys: bad token 401 (104), missing keys 400, another app’s video 404, a pull video 403', async () => {
    const videoId = await client.register();
    const bad = await tusCreate(s.baseUrl, 100, { 'Upload-Metadata': tusMetadata({ ...tokenMetadata(client, videoId), token: '0'.repeat(32) }) });
    expect(bad.res.status).toBe(401);
    expect(bad.body).toBe('ErrorCode : 104, ErrorMessage : App SecretKey Error\n');
    const none = await tusCreate(s.baseUrl, 100, {});
    expect(none.res.status).toBe(400);
    expect(none.body).toMatch(/^ErrorCode : 100, /);
    const stale = await tusCreate(s.baseUrl, 100, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId, { timestamp: '1000000000' })) });
    expect(stale.res.status).toBe(401);
    const other = await s.newApp('other');
    const foreign = await tusCreate(s.baseUrl, 100, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, await other.register())) });
    expect(foreign.res.status).toBe(404);
    const pullVideo = await client.register({ SourceFileGetType: 2, SourceFilePath: 'http://127.0.0.1:9/x.mp4' });
    const pull = await tusCreate(s.baseUrl, 100, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, pullVideo)) });
    expect(pull.res.status).toBe(403);
    expect(pull.body).toMatch(/^ErrorCode : 303, /);
  });

  it('termination (DELETE) removes the partial upload', async () => {
    const { url, file } = await newUpload();
    expect((await tusPatch(url, 0, clip.subarray(0, 1000))).status).toBe(204);
    const res = await fetch(url, { method: 'DELETE', headers: { 'Tus-Resumable': '1.0.0' } });
    expect(res.status).toBe(204);
    expect(fs.existsSync(file)).toBe(false);
    expect((await tusHead(url)).status).toBe(404);
  });

  it('one upload of a video at a time: a second creation is refused (403, 303) while the first is under way, and after it is stored', async () => {
    const videoId = await client.register();
    const meta = { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId)) };
    const a = await tusCreate(s.baseUrl, clip.length, meta);
    expect(a.res.status).toBe(201);
    // Issue 12, item 7: 40 creations of one video each reserved 2 GB.
    const b = await tusCreate(s.baseUrl, clip.length, meta);
    expect(b.res.status).toBe(403);
    expect(b.body).toMatch(/^ErrorCode : 303, ErrorMessage : Video State Conflict: another upload of this video is under way/);
    const done = await tusPatch(a.url!, 0, clip);
    expect(done.status).toBe(204);
    expect(done.headers.get('x-video-status')).toBe('5');
    const late = await tusCreate(s.baseUrl, clip.length, meta);
    expect(late.res.status).toBe(403);
    expect(late.body).toMatch(/^ErrorCode : 303, /);
    expect(sha256File(s.vop.media.path('sources', videoId, 'source'))).toBe(sha256(clip));
  });

  it('a file that is not a video: the last PATCH is refused (422, 307), the video ends in 7 with the reason, the file dropped', async () => {
    const text = Buffer.from('this is not a video\n'.repeat(100));
    const { url, videoId } = await newUpload(text.length);
    const res = await tusPatch(url, 0, text);
    expect(res.status).toBe(422);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await res.text()).toMatch(/^ErrorCode : 307, ErrorMessage : Not A Video: /);
    const video = (await s.vop.stores.videos.get(videoId))!;
    expect(video.status).toBe(7);
    expect(video.statusReason).toMatch(/^not a video: /);
    expect(fs.existsSync(s.vop.media.path('sources', videoId, 'source'))).toBe(false);
    expect((await tusHead(url)).status).toBe(404);
  });

  it('no free disk space for the announced size: 507', async () => {
    const tight = await startServer({ ingest: { freeSpaceMarginBytes: Number.MAX_SAFE_INTEGER - 10_000_000 } });
    try {
      const c = await tight.newApp();
      const videoId = await c.register();
      const res = await tusCreate(tight.baseUrl, 1000, { 'Upload-Metadata': tusMetadata(tokenMetadata(c, videoId)) });
      expect(res.res.status).toBe(507);
      expect(res.body).toMatch(/^ErrorCode : 507, ErrorMessage : Insufficient Storage/);
    } finally {
      await tight.close();
    }
  });

  it('concurrent PATCHes on one upload never interleave: the second waits for the lock, then gets 409', async () => {
    const { url, videoId, file } = await newUpload();
    const half = Math.floor(clip.length / 2);
    // PATCH A announces the whole file but sends only half, then stalls (a slow client).
    const a = openTusPatch(url, clip.length);
    const aDone = new Promise<number>((resolve) => {
      a.on('response', (res) => (res.resume(), resolve(res.statusCode ?? 0)));
      a.on('error', () => resolve(-1));
    });
    a.write(clip.subarray(0, half));
    // A holds the upload: its first bytes are in the upload's file.
    await waitUntil("PATCH A's first bytes in the upload's file", () => {
      const size = fs.existsSync(file) ? fs.statSync(file).size : -1;
      return size > 0 || notYet({ size });
    });

    // PATCH B with the same offset and different bytes.
    const other = Buffer.alloc(clip.length, 0x55);
    const b = await tusPatch(url, 0, other);
    expect([409, 423]).toContain(b.status);
    await aDone;
    a.destroy();

    const head = await tusHead(url);
    const offset = Number(head.headers.get('upload-offset'));
    expect(offset).toBe(half);
    // Finish from where the server says: the result is exactly the clip, no byte of B in it.
    const done = await tusPatch(url, offset, clip.subarray(offset));
    expect(done.status).toBe(204);
    expect(await waitForIngest(s.vop, videoId)).toBe(5);
    expect(sha256File(s.vop.media.path('sources', videoId, 'source'))).toBe(sha256(clip));
  });
});

describe('tus expiration', () => {
  it('an abandoned upload expires: 410, then the sweep removes its file and the URL answers 404', async () => {
    const short = await startServer({ ingest: { uploadExpiryMs: 1500 } });
    try {
      const c = await short.newApp();
      const videoId = await c.register();
      const created = await tusCreate(short.baseUrl, 5000, { 'Upload-Metadata': tusMetadata(tokenMetadata(c, videoId)) });
      expect(created.res.status).toBe(201);
      const file = short.vop.media.path('incoming', 'tus', tusUploadId(created.url!));
      expect((await tusPatch(created.url!, 0, Buffer.alloc(1000, 1))).status).toBe(204);
      // Past the 1.5 s expiry: time itself is what is tested.
      await new Promise((r) => setTimeout(r, 1600));
      expect((await tusPatch(created.url!, 1000, Buffer.alloc(1000, 1))).status).toBe(410);
      expect((await tusHead(created.url!)).status).toBe(410);
      expect(fs.existsSync(file)).toBe(true);

      expect(await short.vop.tus.sweepExpired()).toBeGreaterThanOrEqual(1);
      expect(fs.existsSync(file)).toBe(false);
      expect(fs.existsSync(`${file}.json`)).toBe(false);
      expect((await tusHead(created.url!)).status).toBe(404);
      expect((await short.vop.stores.videos.get(videoId))!.status).toBe(8);
    } finally {
      await short.close();
    }
  });

  it('the sweep also runs on a timer', async () => {
    const short = await startServer({ ingest: { uploadExpiryMs: 200, expirySweepMs: 100 } });
    try {
      const c = await short.newApp();
      const created = await tusCreate(short.baseUrl, 5000, { 'Upload-Metadata': tusMetadata(tokenMetadata(c, await c.register())) });
      const file = short.vop.media.path('incoming', 'tus', tusUploadId(created.url!));
      expect(fs.existsSync(file)).toBe(true);
      await waitUntil('the expired upload file removed', () => !fs.existsSync(file) || undefined, { timeoutMs: 5000, pollMs: 50 });
    } finally {
      await short.close();
    }
  });
});
