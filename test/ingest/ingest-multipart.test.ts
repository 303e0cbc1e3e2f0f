import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { ingestPath, sha256, sha256File } from '../helpers/ingest.js';
import { waitUntil } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { isUnexpectedErrorLine } from '../../server/core/logLines.js';

const MAX = 400_000;

let s: TestServer;
let client: SpecClient;
let clip: Buffer;

beforeAll(async () => {
  s = await startServer({ ingest: { multipartMaxBytes: MAX } });
  client = await s.newApp();
  const file = await makeClip({ seconds: 2 });
  clip = fs.readFileSync(file);
  fs.rmSync(file);
  expect(clip.length).toBeLessThan(MAX);
});
afterAll(async () => {
  // Every failure above was an expected one: nothing reached the log as a server error.
  expect(s.logs.filter(isUnexpectedErrorLine)).toEqual([]);
  await s.close();
});

/** The form as an application server would build it: fields first, then the file. */
function form(fields: Record<string, string>, file: Buffer | undefined, fileFirst = false): FormData {
  const f = new FormData();
  const addFile = () => file && f.append('file', new Blob([Uint8Array.from(file)], { type: 'video/mp4' }), 'clip.mp4');
  if (fileFirst) addFile();
  for (const [k, v] of Object.entries(fields)) f.append(k, v);
  if (!fileFirst) addFile();
  return f;
}

async function upload(body: FormData | ReadableStream, headers: Record<string, string> = {}) {
  const res = await fetch(`${s.baseUrl}/Api/Video/Upload`, { method: 'POST', body, headers, duplex: 'half' } as RequestInit);
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}

