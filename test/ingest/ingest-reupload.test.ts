/**
 * A file that is not a video does not end a video (issue 10 item 6): the upload is refused, the
 * bad file deleted, and the video, in 7 "not a video", takes another file by multipart, by tus
 * and through the upload page. A video that has a good file never takes another: 1, 5 or a
 * transcoding failure (7 with its source) still refuses, over real HTTP.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { sha256, sha256File, statusPath, tokenMetadata, tusCreate, tusMetadata, tusPatch } from '../helpers/ingest.js';
import { waitForStatus } from '../helpers/wait.js';
import { startServer, tempDataDir, type TestServer } from '../helpers/server.js';
import { isUnexpectedErrorLine } from '../../server/core/logLines.js';

let s: TestServer;
let client: SpecClient;
let clip: Buffer;
const text = Buffer.from('this is a shopping list, not a video\n'.repeat(40));

beforeAll(async () => {
  s = await startServer();
  client = await s.newApp();
  const file = await makeClip({ seconds: 1, width: 160, height: 90 });
  clip = fs.readFileSync(file);
  fs.rmSync(file);
});
/** The second server of the restart test, closed here even if the test fails. */
let restarted: TestServer | undefined;

afterAll(async () => {
  expect(s.logs.filter(isUnexpectedErrorLine)).toEqual([]);
  await s.close();
  await restarted?.close();
});

async function multipart(videoId: string, file: Buffer): Promise<{ ResultCode: string; ResultMessage: string }> {
  const f = new FormData();
  for (const [k, v] of Object.entries({ ...client.auth(), VideoId: videoId })) f.append(k, v);
  f.append('file', new Blob([Uint8Array.from(file)]), 'file.bin');
  const res = await fetch(`${s.baseUrl}/Api/Video/Upload`, { method: 'POST', body: f });
  expect(res.status).toBe(200);
  return ((await res.json()) as { AuthMsg: { ResultCode: string; ResultMessage: string } }).AuthMsg;
}

/** A whole tus upload authorised by the spec's values: creation, then one PATCH. */
async function tus(videoId: string, file: Buffer): Promise<{ created: number; patched?: Response }> {
  const created = await tusCreate(s.baseUrl, file.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId)) });
  if (created.res.status !== 201) return { created: created.res.status };
  return { created: 201, patched: await tusPatch(created.url!, 0, file) };
}

/** The upload page's answer for `videoId`: its status and the first line of text. */
async function openPage(videoId: string): Promise<{ status: number; text: string }> {
  const a = client.auth();
  const q = new URLSearchParams({ appId: a.AppId!, timestamp: a.Timestamp!, token: a.Token!, videoId });
  const res = await fetch(`${s.baseUrl}/widget/upload?${q}`);
  return { status: res.status, text: await res.text() };
}

function sourceOf(videoId: string): string {
  return s.vop.media.path('sources', videoId, 'source');
}

