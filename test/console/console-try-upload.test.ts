/**
 * The console's "Try the upload widget" page, per application: the admin API registers a video
 * for the application as its server would (uploader "console") and hands the widget's values,
 * the token made with the application's secret on the server; in real Chromium the page opens
 * the real widget in both forms (the overlay over the console, the window as a pop-up), a
 * generated clip is uploaded through it, and the page follows the video to playable.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { makeClip } from '../helpers/clips.js';
import { specToken, type SpecClient } from '../helpers/client.js';
import { CookieClient, ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { TINY_PROCESSING } from '../helpers/processing.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let app: SpecClient;
let clip: string;

beforeAll(async () => {
  [s, browser, clip] = await Promise.all([startServer({ processing: TINY_PROCESSING }), launchBrowser(), makeClip({ seconds: 2, width: 320, height: 180 }), ensureConsoleBuilt()]);
  app = await s.newApp('Widget try-out site');
  ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
  page = await ctx.newPage();
  await logIntoConsole(page, s.baseUrl);
}, 120_000);

afterAll(async () => {
  await ctx?.close();
  await browser?.close();
  await s?.close();
});

describe('POST /admin/api/apps/:appId/try-upload', () => {
  it('registers a video as the spec API would and answers the widget values, the token made with the secret', async () => {
    const r = await s.admin.request('POST', `/apps/${app.appId}/try-upload`);
    expect(r.status).toBe(200);
    const v = r.body;
    expect(v.appId).toBe(app.appId);
    expect(v.timestamp).toMatch(/^\d+$/);
    expect(Math.abs(Number(v.timestamp) - Date.now() / 1000)).toBeLessThan(5);
    // The spec's token (MD5 of Timestamp + AppSecret), and never the secret itself.
    expect(v.token).toBe(specToken(v.timestamp, app.secret));
    expect(JSON.stringify(r.body)).not.toContain(app.secret);
    // It lives as long as a timestamp is accepted: 600 s.
    expect(Date.parse(v.expiresAt) / 1000 - Number(v.timestamp)).toBe(600);
    expect(v.scripts).toEqual({ window: `${s.baseUrl}/widget/initUploadWidget.js`, overlay: `${s.baseUrl}/widget/initUploadABoxWidget.js` });

    // The application sees it as one of its own, waiting for its file.
    const got = await app.get('/Api/Video/Get', { Id: v.videoId });
    expect(got.body.AuthMsg.ResultCode).toBe('1');
    expect(got.body.VideoModel).toMatchObject({ Status: 8, CreateUser: 'console' });
    expect(got.body.VideoModel.VideoTitle).toMatch(/^Try-out \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);

    // With its id: fresh values for the same video, nothing registered.
    const before = (await s.admin.request('GET', `/videos?appId=${app.appId}`)).body.total;
    const again = await s.admin.request('POST', `/apps/${app.appId}/try-upload`, { videoId: v.videoId });
    expect(again.status).toBe(200);
    expect(again.body.videoId).toBe(v.videoId);
    expect(again.body.token).toBe(specToken(again.body.timestamp, app.secret));
    expect((await s.admin.request('GET', `/videos?appId=${app.appId}`)).body.total).toBe(before);
  });

  it('is the admin’s only, refuses unknown fields, other applications’ videos and a disabled application', async () => {
    const anon = await fetch(`${s.baseUrl}/admin/api/apps/${app.appId}/try-upload`, { method: 'POST' });
    expect(anon.status).toBe(401);
    // The console's own way in: the cookie and the session's secret.
    const cookie = new CookieClient(s.baseUrl);
    expect((await cookie.login(ADMIN_TOKEN)).status).toBe(200);
    expect((await cookie.json('POST', `/apps/${app.appId}/try-upload`)).status).toBe(200);

    const typo = await s.admin.request('POST', `/apps/${app.appId}/try-upload`, { videoID: 'x' });
    expect(typo.status).toBe(400);
    expect(typo.body.error.code).toBe('201');

    const other = await s.newApp('Another site');
    const theirs = await other.register({ VideoTitle: 'Not yours' });
    const cross = await s.admin.request('POST', `/apps/${app.appId}/try-upload`, { videoId: theirs });
    expect(cross.status).toBe(404);
    expect(cross.body.error.code).toBe('301');

    expect((await s.admin.request('POST', '/apps/000000000000000000000000/try-upload')).body.error.code).toBe('101');
    await s.admin.request('PATCH', `/apps/${other.appId}`, { disabled: true });
    const disabled = await s.admin.request('POST', `/apps/${other.appId}/try-upload`);
    expect(disabled.status).toBe(403);
    expect(disabled.body.error.code).toBe('102');
  });
});

/** Registers a try-out video on the page; resolves with its id once the widget can be opened. */
async function registerOnPage(): Promise<string> {
  // Read without waiting: before the first registration there is no such section, and a
  // locator's getAttribute would wait its whole timeout (30 s) for one to appear.
  const before = await page.getByTestId('try-video').evaluateAll((els) => els[0]?.getAttribute('data-video') ?? null);
  await page.getByRole('button', { name: /^Register (a try-out video|another)$/ }).click();
  await expect.poll(() => page.getByTestId('try-video').getAttribute('data-video').catch(() => null), { timeout: 10_000 }).not.toBe(before);
  await expect.poll(() => page.getByTestId('open-widget').isEnabled(), { timeout: 10_000 }).toBe(true);
  return (await page.getByTestId('try-video').getAttribute('data-video'))!;
}