function incomingFiles(videoId: string): string[] {
  const dir = s.vop.media.path('incoming', videoId);
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

describe('POST /Api/Video/Upload (multipart)', () => {
  it('stores the file, answers the envelope with VideoId, and the video goes 8 → 5', async () => {
    const videoId = await client.register();
    const r = await upload(form({ ...client.auth(), VideoId: videoId }, clip));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ AuthMsg: { ResultCode: '1', ResultMessage: 'OK' }, VideoId: videoId });
    expect(sha256File(s.vop.media.path('sources', videoId, 'source'))).toBe(sha256(clip));
    // The answer comes once the file is checked: ingest has ended (the transcoder may have moved on).
    expect(await ingestPath(s.vop, videoId)).toEqual([8, 5]);
    expect((await s.vop.stores.videos.get(videoId))!.duration).toBe(2);
    expect(incomingFiles(videoId)).toEqual([]);
  });

  it('NeedHandleSepcial=true is kept for the transcoder', async () => {
    const videoId = await client.register();
    const r = await upload(form({ ...client.auth(), VideoId: videoId, NeedHandleSepcial: 'true' }, clip));
    expect(r.body.AuthMsg.ResultCode).toBe('1');
    expect((await s.vop.stores.videos.get(videoId))!.keepSource).toBe(true);
  });

  it('a second upload of the same video is refused (303) and leaves nothing behind', async () => {
    const videoId = await client.register();
    expect((await upload(form({ ...client.auth(), VideoId: videoId }, clip))).body.AuthMsg.ResultCode).toBe('1');
    const again = await upload(form({ ...client.auth(), VideoId: videoId }, Buffer.alloc(1000)));
    expect(again.body.AuthMsg.ResultCode).toBe('303');
    expect(sha256File(s.vop.media.path('sources', videoId, 'source'))).toBe(sha256(clip));
    expect(incomingFiles(videoId)).toEqual([]);
  });

  it('a file over the limit (announced by Content-Length) gets a 413 envelope at once; the video stays 8', async () => {
    const videoId = await client.register();
    const r = await upload(form({ ...client.auth(), VideoId: videoId }, Buffer.alloc(MAX + 100_000, 7)));
    expect(r.status).toBe(413);
    expect(r.body.AuthMsg.ResultCode).toBe('401');
    expect((await s.vop.stores.videos.get(videoId))!.status).toBe(8);
    expect(incomingFiles(videoId)).toEqual([]);
  });

  it('a file over the limit sent without Content-Length is cut off at the limit: 413, partial file removed, video stays 8', async () => {
    const videoId = await client.register();
    // Stream the form so that fetch sends it chunked, with no Content-Length to judge by.
    const encoded = new Request('http://localhost/', { method: 'POST', body: form({ ...client.auth(), VideoId: videoId }, Buffer.alloc(MAX + 1, 7)) });
    const type = encoded.headers.get('content-type')!;
    const body = new Uint8Array(await encoded.arrayBuffer());
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < body.length; i += 16_384) controller.enqueue(body.subarray(i, i + 16_384));
        controller.close();
      },
    });
    const r = await upload(stream, { 'content-type': type });
    expect(r.status).toBe(413);
    expect(r.body.AuthMsg.ResultCode).toBe('401');
    expect((await s.vop.stores.videos.get(videoId))!.status).toBe(8);
    expect(incomingFiles(videoId)).toEqual([]);
  });

  it('a second file part is refused, and the first, already written, is not left behind', async () => {
    const videoId = await client.register();
    const f = form({ ...client.auth(), VideoId: videoId }, clip);
    f.append('file2', new Blob([Uint8Array.from(clip)], { type: 'video/mp4' }), 'again.mp4');
    const r = await upload(f);
    expect(r.status).toBe(400);
    expect(r.body.AuthMsg.ResultMessage).toMatch(/one file per request/);
    expect(incomingFiles(videoId)).toEqual([]);
    expect((await s.vop.stores.videos.get(videoId))!.status).toBe(8);
  });

  it('a connection cut after the file part, before the form ends, leaves no file behind', async () => {
    const videoId = await client.register();
    const boundary = 'vopcut';
    const fields = Object.entries({ ...client.auth(), VideoId: videoId }).map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('');
    const head = Buffer.from(`${fields}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="clip.mp4"\r\nContent-Type: video/mp4\r\n\r\n`);
    // The file part ends (its boundary is sent), but not the form: the closing boundary never comes.
    const sent = Buffer.concat([head, clip, Buffer.from(`\r\n--${boundary}\r\nContent-Disposition: form-data; name="more"\r\n\r\n`)]);
    const { port } = new URL(s.baseUrl);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(`POST /Api/Video/Upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${sent.length + 1000}\r\n\r\n`);
    socket.write(sent);
    // The file is written to its end while the connection is open.
    await waitUntil('the file part on disk', () => (incomingFiles(videoId).some((n) => fs.statSync(s.vop.media.path('incoming', videoId, n)).size >= clip.length) ? true : undefined), { timeoutMs: 10_000 });
    socket.destroy();
    await waitUntil('the part file removed', () => (incomingFiles(videoId).length === 0 ? true : undefined), { timeoutMs: 5_000 });
    expect((await s.vop.stores.videos.get(videoId))!.status).toBe(8);
  });

  it('a file that is not a video is refused with 307; the video ends in 7 with the reason, the file dropped', async () => {
    const videoId = await client.register();
    const r = await upload(form({ ...client.auth(), VideoId: videoId }, Buffer.from('hello, this is text\n'.repeat(50))));
    expect(r.status).toBe(200);
    expect(r.body.AuthMsg.ResultCode).toBe('307');
    expect(r.body.AuthMsg.ResultMessage).toMatch(/^Not A Video: /);
    const video = (await s.vop.stores.videos.get(videoId))!;
    expect(video.status).toBe(7);
    expect(video.statusReason).toMatch(/^not a video: /);
    expect(video.sourceFile).toBe('');
    expect(fs.existsSync(s.vop.media.path('sources', videoId, 'source'))).toBe(false);
    expect(await ingestPath(s.vop, videoId)).toEqual([8, 7]);
  });

  it('a wrong token gets the 104 envelope and stores nothing', async () => {
    const videoId = await client.register();
    const r = await upload(form({ ...client.auth({ Token: 'f'.repeat(32) }), VideoId: videoId }, clip));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ AuthMsg: { ResultCode: '104', ResultMessage: 'App SecretKey Error' } });
    expect((await s.vop.stores.videos.get(videoId))!.status).toBe(8);
    expect(incomingFiles(videoId)).toEqual([]);
  });

  it('fields after the file part are missing when the file arrives (100, with the rule in the message)', async () => {
    const videoId = await client.register();
    const r = await upload(form({ ...client.auth(), VideoId: videoId }, clip, true));
    expect(r.body.AuthMsg.ResultCode).toBe('100');
    expect(r.body.AuthMsg.ResultMessage).toMatch(/before the file/);
    expect((await s.vop.stores.videos.get(videoId))!.status).toBe(8);
  });

  it('no file part: 100; not multipart: 415; GET: 405; a pull video: 303', async () => {
    const videoId = await client.register();
    expect((await upload(form({ ...client.auth(), VideoId: videoId }, undefined))).body.AuthMsg.ResultCode).toBe('100');
    const urlencoded = await client.post('/Api/Video/Upload', { VideoId: videoId });
    expect(urlencoded.status).toBe(415);
    expect((await client.get('/Api/Video/Upload')).status).toBe(405);
    const pull = await client.register({ SourceFileGetType: 2, SourceFilePath: 'http://127.0.0.1:9/x.mp4' });
    expect((await upload(form({ ...client.auth(), VideoId: pull }, clip))).body.AuthMsg.ResultCode).toBe('303');
  });
});
