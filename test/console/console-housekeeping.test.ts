import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { resolveOptions } from '../../server/config.js';
import { DEFAULT_HOUSEKEEPING_OPTIONS } from '../../server/services/housekeepingOptions.js';
import { savedSettingsAsOptions } from '../../server/settings/consoleSettings.js';
import { launchBrowser } from '../helpers/browser.js';
import { ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { makeClip } from '../helpers/clips.js';
import { multipartUpload, tokenMetadata, tusCreate, tusHead, tusMetadata, tusPatch, waitForIngest } from '../helpers/ingest.js';
import { waitForStatus } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

/**
 * Issue 13, item 4, the console's housekeeping: bulk delete and retry on the videos list, over the
 * admin API and in Chromium. Real server on a port, real data directory.
 */

let missing: http.Server;
let missingBase: string;
beforeAll(async () => {
  // A pulled source that is not there: the download fails for good at once (status 4).
  missing = http.createServer((_req, res) => res.writeHead(404).end('no such file'));
  await new Promise<void>((r) => missing.listen(0, '127.0.0.1', r));
  missingBase = `http://127.0.0.1:${(missing.address() as AddressInfo).port}`;
});
afterAll(async () => {
  missing.closeAllConnections();
  await new Promise((r) => missing.close(r));
});

const servers: TestServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});
async function boot(extra: Parameters<typeof startServer>[0] = {}) {
  const s = await startServer({ ingest: { pull: { allow: ['127.0.0.0/8'] } }, ...extra });
  servers.push(s);
  return s;
}

describe('bulk actions on videos (POST /admin/api/videos/bulk)', () => {
  it('deletes each named video on its own and reports each one, refusals with the catalogue’s code', async () => {
    const s = await boot();
    const app = await s.newApp();
    const [v1, v2] = [await app.register({ VideoTitle: 'one' }), await app.register({ VideoTitle: 'two' })];
    const unknown = '0123456789abcdef0123456789abcdef';
    const r = await s.admin.request('POST', '/videos/bulk', { action: 'delete', ids: [v1, v2.toUpperCase(), 'not an id', unknown, v1] });
    expect(r.status).toBe(200);
    // Each id once, in the order given (case folded as the single calls fold it).
    expect(r.body.results.map((x: { id: string }) => x.id)).toEqual([v1, v2, 'not an id', unknown]);
    expect(r.body.results[0]).toMatchObject({ ok: true, video: { id: v1, status: 0 } });
    expect(r.body.results[1]).toMatchObject({ ok: true, video: { id: v2, status: 0 } });
    expect(r.body.results[2]).toEqual({ id: 'not an id', ok: false, error: { code: '301', message: 'Video Not Found' } });
    expect(r.body.results[3]).toMatchObject({ ok: false, error: { code: '301' } });
    for (const id of [v1, v2]) expect((await s.vop.stores.videos.get(id))!.status).toBe(0);
  });

  it('retries the failed ones and says why the others were not retried', async () => {
    const s = await boot();
    const app = await s.newApp();
    const failed = await app.register({ SourceFileGetType: 2, SourceFilePath: `${missingBase}/gone.mp4` });
    expect(await waitForIngest(s.vop, failed)).toBe(4);
    const waiting = await app.register({ VideoTitle: 'never uploaded' });
    const r = await s.admin.request('POST', '/videos/bulk', { action: 'retry', ids: [failed, waiting] });
    expect(r.status).toBe(200);
    expect(r.body.results[0]).toMatchObject({ id: failed, ok: true, action: 'download', video: { status: 2 } });
    expect(r.body.results[1]).toMatchObject({ id: waiting, ok: false, error: { code: '303', message: expect.stringContaining('only a video whose download (4) or transcoding (7) failed') } });
  });

  it('refuses an action it does not know, and a list that is empty, too long or not of strings', async () => {
    const s = await boot();
    const ids = Array.from({ length: 101 }, (_, i) => i.toString(16).padStart(32, '0'));
    for (const body of [{ action: 'purge', ids: ['a'] }, { action: 'delete', ids: [] }, { action: 'delete', ids }, { action: 'delete', ids: [1] }, { action: 'delete' }]) {
      const r = await s.admin.request('POST', '/videos/bulk', body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('201');
    }
    expect((await s.admin.request('POST', '/videos/bulk', { action: 'delete', ids: ids.slice(0, 100) })).status).toBe(200);
  });
});

/** Bytes and files under one area of the media root on disk, counted with fs (what the server must count through its store). */
function onDisk(dataDir: string, area: string): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  const walk = (dir: string) => {
    for (const e of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
      if (e.name.startsWith('.')) continue;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) (bytes += fs.statSync(p).size), files++;
    }
  };
  walk(path.join(dataDir, 'media', area));
  return { bytes, files };
}

