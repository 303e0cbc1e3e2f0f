/**
 * The console in real Chromium against /console of a headless server (issue 5, "How it is
 * shown"): a wrong admin token is refused, the right one logs in; an application is created and
 * its secret shown once; a video is registered with that secret and uploaded through the widget
 * while the Uploads page shows it arriving; its progress bar moves in the transcode monitor
 * (pushed by the server); the result plays on its page; a test callback shows in the delivery
 * log. Each page is photographed at 1280x800, and once at 400 px wide (docs/screenshots/ with
 * `npm run screenshots`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, startHostServer, type HostServer } from '../helpers/browser.js';
import { makeClip } from '../helpers/clips.js';
import { SpecClient } from '../helpers/client.js';
import { ensureConsoleBuilt } from '../helpers/console.js';
import { TINY_PROCESSING } from '../helpers/processing.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { hostPageHtml, waitForHostEvents, widgetOptions } from '../helpers/widgetHost.js';

/** Upload page chunks small enough, and each PATCH held long enough, to watch the upload move. */
const CHUNK = 128 * 1024;
const PATCH_DELAY_MS = 250;
const TITLE = 'Sunset over the bay';

let s: TestServer;
let host: HostServer;
let browser: Browser;
let clip: string;
let ctx: BrowserContext;
let page: Page;
const consoleErrors: string[] = [];
/** Failed answers the page got, as "METHOD path status". */
const failedRequests: string[] = [];

/** The application's callback receiver: records each request, answers 204. */
const received: Array<{ headers: http.IncomingHttpHeaders; body: URLSearchParams }> = [];
let receiver: http.Server;
let receiverUrl: string;

// Shared between the steps, in order.
let appId = '';
let secret = '';
let videoId = '';

async function shot(name: string, fullPage = false): Promise<void> {
  await screenshot(page, `console-${name}.png`, { fullPage, animations: 'disabled' });
}

/** Goes to a page through the side menu, as a person would, and waits for its heading. */
async function openFromMenu(label: string, heading = label): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: label }).click();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

/** The aria-valuenow of the first progress bar under `selector`, or undefined if there is none. */
function progressOf(selector: string): Promise<number | undefined> {
  return page.evaluate((sel) => {
    const v = document.querySelector(`${sel} [role=progressbar]`)?.getAttribute('aria-valuenow');
    return v === null || v === undefined ? undefined : Number(v);
  }, selector);
}

