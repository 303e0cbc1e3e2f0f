/**
 * The admin endpoints the console adds (issue 5): the cookie login and its CSRF rule, the events
 * stream, the video search, retry and delete, the overview, the settings, the uploads in
 * progress, and the serving of the built console.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleRouter } from '../../server/routes/console.js';
import { loadSavedSettings, savedSettingsAsOptions } from '../../server/settings/consoleSettings.js';
import { makeClip } from '../helpers/clips.js';
import type { SpecClient } from '../helpers/client.js';
import { collectEvents, CookieClient, ensureConsoleBuilt } from '../helpers/console.js';
import { tokenMetadata, tusCreate, tusMetadata, tusPatch } from '../helpers/ingest.js';
import { TINY_PROCESSING, placeSource, storeSource } from '../helpers/processing.js';
import { clearOfMinuteTurn, waitForStatus, waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, startServer, tempDataDir, type TestServer } from '../helpers/server.js';

let s: TestServer;
let app: SpecClient;
let clip: string;
/** A source for pulls: 404 until `serveText` is set, then a text file (not a video). */
let source: http.Server;
let sourceBase: string;
let serveText = false;

beforeAll(async () => {
  [s, clip] = await Promise.all([startServer({ processing: TINY_PROCESSING, ingest: { pull: { retry: { maxRetries: 0 }, allow: ['127.0.0.0/8'] } } }), makeClip({ seconds: 1 }), ensureConsoleBuilt()]);
  app = await s.newApp('console api');
  source = http.createServer((_req, res) => {
    if (serveText) res.writeHead(200, { 'content-type': 'text/plain' }).end('not a video at all\n'.repeat(50));
    else res.writeHead(404).end('no such file');
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  sourceBase = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
}, 180_000);
afterAll(async () => {
  source?.closeAllConnections();
  await new Promise((r) => source?.close(r));
  await s?.close();
});

describe('console login (POST /admin/api/session)', () => {
  it('refuses a wrong token with a readable message, and sets no cookie', async () => {
    const c = new CookieClient(s.baseUrl);
    const res = await c.login('not-the-admin-token-at-all');
    expect(res.status).toBe(401);
    expect(res.headers.get('set-cookie')).toBeNull();
    expect((await res.json()).error.message).toMatch(/not the admin token/);
  });

  it('gives an HttpOnly, SameSite=Strict session cookie that is not the token, and the cookie authorises the admin API', async () => {
    const c = new CookieClient(s.baseUrl);
    expect((await c.json('GET', '/session')).body).toEqual({ loggedIn: false, expiresAt: null });
    const res = await c.login(ADMIN_TOKEN);
    expect(res.status).toBe(200);
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^vop_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    expect(cookie).not.toContain(ADMIN_TOKEN);
    expect((await c.json('GET', '/session')).body.loggedIn).toBe(true);
    expect((await c.json('GET', '/apps')).status).toBe(200);
  });

  it("refuses a cookie request without the session's secret in X-Vop-Console (CSRF), and the login itself without the header", async () => {
    const c = new CookieClient(s.baseUrl);
    await c.login(ADMIN_TOKEN);
    const refused = await c.json('POST', '/apps', { name: 'from another site' }, { consoleHeader: false });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('412');
    expect(refused.body.error.message).toMatch(/X-Vop-Console.*log in again/);
    expect((await c.json('POST', '/apps', { name: 'from the console' })).status).toBe(201);
    const bare = await fetch(`${s.baseUrl}/admin/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: ADMIN_TOKEN }) });
    expect(bare.status).toBe(401);
  });

  it('logs out: the cookie stops working; the bearer token still works', async () => {
    const c = new CookieClient(s.baseUrl);
    await c.login(ADMIN_TOKEN);
    const out = await c.raw('DELETE', '/admin/api/session');
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/);
    expect((await c.json('GET', '/apps')).status).toBe(401);
    expect((await s.admin.request('GET', '/apps')).status).toBe(200);
  });

  it('limits wrong tokens per address, logins and bearer tokens together, and never locks out the right token', async () => {
    const other = await startServer();
    try {
      const c = new CookieClient(other.baseUrl);
      await clearOfMinuteTurn(5_000); // the failures below count in one clock minute
      for (let i = 0; i < 5; i++) expect((await c.login('wrong-token-wrong-token')).status).toBe(401);
      const wrongBearer = () => fetch(`${other.baseUrl}/admin/api/apps`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } });
      for (let i = 0; i < 5; i++) expect((await wrongBearer()).status).toBe(401);
      // Ten wrong tokens from this address: the next wrong one, by either way, is refused unread…
      const limited = await c.login('wrong-token-wrong-token');
      expect(limited.status).toBe(429);
      expect((await limited.json()).error.message).toMatch(/wait a minute/);
      expect((await wrongBearer()).status).toBe(429);
      // …while the real admin, on the same address, still gets in both ways (issue 12, item 4).
      expect((await c.login(ADMIN_TOKEN)).status).toBe(200);
      expect((await c.json('GET', '/apps')).status).toBe(200);
      expect((await fetch(`${other.baseUrl}/admin/api/apps`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(200);
    } finally {
      await other.close();
    }
  });
});

describe('events (GET /admin/api/events)', () => {
  it('pushes job and video events, at most 4 progress reports a second per job, and lets go of its listeners on disconnect', async () => {
    const bus = s.vop.events;
    const before = bus.listenerCount('job.progress');
    const c = new CookieClient(s.baseUrl);
    await c.login(ADMIN_TOKEN);
    const abort = new AbortController();
    const res = await c.openEvents(abort.signal);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const got: Array<{ event: string; data: any }> = [];
    collectEvents(res, got);
    await waitUntil('the first uploads message', () => (got.some((e) => e.event === 'uploads') ? true : undefined));
    expect(bus.listenerCount('job.progress')).toBe(before + 1);

    // 40 reports within ~100 ms: the first goes out at once, the newest one at the end of the interval.
    for (let i = 1; i <= 40; i++) bus.emit('job.progress', { jobId: 'j1', type: 'transcode', videoId: 'v1', percent: i, speed: '2.0x', etaSeconds: 3 });
    bus.emit('video.status', { videoId: 'v1', appId: 'a1', from: 5, to: 6, reason: '', at: Date.now() });
    await waitUntil('the held-back progress', () => (got.some((e) => e.event === 'job.progress' && e.data.percent === 40) ? true : undefined), { timeoutMs: 5_000 });
    const progress = got.filter((e) => e.event === 'job.progress');
    expect(progress.map((e) => e.data.percent)).toEqual([1, 40]);
    expect(got).toContainEqual({ event: 'video.status', data: expect.objectContaining({ videoId: 'v1', from: 5, to: 6 }) });

    // A report held back when its job ends is dropped, not sent after the end.
    bus.emit('job.progress', { jobId: 'j2', type: 'transcode', videoId: 'v2', percent: 10 });
    bus.emit('job.progress', { jobId: 'j2', type: 'transcode', videoId: 'v2', percent: 90 });
    bus.emit('job.state', { jobId: 'j2', type: 'transcode', videoId: 'v2', state: 'succeeded', error: '' });
    // Time is the subject: past the pacer's interval, when the held-back report would be sent, if it were: it may not.
    await new Promise((r) => setTimeout(r, 400));
    expect(got.filter((e) => e.data.jobId === 'j2').map((e) => e.event)).toEqual(['job.progress', 'job.state']);

    abort.abort();
    await waitUntil('listeners removed', () => (bus.listenerCount('job.progress') === before ? true : undefined), { timeoutMs: 5_000 });
    expect(bus.listenerCount('video.status')).toBeGreaterThan(0); // the server's own listeners stay
  });

  it('refuses a caller without the cookie or token', async () => {
    const res = await fetch(`${s.baseUrl}/admin/api/events`);
    expect(res.status).toBe(401);
  });
});

describe('videos', () => {
  it('searches by title text, status, uploader and application, newest first, with paging', async () => {
    const other = await s.newApp('second app');
    const ids: string[] = [];
    for (const [title, user, client] of [
      ['Cats 100% fun', 'ann', app],
      ['Dogs_and cats', 'bob', app],
      ['Birds', 'ann', other],
    ] as const) {
      ids.push(await client.register({ VideoTitle: title, createUser: user }));
      // Time is the subject: each video created in a later millisecond, so that "newest first" has one order.
      await new Promise((r) => setTimeout(r, 5));
    }
    const search = async (q: string) => (await s.admin.request('GET', `/videos${q}`)).body;
    const cats = await search('?q=cats');
    expect(cats.videos.map((v: any) => v.title)).toEqual(['Dogs_and cats', 'Cats 100% fun']);
    expect(cats.total).toBe(2);
    expect((await search('?q=100%25')).videos.map((v: any) => v.title)).toEqual(['Cats 100% fun']);
    expect((await search('?q=s_a')).videos.map((v: any) => v.title)).toEqual(['Dogs_and cats']); // _ is not a wildcard
    expect((await search('?createUser=ann&status=8')).videos.map((v: any) => v.title)).toEqual(['Birds', 'Cats 100% fun']);
    expect((await search(`?appId=${other.appId}`)).videos).toEqual([expect.objectContaining({ title: 'Birds', appName: 'second app', status: 8, createUser: 'ann' })]);
    const page = await search('?createUser=ann&limit=1&offset=1');
    expect(page).toMatchObject({ total: 2, offset: 1, limit: 1 });
    expect(page.videos.map((v: any) => v.id)).toEqual([ids[0]]);
    const bad = await s.admin.request('GET', '/videos?status=9');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/status must be/);
  });

  it('retries a video whose transcoding failed (7 → 5 → 1), gives play addresses, and deletes it (0, files purged)', async () => {
    const videoId = await app.register({ VideoTitle: 'to retry and delete' });
    // A source the transcode refuses, as if ffmpeg had failed: then the good file is put back.
    fs.mkdirSync(path.join(s.dataDir, 'tmp'), { recursive: true });
    const junk = path.join(s.dataDir, 'tmp', 'junk.mp4');
    fs.writeFileSync(junk, 'junk'.repeat(100));
    await placeSource(s.vop, videoId, junk);
    await waitForStatus(s.vop, videoId, [7]);
    // The transcode refused it as not a video and dropped it: a good file is stored again.
    await storeSource(s.vop, videoId, clip);

    const retried = await s.admin.request('POST', `/videos/${videoId}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body.action).toBe('transcode');
    await waitForStatus(s.vop, videoId, [1], { timeoutMs: 60_000 });
    const again = await s.admin.request('POST', `/videos/${videoId}/retry`);
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(/only a video whose download \(4\) or transcoding \(7\) failed/);

    const pb = (await s.admin.request('GET', `/videos/${videoId}/playback`)).body;
    expect(pb.playable).toBe(true);
    expect(pb.renditions.map((r: any) => r.label)).toEqual(['180p', '120p']);
    expect(pb.covers).toHaveLength(6);
    const play = await fetch(pb.renditions[0].playUrl);
    expect(play.status).toBe(200);
    expect(play.headers.get('content-type')).toMatch(/video\/mp4/);
    const files = pb.renditions.map((r: any) => path.join(s.dataDir, 'media/play', r.file));
    expect(files.every((f: string) => fs.existsSync(f))).toBe(true);

    const del = await s.admin.request('DELETE', `/videos/${videoId}`);
    expect(del.status).toBe(200);
    expect(del.body.video.status).toBe(0);
    const v = (await s.vop.stores.videos.get(videoId))!;
    expect(v).toMatchObject({ status: 0, sourceFile: '', coverFile: '' });
    expect(await s.vop.stores.videos.renditions(videoId)).toEqual([]);
    expect(files.some((f: string) => fs.existsSync(f))).toBe(false);
    for (const area of ['sources', 'hls', 'covers']) expect(fs.existsSync(path.join(s.dataDir, 'media', area, videoId))).toBe(false);
    expect((await fetch(pb.renditions[0].playUrl)).status).toBe(404);
    const history = (await s.vop.stores.videos.statusHistory(videoId)).map((h) => [h.to, h.reason]);
    expect(history).toContainEqual([5, '']);
    expect(history.at(-1)).toEqual([0, 'deleted by an admin']);
    // A video in 0 cannot be retried; deleting again purges again.
    expect((await s.admin.request('POST', `/videos/${videoId}/retry`)).status).toBe(409);
    expect((await s.admin.request('DELETE', `/videos/${videoId}`)).status).toBe(200);
  });

  it('retries a failed download (4 → 2): the pull runs again', async () => {
    serveText = false;
    const videoId = await app.register({ VideoTitle: 'pulled', SourceFileGetType: 2, SourceFilePath: `${sourceBase}/clip.mp4` });
    await waitForStatus(s.vop, videoId, [4]);
    serveText = true;
    const r = await s.admin.request('POST', `/videos/${videoId}/retry`);
    expect(r.status).toBe(200);
    expect(r.body.action).toBe('download');
    await waitForStatus(s.vop, videoId, [7]); // downloaded this time, then refused as not a video
    const path_ = (await s.vop.stores.videos.statusHistory(videoId)).map((h) => h.to);
    expect(path_).toEqual([2, 3, 4, 2, 3, 7]);
  });

  it('answers 404 for an unknown video', async () => {
    expect((await s.admin.request('POST', '/videos/00000000-0000-4000-8000-000000000000/retry')).status).toBe(404);
    expect((await s.admin.request('DELETE', '/videos/nope')).status).toBe(404);
  });
});

describe('overview, uploads and settings', () => {
  it('shows the addresses with the port, the widget scripts, videos by status, disk and ffmpeg', async () => {
    const port = new URL(s.baseUrl).port;
    const o = (await s.admin.request('GET', '/overview')).body;
    expect(o.addresses[0]).toEqual({ label: 'This machine', baseUrl: `http://127.0.0.1:${port}`, apiUrl: `http://127.0.0.1:${port}/Api/Video`, served: true });
    // Bound to 127.0.0.1: LAN addresses are listed but not served.
    for (const a of o.addresses.slice(1)) expect(a).toMatchObject({ served: false, apiUrl: expect.stringMatching(new RegExp(`^http://[\\d.]+:${port}/Api/Video$`)) });
    expect(o.widgetScripts).toEqual([{ label: 'This machine', window: `http://127.0.0.1:${port}/widget/initUploadWidget.js`, overlay: `http://127.0.0.1:${port}/widget/initUploadABoxWidget.js` }]);
    expect(o.videosByStatus['8']).toBeGreaterThan(0);
    expect(o.disk.totalBytes).toBeGreaterThan(o.disk.freeBytes);
    expect(o.disk.usedBytes).toBe(o.disk.totalBytes - o.disk.freeBytes);
    expect(o.ffmpeg.ok).toBe(true);
    expect(o.apps.total).toBeGreaterThan(0);
  });

  it('lists a tus upload in progress with its bytes and percent', async () => {
    const videoId = await app.register({ VideoTitle: 'half uploaded' });
    const data = fs.readFileSync(clip);
    const { url } = await tusCreate(s.baseUrl, data.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(app, videoId)) });
    const half = data.subarray(0, data.length >> 1);
    expect((await tusPatch(url!, 0, half)).status).toBe(204);
    const uploads = (await s.admin.request('GET', '/uploads')).body.uploads;
    expect(uploads).toEqual([
      expect.objectContaining({ videoId, title: 'half uploaded', filename: 'clip.mp4', size: data.length, offset: half.length, percent: Math.floor((half.length / data.length) * 100) }),
    ]);
  });

  it('applies concurrency and the pull networks at once, saves the rest for the next start, and refuses bad values readably', async () => {
    const view = (await s.admin.request('GET', '/settings')).body;
    expect(view.running).toMatchObject({ transcodeConcurrency: 1, port: Number(new URL(s.baseUrl).port), ladderRungs: TINY_PROCESSING.ladder!.rungs });
    expect(view.saved).toEqual({});
    expect(view.dataDir).toBe(s.dataDir);

    const put = await s.admin.request('PUT', '/settings', { transcodeConcurrency: 2, ladderRungs: [{ label: '240p', shortSide: 240, videoBitrateKbps: 400 }], pullDeny: ['10.0.0.0/8'] });
    expect(put.status).toBe(200);
    expect(put.body.applied).toEqual(['pullDeny', 'transcodeConcurrency']);
    expect(put.body.afterRestart).toEqual(['ladderRungs']);
    expect(put.body.pendingRestart).toEqual(['ladderRungs']);
    expect(s.vop.jobs.concurrency('transcode')).toBe(2);
    expect(put.body.running.pullDeny).toEqual(['10.0.0.0/8']);
    const saved = loadSavedSettings(s.dataDir);
    expect(saved).toEqual({ transcodeConcurrency: 2, ladderRungs: [{ label: '240p', shortSide: 240, videoBitrateKbps: 400 }], pullDeny: ['10.0.0.0/8'] });
    expect(savedSettingsAsOptions(saved).options).toEqual({
      ingest: { pull: { deny: ['10.0.0.0/8'] } },
      processing: { ladder: { rungs: [{ label: '240p', shortSide: 240, videoBitrateKbps: 400 }] }, concurrency: 2 },
    });

    const badCidr = await s.admin.request('PUT', '/settings', { pullAllow: ['10.0.0.0/33'] });
    expect(badCidr.status).toBe(400);
    // The field as the console names it, and in the page's words (not `Option ingest.pull.allow`).
    expect(badCidr.body.error).toEqual({
      code: '201',
      message: 'Invalid Parameter: Pull: allowed networks: “10.0.0.0/33” is not a network: write one per line, like 127.0.0.0/8 or fd00::/8.',
      detail: 'Pull: allowed networks: “10.0.0.0/33” is not a network: write one per line, like 127.0.0.0/8 or fd00::/8.',
      field: 'pullAllow',
      rule: 'cidr',
      value: '10.0.0.0/33',
    });
    // A rung is named by its row as sent, counted from 1 in words and from 0 in the field path.
    const badRung = await s.admin.request('PUT', '/settings', {
      ladderRungs: [
        { label: '480p', shortSide: 480, videoBitrateKbps: 900 },
        { label: '240p', shortSide: 241, videoBitrateKbps: 400 },
      ],
    });
    expect(badRung.status).toBe(400);
    expect(badRung.body.error).toMatchObject({ code: '201', field: 'ladderRungs[1].shortSide', rule: 'even', message: 'Invalid Parameter: Rendition ladder, rung 2 (shorter side): must be an even whole number of at least 2.' });
    const twice = await s.admin.request('PUT', '/settings', { ladderRungs: [{ label: 'hd', shortSide: 720, videoBitrateKbps: 900 }, { label: 'hd', shortSide: 360, videoBitrateKbps: 400 }] });
    expect(twice.body.error).toMatchObject({ field: 'ladderRungs[1].label', rule: 'twice', value: 'hd' });
    const badUrl = await s.admin.request('PUT', '/settings', { publicUrl: 'videos.lan' });
    expect(badUrl.body.error).toMatchObject({ field: 'publicUrl', rule: 'url' });
    const badConcurrency = await s.admin.request('PUT', '/settings', { downloadConcurrency: 0 });
    expect(badConcurrency.body.error).toMatchObject({ field: 'downloadConcurrency', rule: 'whole', min: 1, max: 64, message: 'Invalid Parameter: Downloads at once: must be a whole number from 1 to 64.' });
    const badKey = await s.admin.request('PUT', '/settings', { colour: 'blue' });
    expect(badKey.status).toBe(400);
    expect(badKey.body.error.message).toMatch(/colour is not a setting/);
    expect(loadSavedSettings(s.dataDir)).toEqual(saved); // nothing saved by a refused change
    await s.admin.request('PUT', '/settings', { transcodeConcurrency: 1 });
  });

  it('starts with the saved settings merged in', async () => {
    const dataDir = tempDataDir();
    fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ ladderRungs: [{ label: '240p', shortSide: 240, videoBitrateKbps: 400 }], publicUrl: 'http://videos.lan:8080' }));
    const next = await startServer({ dataDir, ...savedSettingsAsOptions(loadSavedSettings(dataDir)).options });
    try {
      const view = (await next.admin.request('GET', '/settings')).body;
      expect(view.running.ladderRungs).toEqual([{ label: '240p', shortSide: 240, videoBitrateKbps: 400 }]);
      expect(view.running.publicUrl).toBe('http://videos.lan:8080');
      expect(view.pendingRestart).toEqual([]);
    } finally {
      await next.close();
    }
  });
});

describe('serving the console (/console)', () => {
  it('serves index.html at /console and any path under it, assets with long caching, and a CSP', async () => {
    for (const p of ['/console', '/console/', '/console/videos/123']) {
      const res = await fetch(`${s.baseUrl}${p}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
      const html = await res.text();
      expect(html).toContain('<div id="root">');
    }
    const html = await (await fetch(`${s.baseUrl}/console`)).text();
    const js = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(`${s.baseUrl}${js}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toMatch(/immutable/);
    expect((await fetch(`${s.baseUrl}/console/assets/missing.js`)).status).toBe(404);
  });

  it('answers 503 with what to run when the console is not built', async () => {
    const bare = express().use(consoleRouter({ distDir: tempDataDir('vop-nodist-') }));
    const server = bare.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/console`);
      expect(res.status).toBe(503);
      expect(await res.text()).toBe('console not built: run npm run build:console\n');
    } finally {
      server.close();
    }
  });
});
