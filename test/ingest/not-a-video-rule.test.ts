/**
 * One rule for a file that is not a video, whichever way it comes and whoever finds it out: the
 * video goes to 7 with the reason `not a video: …`, one status callback for 7 is sent, the answer
 * carries result code 307 where there is an answer, nothing of the file is kept, and an uploaded
 * video takes another file. Covered: multipart and tus (ffprobe's verdict on random bytes named
 * .mp4, and on an empty file), the upload page's quick look (a .txt name, text bytes, an empty
 * file: reported before any upload), and a pull (ffprobe's verdict).
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpecClient } from '../helpers/client.js';
import { startCallbackReceiver } from '../helpers/callbackReceiver.js';
import { tokenMetadata, tusCreate, tusMetadata, tusPatch } from '../helpers/ingest.js';
import { waitForStatus } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let client: SpecClient;
let rx: Awaited<ReturnType<typeof startCallbackReceiver>>;
let files: http.Server;
let filesBase: string;
const noise = crypto.randomBytes(64 * 1024);
const text = Buffer.from('this is a shopping list, not a video\n'.repeat(40));

beforeAll(async () => {
  rx = await startCallbackReceiver();
  s = await startServer({ ingest: { pull: { allow: ['127.0.0.0/8'], retry: { maxRetries: 0, baseDelayMs: 10, maxDelayMs: 10, jitter: false } } } });
  const { appId, appSecret } = await s.admin.createApp('Rule site', rx.url);
  client = new SpecClient(s.baseUrl, appId, appSecret);
  files = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'video/mp4' }).end(noise));
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  filesBase = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  await s?.close();
  await rx?.close();
  files?.closeAllConnections();
  await new Promise((r) => files?.close(r));
});

async function multipart(videoId: string, data: Buffer, name: string): Promise<string> {
  const form = new FormData();
  for (const [k, v] of Object.entries({ ...client.auth(), VideoId: videoId })) form.append(k, v);
  form.append('file', new Blob([Uint8Array.from(data)]), name);
  const res = await fetch(`${s.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form });
  return ((await res.json()) as { AuthMsg: { ResultCode: string } }).AuthMsg.ResultCode;
}

/** A whole tus upload with the spec's values; resolves with the answer that ended it. */
async function tus(videoId: string, data: Buffer, name: string): Promise<{ status: number; body: string }> {
  const created = await tusCreate(s.baseUrl, data.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId, { filename: name })) });
  if (created.res.status !== 201 || data.length === 0) return { status: created.res.status, body: created.body };
  const patched = await tusPatch(created.url!, 0, data);
  return { status: patched.status, body: await patched.text() };
}

/** The upload page's session for `videoId`, as the page reads it. */
async function pageSession(videoId: string): Promise<{ credential: string; quickLook: { extensions: string[]; bytes: number; report: string } }> {
  const a = client.auth();
  const q = new URLSearchParams({ appId: a.AppId!, timestamp: a.Timestamp!, token: a.Token!, videoId });
  const html = await (await fetch(`${s.baseUrl}/widget/upload?${q}`)).text();
  return JSON.parse(/<script type="application\/json" id="vop-session">(.*?)<\/script>/s.exec(html)![1]!);
}

/** The page's report of a file it found not to be a video, as upload.js sends it. */
async function report(videoId: string, data: Buffer, name: string): Promise<{ status: number; body: string }> {
  const session = await pageSession(videoId);
  const url = new URL(session.quickLook.report, `${s.baseUrl}/widget/upload`);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'X-Upload-Credential': session.credential, 'X-File-Name': encodeURIComponent(name), 'Content-Type': 'application/octet-stream' },
    body: Uint8Array.from(data.subarray(0, session.quickLook.bytes)),
  });
  return { status: res.status, body: await res.text() };
}

/** What became of `videoId`: its status, reason, whether a source is kept, and its callbacks' statuses. */
async function outcome(videoId: string) {
  await s.vop.jobs.idle(['callback']);
  const video = (await s.vop.stores.videos.get(videoId))!;
  const callbacks = rx.received.filter((f) => f.VideoId === videoId).map((f) => f.VideoStatus);
  return { status: video.status, reason: video.statusReason.slice(0, 'not a video: '.length), source: video.sourceFile, callbacks };
}

const ENDED = { status: 7, reason: 'not a video: ', source: '', callbacks: ['7'] };

describe('a file that is not a video ends the same way on every route', () => {
  const uploads: Array<[string, (id: string) => Promise<string>]> = [
    ['multipart, random bytes named .mp4', async (id) => multipart(id, noise, 'holiday.mp4')],
    ['multipart, an empty file', async (id) => multipart(id, Buffer.alloc(0), 'empty.mp4')],
    ['tus, random bytes named .mp4', async (id) => codeOf(await tus(id, noise, 'holiday.mp4'), 422)],
    ['tus, an empty file', async (id) => codeOf(await tus(id, Buffer.alloc(0), 'empty.mp4'), 422)],
    ["the page's quick look, a .txt name", async (id) => codeOf(await report(id, text, 'notes.txt'), 422)],
    ["the page's quick look, text bytes named .mp4", async (id) => codeOf(await report(id, text, 'list.mp4'), 422)],
    ["the page's quick look, an empty file", async (id) => codeOf(await report(id, Buffer.alloc(0), 'empty.mp4'), 422)],
  ];

  it.each(uploads)('%s: 307, the video in 7 with one callback for 7, and it takes another file', async (_way, send) => {
    const videoId = await client.register();
    expect(await send(videoId)).toBe('307');
    await expect.poll(() => outcome(videoId)).toEqual(ENDED);
    // Refused again: still 7, no second callback (7 → 7 is no change).
    expect(await send(videoId)).toBe('307');
    expect(await outcome(videoId)).toEqual(ENDED);
    // And it takes another file: the upload page opens for it again (ingest-reupload.test.ts sends one).
    expect((await pageSession(videoId)).credential).toBeTruthy();
  });

  it('a pull: random bytes end the same way (7, one callback for 7, nothing kept)', async () => {
    const r = await client.post('/Api/Video/Post', { VideoTitle: 'Pulled', SourceFileGetType: 2, SourceFilePath: `${filesBase}/holiday.mp4` });
    const videoId = r.body.VideoId as string;
    await waitForStatus(s.vop, videoId, [7, 4], { timeoutMs: 20_000 });
    await expect.poll(() => outcome(videoId)).toEqual(ENDED);
  });

  it("the page's report of a file that is not obviously not a video records nothing: it is to be uploaded", async () => {
    const videoId = await client.register();
    const answer = await report(videoId, noise, 'holiday.mp4');
    expect(answer.status).toBe(400);
    expect(answer.body).toMatch(/^ErrorCode : 201, /);
    expect(await outcome(videoId)).toMatchObject({ status: 8, callbacks: [] });
  });
});

/** The result code of a widget error line, checking the HTTP status it came with. */
function codeOf(answer: { status: number; body: string }, status: number): string {
  expect(answer.status, answer.body).toBe(status);
  return /^ErrorCode : (\d+), /.exec(answer.body)?.[1] ?? `no code in ${answer.body}`;
}
