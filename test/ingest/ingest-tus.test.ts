import fs from 'node:fs';
import * as tus from 'tus-js-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../server/core/errors.js';
import type { SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { ingestPath, sha256, sha256File, tokenMetadata, tusCreate, tusHead, tusMetadata, tusPatch, tusUploadId, waitForIngest } from '../helpers/ingest.js';
import { startServer, tempDataDir, type TestServer } from '../helpers/server.js';

/** A URL storage in memory, as a browser's localStorage would keep it across a page reload. */
class MemoryUrlStorage implements tus.UrlStorage {
  private entries = new Map<string, tus.PreviousUpload & { fingerprint: string }>();
  private seq = 0;
  async findAllUploads() {
    return [...this.entries.values()];
  }
  async findUploadsByFingerprint(fingerprint: string) {
    return [...this.entries.values()].filter((e) => e.fingerprint === fingerprint);
  }
  async removeUpload(key: string) {
    this.entries.delete(key);
  }
  async addUpload(fingerprint: string, upload: tus.PreviousUpload) {
    const key = `tus::${fingerprint}::${++this.seq}`;
    this.entries.set(key, { ...upload, fingerprint, urlStorageKey: key });
    return key;
  }
}

let clip: Buffer;
let clipFile: string;
const servers: TestServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

beforeAll(async () => {
  clipFile = await makeClip({ seconds: 4, width: 640, height: 360 });
  clip = fs.readFileSync(clipFile);
});
afterAll(() => fs.rmSync(clipFile, { force: true }));

async function boot(options: Parameters<typeof startServer>[0] = {}) {
  const s = await startServer(options);
  servers.push(s);
  return s;
}

/** Runs an upload until it has sent its first chunk, then aborts it (the dropped connection). */
function uploadFirstChunkThenAbort(upload: () => tus.Upload): Promise<tus.Upload> {
  return new Promise((resolve, reject) => {
    const u = upload();
    u.options.onChunkComplete = () => {
      void u.abort().then(() => resolve(u));
    };
    u.options.onError = reject;
    u.options.onSuccess = () => reject(new Error('the upload finished before it could be interrupted'));
    u.start();
  });
}

function runToEnd(u: tus.Upload): Promise<void> {
  return new Promise((resolve, reject) => {
    u.options.onSuccess = () => resolve();
    u.options.onError = reject;
    u.start();
  });
}

const CHUNK = 64 * 1024;

describe('tus uploads with the reference client (tus-js-client)', () => {
  it('authorised by metadata keys: interrupted after the first chunk, resumed by a new client from the upload URL; source hash equal; 8 → 5', async () => {
    const s = await boot();
    const client = await s.newApp();
    const videoId = await client.register();
    expect(clip.length).toBeGreaterThan(3 * CHUNK);

    const options = {
      endpoint: `${s.baseUrl}/upload/tus/`,
      chunkSize: CHUNK,
      retryDelays: null,
      metadata: tokenMetadata(client, videoId),
    };
    const first = await uploadFirstChunkThenAbort(() => new tus.Upload(clip, options));
    expect(first.url).toBeTruthy();
    // The server kept what arrived: the offset is past the first chunk and short of the end.
    const head = await tusHead(first.url!);
    const offset = Number(head.headers.get('upload-offset'));
    expect(offset).toBeGreaterThanOrEqual(CHUNK);
    expect(offset).toBeLessThan(clip.length);
    expect((await s.vop.stores.videos.get(videoId))!.status).toBe(8);

    // As after a page reload: a new client that knows only the upload URL resumes it.
    const offsets: number[] = [];
    const second = new tus.Upload(clip, { ...options, uploadUrl: first.url!, onProgress: (sent) => offsets.push(sent) });
    await runToEnd(second);
    expect(second.url).toBe(first.url);
    expect(Math.min(...offsets)).toBeGreaterThanOrEqual(offset);

    expect(await waitForIngest(s.vop, videoId)).toBe(5);
    const video = (await s.vop.stores.videos.get(videoId))!;
    expect(video.sourceFile).toBe(`${videoId}/source`);
    expect(sha256File(s.vop.media.path('sources', videoId, 'source'))).toBe(sha256(clip));
    expect(video.duration).toBe(4);
    expect(video.keepSource).toBe(false);
    expect(await ingestPath(s.vop, videoId)).toEqual([8, 5]);
    // The finished upload is forgotten: its URL answers 404 and nothing is left in incoming.
    expect((await tusHead(first.url!)).status).toBe(404);
    expect(fs.readdirSync(s.vop.media.path('incoming', 'tus'))).toEqual([]);
  });

  it('authorised by the upload page credential: interrupted, found again by fingerprint, resumed; needHandleSepcial kept', async () => {
    const s = await boot();
    const client = await s.newApp();
    const videoId = await client.register();
    const a = client.auth();
    const session = await s.vop.services.ingest.openUploadSession(
      { appId: a.AppId, timestamp: a.Timestamp, token: a.Token },
      videoId,
      { uploadType: 'silverlight', needHandleSepcial: 'true' },
      '127.0.0.1',
    );
    expect(session).toMatchObject({ videoId, appId: client.appId, uploadType: 'silverlight', keepSource: true, maxBytes: 6 * 1024 ** 3, tusPath: '/upload/tus/' });
    expect(session.expiresAt).toBeGreaterThan(Date.now() + 5 * 3600_000);

    const storage = new MemoryUrlStorage();
    const options: tus.UploadOptions = {
      endpoint: `${s.baseUrl}${session.tusPath}`,
      chunkSize: CHUNK,
      retryDelays: null,
      headers: { 'X-Upload-Credential': session.credential },
      metadata: { filename: 'clip.mp4', videoId },
      urlStorage: storage,
      storeFingerprintForResuming: true,
    };
    const first = await uploadFirstChunkThenAbort(() => new tus.Upload(clip, options));

    const second = new tus.Upload(clip, options);
    const previous = await second.findPreviousUploads();
    expect(previous).toHaveLength(1);
    second.resumeFromPreviousUpload(previous[0]!);
    await runToEnd(second);
    expect(second.url).toBe(first.url);

    expect(await waitForIngest(s.vop, videoId)).toBe(5);
    expect(sha256File(s.vop.media.path('sources', videoId, 'source'))).toBe(sha256(clip));
    expect((await s.vop.stores.videos.get(videoId))!.keepSource).toBe(true);
  });

  it('an upload survives a server restart: HEAD gives the offset, the upload finishes on the new server', async () => {
    const dataDir = tempDataDir();
    const s1 = await startServer({ dataDir });
    const client = await s1.newApp();
    const videoId = await client.register();
    const created = await tusCreate(s1.baseUrl, clip.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId)) });
    expect(created.res.status).toBe(201);
    const path = new URL(created.url!).pathname;
    const half = Math.floor(clip.length / 2);
    expect((await tusPatch(created.url!, 0, clip.subarray(0, half))).status).toBe(204);
    await s1.close();

    const s2 = await boot({ dataDir });
    const url = `${s2.baseUrl}${path}`;
    const head = await tusHead(url);
    expect(head.status).toBe(200);
    expect(head.headers.get('upload-offset')).toBe(String(half));
    expect(head.headers.get('upload-length')).toBe(String(clip.length));
    const done = await tusPatch(url, half, clip.subarray(half));
    expect(done.status).toBe(204);
    expect(done.headers.get('x-video-status')).toBe('5');
    expect(sha256File(s2.vop.media.path('sources', videoId, 'source'))).toBe(sha256(clip));
  });
});