describe('housekeeping (GET /admin/api/housekeeping)', () => {
  it('counts the storage vop uses by kind, sources, MP4, HLS, covers, and keeps the count a while', async () => {
    const s = await boot({ housekeeping: { storageCacheMs: 60_000 } });
    const app = await s.newApp();
    const clip = fs.readFileSync(await makeClip({ seconds: 1 }));
    const id = await app.register({ VideoTitle: 'counted' });
    expect(await multipartUpload(app, id, clip)).toBe('1');
    await waitForStatus(s.vop, id, [1], { timeoutMs: 60_000 });
    const first = (await s.admin.request('GET', '/housekeeping')).body;
    for (const area of ['sources', 'play', 'hls', 'covers']) {
      expect(first.storage.areas[area], area).toEqual(onDisk(s.dataDir, area));
      expect(first.storage.areas[area].bytes, area).toBeGreaterThan(0);
    }
    expect(first.storage.totalBytes).toBe(Object.values(first.storage.areas as Record<string, { bytes: number }>).reduce((n, a) => n + a.bytes, 0));
    // The same count is served again within the cache time, even after a delete.
    await s.admin.request('DELETE', `/videos/${id}`);
    const again = (await s.admin.request('GET', '/housekeeping')).body;
    expect(again.storage).toEqual(first.storage);
  });

  it('deletes registrations never uploaded once they are older than the setting, leaves the others, and tells the console', async () => {
    // 0.00002 days is 1.7 s: the sweep (every 100 ms here) deletes a registration that old.
    const s = await boot({ housekeeping: { expireUnuploadedDays: 0.00002, expirySweepMs: 100 } });
    const app = await s.newApp();
    const idle = await app.register({ VideoTitle: 'never uploaded' });
    // An upload under way keeps its registration, however old.
    const busy = await app.register({ VideoTitle: 'uploading' });
    const created = await tusCreate(s.baseUrl, 1000, { 'Upload-Metadata': tusMetadata(tokenMetadata(app, busy)) });
    expect(created.res.status).toBe(201);
    expect((await tusPatch(created.url!, 0, Buffer.alloc(100))).status).toBe(204);
    const view = (await s.admin.request('GET', '/housekeeping')).body.registrations;
    expect(view).toMatchObject({ days: 0.00002, waiting: 2 });
    const registered = (await s.vop.stores.videos.get(idle))!.createdAt;
    expect(Date.parse(view.nextExpiresAt)).toBe(registered + Math.round(0.00002 * 86_400_000));

    await waitForStatus(s.vop, idle, [0], { timeoutMs: 20_000 });
    const history = await s.vop.stores.videos.statusHistory(idle);
    expect(history.at(-1)).toMatchObject({ from: 8, to: 0, reason: 'expired: no file 0.00002 days after registration' });
    expect((await app.get('/Api/Video/Get', { Id: idle })).body.VideoModel.Status).toBe(0);
    expect((await s.vop.stores.videos.get(busy))!.status).toBe(8);
    expect((await s.admin.request('GET', '/housekeeping')).body.registrations).toMatchObject({ waiting: 1 });
  });

  it('says registrations never expire with 0 days', async () => {
    const s = await boot({ housekeeping: { expireUnuploadedDays: 0 } });
    const app = await s.newApp();
    await app.register({ VideoTitle: 'kept' });
    expect((await s.admin.request('GET', '/housekeeping')).body.registrations).toEqual({ days: 0, waiting: 1, nextExpiresAt: null });
  });

  it('keeps registrations 7 days by default; the console sets whole days, at once, and refuses others', async () => {
    expect(DEFAULT_HOUSEKEEPING_OPTIONS.expireUnuploadedDays).toBe(7);
    const s = await boot();
    expect((await s.admin.request('GET', '/settings')).body.running.expireUnuploadedDays).toBe(7);
    const put = await s.admin.request('PUT', '/settings', { expireUnuploadedDays: 30 });
    expect(put.status).toBe(200);
    expect(put.body.applied).toEqual(['expireUnuploadedDays']);
    expect(put.body.running.expireUnuploadedDays).toBe(30);
    expect((await s.admin.request('GET', '/housekeeping')).body.registrations.days).toBe(30);
    for (const bad of [-1, 1.5, 'ten', 40_000]) {
      const r = await s.admin.request('PUT', '/settings', { expireUnuploadedDays: bad });
      expect(r.status, String(bad)).toBe(400);
      expect(r.body.error.message).toContain('Registrations never uploaded expire after (days)');
    }
    const saved = (await s.admin.request('GET', '/settings')).body.saved;
    expect(resolveOptions({ dataDir: s.dataDir, ...savedSettingsAsOptions(saved).options }).housekeeping.expireUnuploadedDays).toBe(30);
    expect(() => resolveOptions({ dataDir: s.dataDir, housekeeping: { expireUnuploadedDays: -1 } })).toThrow(/housekeeping.expireUnuploadedDays/);
  });

  it('marks an upload with no byte for a while as stalled, and an admin can cancel it', async () => {
    // 0.001 minutes is 60 ms without a byte.
    const s = await boot({ housekeeping: { stalledUploadMinutes: 0.001 } });
    const app = await s.newApp();
    const id = await app.register({ VideoTitle: 'stuck' });
    const created = await tusCreate(s.baseUrl, 1000, { 'Upload-Metadata': tusMetadata(tokenMetadata(app, id)) });
    expect((await tusPatch(created.url!, 0, Buffer.alloc(400))).status).toBe(204);
    const uploadId = created.url!.split('/').pop()!;
    const stalled = async () => (await s.admin.request('GET', '/housekeeping')).body.stalledUploads;
    let seen = await stalled();
    while (seen.uploads.length === 0) seen = await stalled();
    expect(seen.minutes).toBe(0.001);
    expect(seen.uploads).toEqual([{ id: uploadId, videoId: id, title: 'stuck', filename: 'clip.mp4', size: 1000, offset: 400, percent: 40, lastWriteAt: expect.any(String) }]);

    expect((await s.admin.request('DELETE', `/uploads/${uploadId}`)).status).toBe(200);
    expect((await tusHead(created.url!)).status).toBe(404);
    expect((await stalled()).uploads).toEqual([]);
    expect((await s.vop.stores.videos.get(id))!.status).toBe(8);
    const again = await s.admin.request('DELETE', `/uploads/${uploadId}`);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('404');
  });
});

