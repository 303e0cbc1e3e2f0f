/**
 * A video's page shows the rest of its ladder as it goes, pushed by the server (no reload): while
 * it waits, "Playable, 180p; ladder 1 of 2"; once it gave up, why, with a retry of its job; once
 * it landed, nothing more, and the new rendition listed. The transcode monitor tells first
 * renditions and ladders apart in each row. Real server, real ffmpeg (TINY_PROCESSING: a 320x180
 * clip copied as 180p, 120p from the ladder), real Chromium.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobType } from '../../server/core/jobTypes.js';
import { launchBrowser } from '../helpers/browser.js';
import { makeClip } from '../helpers/clips.js';
import type { SpecClient } from '../helpers/client.js';
import { ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { TINY_PROCESSING, placeSource } from '../helpers/processing.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let client: SpecClient;
let clip: string;
/** While true, every ladder job is queued an hour ahead, so the page can be looked at before it runs. */
let holdLadders = true;

beforeAll(async () => {
  [s, browser, clip] = await Promise.all([startServer({ processing: TINY_PROCESSING }), launchBrowser(), makeClip({ seconds: 1, width: 320, height: 180 }), ensureConsoleBuilt()]);
  client = await s.newApp('Ladder page site');
  // The scheduler queues ladders through this same queue (TranscodeScheduler.ensureLadder).
  const jobs = s.vop.jobs;
  const enqueue = jobs.enqueue.bind(jobs);
  jobs.enqueue = ((type: JobType, payload: never, o: { runAfter?: number } = {}) =>
    enqueue(type, payload, type === 'ladder' && holdLadders ? { ...o, runAfter: Date.now() + 3_600_000 } : o)) as typeof jobs.enqueue;
  ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US' });
  page = await ctx.newPage();
  await logIntoConsole(page, s.baseUrl);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe("a video's page while its ladder grows", () => {
  it('says how far the ladder is, then why it failed with a retry, then nothing once it landed, each pushed live', async () => {
    const videoId = await client.register({ VideoTitle: 'Ladder on the page' });
    await placeSource(s.vop, videoId, clip);
    expect(await waitForStatus(s.vop, videoId, [1], { timeoutMs: 30_000, firstRendition: true })).toBe(1);
    const jobId = await waitUntil('the ladder job', async () => (await s.admin.request('GET', `/videos/${videoId}`)).body.ladder.job?.id as string | undefined);

    await page.goto(`${s.baseUrl}/console/videos/${videoId}`);
    const line = page.getByTestId('ladder');
    await expect.poll(() => line.textContent()).toBe('Playable, 180p; ladder 1 of 2 · waiting for its turn');
    expect(await page.locator('tr[data-rendition]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-rendition')))).toEqual(['180p']);

    // Cancelled elsewhere (the monitor, another console): this page hears it and says so.
    expect((await s.admin.request('POST', `/jobs/${jobId}/cancel`)).status).toBe(200);
    await expect.poll(() => line.textContent()).toContain('Playable, 180p; ladder failed: cancelled');
    expect(await line.getAttribute('data-ladder')).toBe('failed');

    // The retry offered there runs the ladder; when it lands the line goes and 120p is listed.
    holdLadders = false;
    await line.getByRole('button', { name: 'Retry the ladder' }).click();
    await expect.poll(() => page.locator('tr[data-rendition]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-rendition'))), { timeout: 30_000 }).toEqual(['180p', '120p']);
    await expect.poll(() => line.count()).toBe(0);
    expect((await s.admin.request('GET', `/jobs/${jobId}`)).body.state).toBe('succeeded');
  }, 90_000);

  it('the transcode monitor marks each job as a first rendition or the rest of a ladder', async () => {
    await page.goto(`${s.baseUrl}/console/transcode`);
    await page.getByRole('heading', { level: 1, name: 'Transcode monitor' }).waitFor();
    const kinds = page.locator('[data-job] [data-kind]');
    await expect.poll(() => kinds.evaluateAll((tags) => tags.map((t) => `${t.getAttribute('data-kind')}: ${t.textContent}`).sort())).toEqual(['ladder: rest of ladder', 'transcode: first rendition']);
    await expect.poll(() => page.getByTestId('ladder-help').textContent()).toMatch(/^Rest of ladders: 1 at once \(0 running\)/);
  }, 30_000);

  it("an application's page turns on and off that its videos wait for every rendition", async () => {
    await page.goto(`${s.baseUrl}/console/apps/${client.appId}`);
    const box = page.getByRole('checkbox', { name: /Only once every rendition is made/ });
    expect(await box.isChecked()).toBe(false);
    await box.click();
    await expect.poll(async () => (await s.admin.request('GET', `/apps/${client.appId}`)).body.wholeLadderFirst).toBe(true);
    await expect.poll(() => box.isChecked()).toBe(true);
    await box.click();
    await expect.poll(async () => (await s.admin.request('GET', `/apps/${client.appId}`)).body.wholeLadderFirst).toBe(false);
  }, 30_000);
});