describe('a video whose file was not a video takes another', () => {
  it('by multipart: 307 for the text, then the clip is taken and the video goes on to 5', async () => {
    const videoId = await client.register();
    expect(await multipart(videoId, text)).toMatchObject({ ResultCode: '307' });
    expect(fs.existsSync(sourceOf(videoId))).toBe(false);
    // A second wrong file: refused again, still 7, no new callback-worthy change.
    expect(await multipart(videoId, text)).toMatchObject({ ResultCode: '307' });
    expect((await s.vop.stores.videos.get(videoId))!.status).toBe(7);

    expect(await multipart(videoId, clip)).toEqual({ ResultCode: '1', ResultMessage: 'OK' });
    expect(sha256File(sourceOf(videoId))).toBe(sha256(clip));
    expect((await statusPath(s.vop, videoId)).slice(0, 4)).toEqual([8, 7, 7, 5]);
    // Now it has its file: another one is refused, and the stored one stays.
    expect(await multipart(videoId, text)).toMatchObject({ ResultCode: '303' });
    expect(sha256File(sourceOf(videoId))).toBe(sha256(clip));
  });

  it('by tus: 422 (307) on the last PATCH for the text, then the clip is taken (204, X-Video-Status 5)', async () => {
    const videoId = await client.register();
    const bad = await tus(videoId, text);
    expect(bad.patched!.status).toBe(422);
    expect(await bad.patched!.text()).toMatch(/^ErrorCode : 307, ErrorMessage : Not A Video: /);
    const good = await tus(videoId, clip);
    expect(good.patched!.status).toBe(204);
    expect(good.patched!.headers.get('x-video-status')).toBe('5');
    expect(sha256File(sourceOf(videoId))).toBe(sha256(clip));
    const again = await tus(videoId, clip);
    expect(again.created).toBe(403);
  });

  it('a new file stored for it just before a stop is checked at the next start (7 → 5)', async () => {
    const dataDir = tempDataDir();
    const s1 = await startServer({ dataDir });
    const c = await s1.newApp();
    const videoId = await c.register();
    const f = new FormData();
    for (const [k, v] of Object.entries({ ...c.auth(), VideoId: videoId })) f.append(k, v);
    f.append('file', new Blob([Uint8Array.from(text)]), 'notes.txt');
    const refused = fetch(`${s1.baseUrl}/Api/Video/Upload`, { method: 'POST', body: f }).then((r) => r.json());
    expect((await refused).AuthMsg.ResultCode).toBe('307');
    // As if the server died right after the new file became the source (the commit point).
    fs.mkdirSync(s1.vop.media.path('sources', videoId), { recursive: true });
    fs.writeFileSync(s1.vop.media.path('sources', videoId, 'source'), clip);
    await s1.close();
    const s2 = await startServer({ dataDir });
    restarted = s2;
    expect((await statusPath(s2.vop, videoId)).slice(0, 3)).toEqual([8, 7, 5]);
    expect((await s2.vop.stores.videos.get(videoId))!.sourceFile).toBe(`${videoId}/source`);
  });

  it('through the upload page: it opens again for a video in 7 "not a video"', async () => {
    const videoId = await client.register();
    expect(await multipart(videoId, text)).toMatchObject({ ResultCode: '307' });
    const page = await openPage(videoId);
    expect(page.status).toBe(200);
    expect(page.text).toContain('id="vop-session"');
  });
});

describe('a video that has a good file refuses another', () => {
  it('in 1 (transcoded): multipart, tus and the page all refuse with 303, and the source stays', async () => {
    const videoId = await client.register();
    expect(await multipart(videoId, clip)).toMatchObject({ ResultCode: '1' });
    await waitForStatus(s.vop, videoId, [1], { timeoutMs: 60_000 });
    expect(await multipart(videoId, text)).toMatchObject({ ResultCode: '303' });
    expect((await tus(videoId, text)).created).toBe(403);
    expect(await openPage(videoId)).toMatchObject({ status: 409, text: expect.stringMatching(/^ErrorCode : 303, /) });
    expect(sha256File(sourceOf(videoId))).toBe(sha256(clip));
    expect((await s.vop.stores.videos.get(videoId))!.status).toBe(1);
  });

  it('in 7 after a transcoding failure (its source kept): refused, even if the reason mentions "not a video"', async () => {
    const videoId = await client.register();
    expect(await multipart(videoId, clip)).toMatchObject({ ResultCode: '1' });
    await waitForStatus(s.vop, videoId, [1], { timeoutMs: 60_000 });
    // As the transcoder records a failure: the source stays, the reason is its own.
    expect(await s.vop.stores.videos.setStatus(videoId, 7, { reason: 'transcoding failed: not a video: the decoder gave up' })).toBe(true);
    expect(await multipart(videoId, text)).toMatchObject({ ResultCode: '303' });
    expect((await tus(videoId, clip)).created).toBe(403);
    expect(sha256File(sourceOf(videoId))).toBe(sha256(clip));
  });
});