describe('the videos list in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    await ensureConsoleBuilt();
    browser = await launchBrowser();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('finds videos by uploader, tags or description, and deletes the selected ones after asking', async () => {
    const s = await boot();
    const app = await s.newApp();
    const keep = await app.register({ VideoTitle: 'Keep me', CreateUser: 'teacher-wang', Tags: 'math' });
    const a = await app.register({ VideoTitle: 'First', CreateUser: 'teacher-li', Description: 'old lecture' });
    const b = await app.register({ VideoTitle: 'Second', CreateUser: 'teacher-li' });
    const page = await browser.newPage({ locale: 'en-US' });
    try {
      await logIntoConsole(page, s.baseUrl);
      await page.goto(`${s.baseUrl}/console/videos`);
      await page.getByLabel('Title, uploader, tags or description contains').fill('LI');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByText('2 videos;').waitFor();
      await page.getByLabel('Select every video on this page').check();
      await page.getByText('2 videos selected').waitFor();
      await page.getByRole('button', { name: 'Delete selected…' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete 2 videos?' });
      await dialog.getByRole('button', { name: 'Delete' }).click();
      await page.getByText('Deleted 2 of 2.').waitFor();
      for (const id of [a, b]) expect((await s.vop.stores.videos.get(id))!.status).toBe(0);
      expect((await s.vop.stores.videos.get(keep))!.status).toBe(8);
      // The search looks in tags and descriptions too.
      await page.getByLabel('Title, uploader, tags or description contains').fill('lecture');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByText('1 video;').waitFor();
      await page.getByLabel('Title, uploader, tags or description contains').fill('math');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.locator(`tr[data-video="${keep}"]`).waitFor();
    } finally {
      await page.close();
    }
  });
  it('shows the storage by kind, the registrations waiting for a file, and cancels a stalled upload after asking', async () => {
    const s = await boot({ housekeeping: { stalledUploadMinutes: 0.001 } });
    const app = await s.newApp();
    const waiting = await app.register({ VideoTitle: 'Waiting for its file' });
    const stuck = await app.register({ VideoTitle: 'Stuck upload' });
    const created = await tusCreate(s.baseUrl, 1000, { 'Upload-Metadata': tusMetadata(tokenMetadata(app, stuck)) });
    expect((await tusPatch(created.url!, 0, Buffer.alloc(250))).status).toBe(204);
    // Stalled as the server counts it before the page loads (60 ms without a byte).
    while ((await s.admin.request('GET', '/housekeeping')).body.stalledUploads.uploads.length === 0);
    const page = await browser.newPage({ locale: 'en-US' });
    try {
      await logIntoConsole(page, s.baseUrl);
      const storage = page.getByRole('region', { name: 'Storage used by vop' });
      // The upload's bytes count as uploads in progress, as many files as the folder holds for it.
      const incoming = onDisk(s.dataDir, 'incoming').files;
      expect(incoming).toBeGreaterThan(0);
      await storage.locator('tr[data-area="incoming"]').getByText(incoming === 1 ? '1 file' : `${incoming} files`).waitFor();
      await page.getByRole('link', { name: '2 videos are registered but have no file yet (status 8).' }).waitFor();
      await page.getByText('Each is deleted 7 days after it was registered (set in Settings).').waitFor();
      const stalled = page.getByRole('region', { name: 'Stalled uploads' });
      await stalled.getByText(/^Stuck upload: 25%, last byte /).waitFor();
      await stalled.getByRole('button', { name: 'Cancel the upload of Stuck upload' }).click();
      await page.getByRole('dialog', { name: 'Cancel this upload?' }).getByRole('button', { name: 'Cancel upload' }).click();
      await page.getByText('The upload of Stuck upload was cancelled.').waitFor();
      await stalled.getByText('No upload is stalled.').waitFor();
      expect((await tusHead(created.url!)).status).toBe(404);
      for (const id of [waiting, stuck]) expect((await s.vop.stores.videos.get(id))!.status).toBe(8);
    } finally {
      await page.close();
    }
  });
});