describe('upload sessions (the upload page credential)', () => {
  let s: TestServer;
  let client: SpecClient;
  beforeAll(async () => {
    s = await startServer();
    client = await s.newApp();
  });
  afterAll(() => s.close());

  const open = (videoId: string | undefined, auth = client.auth(), opts: { uploadType?: string; needHandleSepcial?: boolean | string } = {}) =>
    s.vop.services.ingest.openUploadSession({ appId: auth.AppId, timestamp: auth.Timestamp, token: auth.Token }, videoId, opts, '127.0.0.9');

  const codeOf = async (p: Promise<unknown>) => {
    try {
      await p;
      return 'ok';
    } catch (err) {
      if (err instanceof ApiError) return err.code;
      throw err;
    }
  };

  it('refuses a bad token (104), an unknown video, another app’s video, a pull video, a video with its file', async () => {
    const videoId = await client.register();
    expect(await codeOf(open(videoId, client.auth({ Token: '0'.repeat(32) })))).toBe('104');
    expect(await codeOf(open(undefined))).toBe('100');
    expect(await codeOf(open('00000000-0000-4000-8000-000000000000'))).toBe('301');
    const other = await s.newApp('other');
    expect(await codeOf(open(await other.register()))).toBe('301');
    expect(await codeOf(open(await client.register({ SourceFileGetType: 2, SourceFilePath: 'http://127.0.0.1:9/x.mp4' })))).toBe('303');
    expect(await codeOf(open(videoId, client.auth(), { uploadType: 'floppy' }))).toBe('201');
    expect(await codeOf(open(videoId, client.auth(), { needHandleSepcial: 'maybe' }))).toBe('201');
    await s.vop.services.lifecycle.move(videoId, 5);
    expect(await codeOf(open(videoId))).toBe('303');
  });

  it('defaults: flash, 2 GB, keepSource false; the credential is not accepted by the spec API', async () => {
    const videoId = await client.register();
    const session = await open(videoId);
    expect(session).toMatchObject({ uploadType: 'flash', maxBytes: 2 * 1024 ** 3, keepSource: false });
    const r = await client.get('/Api/Video/Get', { Id: videoId }, { AppId: client.appId, Timestamp: String(Math.floor(Date.now() / 1000)), Token: session.credential });
    expect(r.body.AuthMsg.ResultCode).toBe('104');
    const r2 = await fetch(`${s.baseUrl}/Api/Video/Get?Id=${videoId}`, { headers: { 'X-Upload-Credential': session.credential } });
    expect((await r2.json()).AuthMsg.ResultCode).toBe('100');
  });

  it('a credential for video A neither creates nor touches an upload of video B; a forged or expired one is refused', async () => {
    const videoA = await client.register();
    const videoB = await client.register();
    const a = await open(videoA);
    const b = await open(videoB);

    // Creating B's upload with A's credential: refused, whatever the metadata says.
    const wrong = await tusCreate(s.baseUrl, 100, { 'X-Upload-Credential': a.credential, 'Upload-Metadata': tusMetadata({ videoId: videoB }) });
    expect(wrong.res.status).toBe(403);
    expect(wrong.body).toMatch(/^ErrorCode : 302, /);

    const created = await tusCreate(s.baseUrl, 100, { 'X-Upload-Credential': b.credential });
    expect(created.res.status).toBe(201);
    // A's credential on B's upload: every method refused, nothing written.
    expect((await tusHead(created.url!, { 'X-Upload-Credential': a.credential })).status).toBe(403);
    expect((await tusPatch(created.url!, 0, Buffer.alloc(10), { 'X-Upload-Credential': a.credential })).status).toBe(403);
    const del = await fetch(created.url!, { method: 'DELETE', headers: { 'Tus-Resumable': '1.0.0', 'X-Upload-Credential': a.credential } });
    expect(del.status).toBe(403);
    // Without any credential: an upload opened by a credential needs one.
    expect((await tusPatch(created.url!, 0, Buffer.alloc(10))).status).toBe(401);
    // Forged: B's payload with a changed signature.
    const forged = `${b.credential.split('.')[0]}.${'A'.repeat(43)}`;
    expect((await tusHead(created.url!, { 'X-Upload-Credential': forged })).status).toBe(401);
    const ok = await tusHead(created.url!, { 'X-Upload-Credential': b.credential });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('upload-offset')).toBe('0');
    // The stored metadata keeps no token.
    expect(ok.headers.get('upload-metadata')).not.toMatch(/token/);
  });

  it("a rotation of the application's secret ends the credentials issued before it", async () => {
    const videoId = await client.register();
    const session = await open(videoId);
    const created = await tusCreate(s.baseUrl, 100, { 'X-Upload-Credential': session.credential });
    expect(created.res.status).toBe(201);
    expect((await tusHead(created.url!, { 'X-Upload-Credential': session.credential })).status).toBe(200);
    expect((await s.admin.request('POST', `/apps/${client.appId}/secret`)).status).toBe(200);
    // Every method on the upload it opened, a new upload, and the page opened again: refused.
    const head = await tusHead(created.url!, { 'X-Upload-Credential': session.credential });
    expect(head.status).toBe(401);
    expect((await tusPatch(created.url!, 0, Buffer.alloc(10), { 'X-Upload-Credential': session.credential })).status).toBe(401);
    const again = await tusCreate(s.baseUrl, 100, { 'X-Upload-Credential': session.credential });
    expect(again.res.status).toBe(401);
    expect(again.body).toMatch(/^ErrorCode : 107, ErrorMessage : Upload Credential Invalid: the application's secret was changed/);
    expect(await codeOf(s.vop.services.ingest.reopenUploadSession(session.credential))).toBe('107');
    // What the page is given says nothing of the secret.
    expect(Object.keys(session).sort()).toEqual(['appId', 'credential', 'expiresAt', 'keepSource', 'maxBytes', 'tusPath', 'uploadType', 'videoId']);
  });

  it('an expired credential is refused with 401 and code 107', async () => {
    const short = await startServer({ ingest: { credentialTtlMs: 50 } });
    try {
      const c = await short.newApp();
      const videoId = await c.register();
      const auth = c.auth();
      const session = await short.vop.services.ingest.openUploadSession({ appId: auth.AppId, timestamp: auth.Timestamp, token: auth.Token }, videoId, {}, '127.0.0.1');
      // Past the credential's 50 ms life: time itself is what is tested.
      await new Promise((r) => setTimeout(r, 80));
      const created = await tusCreate(short.baseUrl, 100, { 'X-Upload-Credential': session.credential });
      expect(created.res.status).toBe(401);
      expect(created.body).toMatch(/^ErrorCode : 107, ErrorMessage : Upload Credential Invalid: the credential has expired/);
    } finally {
      await short.close();
    }
  });
});