/** Waits until the page says the try-out video plays, and checks the statuses it showed on the way. */
async function seesItPlay(videoId: string): Promise<void> {
  await page.getByTestId('try-playable').waitFor({ timeout: 90_000 });
  await expect.poll(() => page.getByTestId('try-history').locator('li').evaluateAll((li) => li.map((l) => Number(l.getAttribute('data-to'))))).toEqual(expect.arrayContaining([5, 1]));
  expect(await page.getByTestId('try-status').textContent()).toMatch(/^1 · /);
  expect(await page.getByTestId('try-outcomes').textContent()).toContain(`onSuccess: the file of ${videoId} is stored`);
  const got = await app.get('/Api/Video/Get', { Id: videoId });
  expect(got.body.VideoModel.Status).toBe(1);
}

describe('the Try the upload widget page', () => {
  it('is reached from the application’s page, and uploads a clip through the overlay to playable', async () => {
    await page.goto(`${s.baseUrl}/console/apps/${app.appId}`);
    await page.getByTestId('try-upload-link').click();
    await page.getByRole('heading', { level: 1, name: 'Try the upload widget' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/console/apps/${app.appId}/try-upload`);
    expect(await page.title()).toBe('Try the upload widget · vop console');

    const videoId = await registerOnPage();
    await page.getByLabel('Overlay: a layer over this page').check();
    await page.getByTestId('open-widget').click();
    const frameEl = await page.waitForSelector('[data-vop-upload-layer] iframe');
    const frame = (await frameEl.contentFrame())!;
    await frame.waitForSelector('#file', { state: 'attached' });
    await frame.setInputFiles('#file', clip);
    await seesItPlay(videoId);
    await page.click('[data-vop-upload-close]');
    expect(await page.$('[data-vop-upload-layer]')).toBeNull();
    // The video's page is one click away.
    await page.getByTestId('try-playable').getByRole('link').click();
    await page.locator('video[data-engine]').waitFor({ timeout: 15_000 });
  }, 150_000);

  it('uploads through the window form, a pop-up, to playable', async () => {
    await page.goto(`${s.baseUrl}/console/apps/${app.appId}/try-upload`);
    const videoId = await registerOnPage();
    await page.getByLabel('Window: a pop-up').check();
    const [popup] = await Promise.all([page.waitForEvent('popup'), page.getByTestId('open-widget').click()]);
    await popup.waitForLoadState('domcontentloaded');
    expect(new URL(popup.url()).origin).toBe(s.baseUrl);
    await popup.setInputFiles('#file', clip);
    await seesItPlay(videoId);
    if (!popup.isClosed()) await popup.close();
  }, 150_000);
});