beforeAll(async () => {
  [s, host, browser, clip] = await Promise.all([
    // A slower preset than the other tests: the transcode must last long enough to watch.
    startServer({ processing: { ...TINY_PROCESSING, preset: 'medium' } }),
    startHostServer(),
    launchBrowser(),
    makeClip({ seconds: 10, width: 640, height: 360, name: `sunset-over-the-bay-${process.pid}.mp4` }),
    ensureConsoleBuilt(),
  ]);
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      received.push({ headers: req.headers, body: new URLSearchParams(body) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/vop/callback`;
  ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.baseUrl });
  page = await ctx.newPage();
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  page.on('response', (r) => r.status() >= 400 && failedRequests.push(`${r.request().method()} ${new URL(r.url()).pathname} ${r.status()}`));
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await host?.close();
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
  await s?.close();
});

describe('the console in Chromium', () => {
  it('refuses a wrong admin token with a readable message, then logs in with the right one (keyboard only)', async () => {
    await page.goto(`${s.baseUrl}/console`);
    const token = page.getByLabel('Admin token');
    await token.fill('not-the-admin-token-0000');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Admin Token Required: that is not the admin token');
    await shot('login');

    await token.fill(ADMIN_TOKEN);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const cookie = (await ctx.cookies()).find((c) => c.name === 'vop_console')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookie.value).not.toBe(ADMIN_TOKEN);

    // Logged in once: a reload does not ask again.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  });

  it('shows the overview: API and widget addresses with copy buttons, videos by status, disk, ffmpeg', async () => {
    const port = new URL(s.baseUrl).port;
    const api = `http://127.0.0.1:${port}/Api/Video`;
    await page.getByText(api, { exact: true }).waitFor();
    await page.getByText(`http://127.0.0.1:${port}/widget/initUploadWidget.js`, { exact: true }).waitFor();
    await page.getByRole('heading', { name: 'ffmpeg in use' }).waitFor();
    await expect.poll(() => page.locator('.facts').first().textContent()).toMatch(/Used.*Free.*Size/);

    await page.getByRole('button', { name: 'Copy This machine API address' }).click();
    await page.getByText('Copied').first().waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(api);
  });

  it('creates an application and shows its secret once', async () => {
    await openFromMenu('Applications');
    await page.getByLabel('Name').fill('Video site');
    // Plain http off the LAN is warned about as it is typed; on this machine (the receiver) it is not.
    await page.getByLabel('Callback address (optional)').fill('http://callbacks.site.example/vop');
    expect(await page.getByTestId('callback-warning').textContent()).toMatch(/plain http to a host outside your network/);
    await page.getByLabel('Callback address (optional)').fill(receiverUrl);
    expect(await page.getByTestId('callback-warning').count()).toBe(0);
    await page.getByRole('button', { name: 'Create' }).click();
    const panel = page.locator('.secret');
    await panel.getByText('Copy the secret now: it is shown only once.').waitFor();
    appId = (await panel.locator('code').nth(0).textContent())!;
    secret = (await page.getByTestId('app-secret').locator('code').textContent())!;
    expect(appId).toMatch(/^[0-9a-f]{24}$/);
    expect(secret).toMatch(/^[0-9a-f]{40}$/);
    await page.getByRole('link', { name: 'Video site' }).waitFor();
    await shot('applications');

    await page.getByRole('button', { name: 'I have copied it' }).click();
    await page.reload();
    await page.getByRole('link', { name: 'Video site' }).waitFor();
    expect(await page.content()).not.toContain(secret);
  });

  it('shows a widget upload arriving, then the transcode progress bar moving, pushed by the server', async () => {
    // The application registers a video with the secret the console showed (spec 4.2).
    const client = new SpecClient(s.baseUrl, appId, secret);
    videoId = await client.register({ VideoTitle: TITLE, createUser: 'maria' });
    await openFromMenu('Uploads and downloads');

    // The user uploads it through the window widget from the application's page.
    const hostCtx = await browser.newContext({ viewport: { width: 1000, height: 700 } });
    try {
      await hostCtx.route('**/widget/upload?*', (route) => route.continue({ url: `${route.request().url()}&chunkSize=${CHUNK}` }));
      await hostCtx.route('**/upload/tus/**', async (route) => {
        // Time is the subject: a slow link, so that the upload is seen moving.
        if (route.request().method() === 'PATCH') await new Promise((r) => setTimeout(r, PATCH_DELAY_MS));
        await route.continue();
      });
      const hostPage = await hostCtx.newPage();
      host.page('/app.html', hostPageHtml(s.baseUrl, 'initUploadWidget.js', widgetOptions(client, videoId)));
      await hostPage.goto(`${host.origin}/app.html`);
      const [popup] = await Promise.all([hostPage.waitForEvent('popup'), hostPage.click('#open')]);
      await popup.waitForSelector('body[data-state="idle"]', { state: 'attached' }); // the page's script listens from here
      await popup.setInputFiles('#file', clip);

      // The Uploads page: the upload's bar moves (the server pushes the list every second).
      const upload = `[data-upload]`;
      const seenUpload = new Set<number>();
      await waitUntil(
        'two upload progress values',
        async () => {
          const v = await progressOf(upload);
          if (v !== undefined && v > 0 && v < 100) seenUpload.add(v);
          if (seenUpload.size < 2) return undefined;
          await shot('uploads');
          return true;
        },
        { timeoutMs: 60_000, pollMs: 100 },
      );
      expect(await page.locator(upload).textContent()).toContain(TITLE);

      // The transcode monitor, opened while the upload finishes.
      await openFromMenu('Transcode monitor');
      expect(await waitForHostEvents(hostPage)).toEqual([{ type: 'success', value: videoId }]);
    } finally {
      await hostCtx.close();
    }

    const job = `[data-video="${videoId}"]`;
    const seen = new Set<number>();
    let photographed = false;
    await waitUntil(
      'the transcode to finish in the monitor',
      async () => {
        const v = await progressOf(job);
        if (v !== undefined) seen.add(v);
        if (!photographed && v !== undefined && v > 0 && v < 90) {
          photographed = true;
          await shot('transcode');
        }
        const done = await page.locator('tr', { hasText: TITLE }).filter({ hasText: 'succeeded' }).count();
        return done > 0 ? true : undefined;
      },
      { timeoutMs: 90_000, pollMs: 50 },
    );
    // The bar took several values on the way (progress pushed, not one jump to the end).
    expect([...seen].length, `progress values seen: ${[...seen].join(', ')}`).toBeGreaterThanOrEqual(2);
    expect(Math.max(...seen)).toBeGreaterThan(0);
    if (!photographed) await shot('transcode');
    expect(await waitForStatus(s.vop, videoId, [1])).toBe(1);
  });

  it('plays the video on its page, a rendition chosen from the quality menu, with covers and status history', async () => {
    await page.getByRole('link', { name: TITLE }).first().click();
    await page.getByRole('heading', { level: 1, name: TITLE }).waitFor();
    // One player (test/console/console-player.test.ts tries its HLS, hls.js, embed and share): here, the 180p MP4.
    await page.getByLabel('Quality').selectOption('180p');
    await page.locator('figure.player video[data-engine="mp4"]').waitFor();
    expect(await page.locator('video').count()).toBe(1);
    const played = await page.evaluate(async () => {
      const v = document.querySelector<HTMLVideoElement>('figure.player video')!;
      v.muted = true;
      await v.play();
      const until = Date.now() + 15_000;
      while (v.currentTime < 0.3 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      v.pause();
      return { readyState: v.readyState, currentTime: v.currentTime, width: v.videoWidth, height: v.videoHeight };
    });
    expect(played.readyState).toBeGreaterThanOrEqual(2);
    expect(played.currentTime).toBeGreaterThan(0.2);
    expect(played).toMatchObject({ width: 320, height: 180 });
    await page.getByRole('img', { name: `Cover of ${TITLE}` }).waitFor();
    await expect.poll(() => page.locator('table.history').textContent()).toMatch(/6 · Transcoding/);
    expect(await page.locator('table.history tbody tr').last().textContent()).toContain('1 · Normal (playable)');
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot('video', true);
  });

  it('finds the video by title and status on the videos page', async () => {
    // Two more videos, for company: one waiting for its file, one whose pull failed (404).
    const client = new SpecClient(s.baseUrl, appId, secret);
    await client.register({ VideoTitle: 'Team meeting, March', createUser: 'li' });
    const pulled = await client.register({ VideoTitle: 'Conference keynote', createUser: 'maria', SourceFileGetType: 2, SourceFilePath: `${host.origin}/missing/keynote.mp4` });
    await waitForStatus(s.vop, pulled, [4]);
    await openFromMenu('Videos');
    await expect.poll(() => page.locator('table.videos tbody tr').count()).toBe(3);
    await page.locator('#f-q').fill('sunset');
    await page.getByLabel('Status').selectOption('1');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.locator('table.videos tbody tr').count()).toBe(1);
    expect(await page.locator('table.videos tbody tr').textContent()).toContain(TITLE);
    expect(new URL(page.url()).search).toBe('?q=sunset&status=1');
    await page.locator('#f-q').fill('no such title');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No video matches.').waitFor();
    await page.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => page.locator('table.videos tbody tr').count()).toBe(3);
    await page.mouse.move(0, 0);
    await shot('videos');
  });

  it('counts the videos by status on the overview', async () => {
    await openFromMenu('Overview');
    const row = (name: string) => page.locator('table.compact tbody tr', { hasText: name });
    await expect.poll(() => row('1 · Normal (playable)').locator('td.num').textContent()).toBe('1');
    expect(await row('4 · Download failed').locator('td.num').textContent()).toBe('1');
    expect(await row('8 · Not uploaded').locator('td.num').textContent()).toBe('1');
    await shot('overview');
  });

  it('sends a test callback and shows it in the delivery log, with the status callback and a redelivery', async () => {
    await openFromMenu('Applications');
    await page.getByRole('link', { name: 'Video site' }).click();
    await page.getByRole('heading', { level: 1, name: 'Video site' }).waitFor();
    await page.getByRole('button', { name: 'Send a test callback' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/^Test callback delivered \(HTTP 204, \d+ ms\)\.$/);
    const testRow = page.locator('table.deliveries tbody tr', { hasText: 'test' });
    await expect.poll(() => testRow.textContent()).toMatch(/delivered.*HTTP 204/);
    expect(received.find((r) => r.body.get('Test') === '1')?.body.get('AppId')).toBe(appId);

    // The video's status callback (1) is in the log too once delivered.
    const statusRow = page.locator('table.deliveries tbody tr', { hasText: 'status 1' });
    await waitUntil(
      'the status callback in the log',
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        return (await statusRow.count()) > 0 && /delivered/.test((await statusRow.textContent()) ?? '') ? true : undefined;
      },
      { timeoutMs: 30_000, pollMs: 500 },
    );
    const first = received.find((r) => r.body.get('VideoId') === videoId)!;
    expect(first.body.get('VideoStatus')).toBe('1');

    await statusRow.getByRole('button', { name: /^Redeliver/ }).click();
    await waitUntil('the redelivery', () => (received.filter((r) => r.body.get('VideoId') === videoId).length >= 2 ? true : undefined), { timeoutMs: 30_000 });
    const again = received.filter((r) => r.body.get('VideoId') === videoId)[1]!;
    expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(() => statusRow.textContent()).toMatch(/series 2/);
    await shot('application');
  });

  it('saves settings: a bad value is refused readably, concurrency applies at once', async () => {
    await openFromMenu('Settings');
    await page.getByLabel(/Pull: allowed networks/).fill('10.0.0.0/33');
    await page.getByRole('button', { name: 'Save settings' }).click();
    // Under the field, in words (test/console/console-settings.test.ts tries the focus and the rungs).
    await expect.poll(() => page.locator('.field-error').textContent()).toMatch(/“10\.0\.0\.0\/33” is not a network/);
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/Not saved: Pull: allowed networks/);
    await page.getByRole('button', { name: 'Undo changes' }).click();

    await page.getByLabel(/Transcodes at once/).fill('2');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('Saved. Applied now: Transcodes at once.');
    expect(s.vop.jobs.concurrency('transcode')).toBe(2);
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot('settings');
  });

  it('works in a narrow window: the menu folds and opens from the keyboard, nothing scrolls sideways', async () => {
    await page.setViewportSize({ width: 400, height: 800 });
    await page.getByRole('button', { name: 'Menu' }).focus();
    await page.keyboard.press('Enter');
    expect(await page.getByRole('button', { name: 'Menu' }).getAttribute('aria-expanded')).toBe('true');
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Overview' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.getByRole('heading', { name: 'ffmpeg in use' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(400);
    await shot('narrow');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('shows a test callback that did not get through as a failure, not in the success style', async () => {
    // Nothing listens on port 9 (discard) of loopback: the attempt is refused at once.
    const { appId: failing } = await s.admin.createApp('Unreachable site', 'http://127.0.0.1:9/vop/callback');
    await page.goto(`${s.baseUrl}/console/apps/${failing}`);
    await page.getByRole('heading', { level: 1, name: 'Unreachable site' }).waitFor();
    await page.getByRole('button', { name: 'Send a test callback' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 20_000 }).toMatch(/^Test callback failed: .+\.$/);
    expect(await page.locator('p.notice').count()).toBe(0);
  });

  it('logged no browser error (a CSP violation, a React error) and got no failed answer but the two refusals it asked for', () => {
    expect(failedRequests).toEqual(['POST /admin/api/session 401', 'PUT /admin/api/settings 400']);
    expect(consoleErrors.filter((e) => !/^Failed to load resource: the server responded with a status of (401|400)/.test(e))).toEqual([]);
  });

  it('asks for the token again once the session is gone, and logs out', async () => {
    await ctx.clearCookies(); // as after a server restart or 12 hours
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Videos' }).click();
    await page.getByText('Your session has ended. Enter the admin token again.').waitFor();
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByText('You have logged out.').waitFor();
    expect((await ctx.cookies()).find((c) => c.name === 'vop_console')).toBeUndefined();
  });
});