describe('recovery after a stop', () => {
  it('an upload whose last byte was written but which was not finished is finished at the next start', async () => {
    const dataDir = tempDataDir();
    const s1 = await startServer({ dataDir });
    const client = await s1.newApp();
    const videoId = await client.register();
    const created = await tusCreate(s1.baseUrl, clip.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId)) });
    const id = tusUploadId(created.url!);
    // As if the server died between writing the last byte and finishing the upload.
    fs.writeFileSync(s1.vop.media.path('incoming', 'tus', id), clip);
    await s1.close();

    const s2 = await boot({ dataDir });
    expect(await waitForIngest(s2.vop, videoId)).toBe(5);
    expect(sha256File(s2.vop.media.path('sources', videoId, 'source'))).toBe(sha256(clip));
    expect(fs.readdirSync(s2.vop.media.path('incoming', 'tus'))).toEqual([]);
  });

  it('a source stored but not yet checked when the server stopped is checked at the next start', async () => {
    const dataDir = tempDataDir();
    const s1 = await startServer({ dataDir });
    const client = await s1.newApp();
    const videoId = await client.register();
    // As if the server died right after the file became the source (the commit point).
    fs.mkdirSync(s1.vop.media.path('sources', videoId));
    fs.writeFileSync(s1.vop.media.path('sources', videoId, 'source'), clip);
    await s1.close();

    const s2 = await boot({ dataDir });
    expect(await ingestPath(s2.vop, videoId)).toEqual([8, 5]);
    expect((await s2.vop.stores.videos.get(videoId))!.sourceFile).toBe(`${videoId}/source`);
  });
});
