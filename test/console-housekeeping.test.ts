import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from './helpers/browser.js';
import { ensureConsoleBuilt, logIntoConsole } from './helpers/console.js';
import { waitForIngest } from './helpers/ingest.js';
import { startServer, type TestServer } from './helpers/server.js';

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
});
