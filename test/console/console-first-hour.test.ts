/**
 * The console as a new admin first sees it, in real Chromium: an empty Videos page says there is
 * no video yet and how to get one (a filtered one that nothing matches says so instead); a new
 * application's "any address may call" is advice, not an error; the browser tab's title follows
 * the page and the language; a job that failed for good says it is not retried rather than
 * "attempt 1 of 5"; and the Settings page names the widget's upload kinds in plain words.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { en } from '../../renderer/src/messages/en.js';
import { zhCN } from '../../renderer/src/messages/zh-CN.js';
import { launchBrowser } from '../helpers/browser.js';
import type { SpecClient } from '../helpers/client.js';
import { ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { makeClip } from '../helpers/clips.js';
import { placeSource } from '../helpers/processing.js';
import { waitForStatus } from '../helpers/wait.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let browser: Browser;
let ctx: BrowserContext;
let page: Page;

beforeAll(async () => {
  [s, browser] = await Promise.all([startServer(), launchBrowser(), ensureConsoleBuilt()]);
  ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US' });
  page = await ctx.newPage();
  await logIntoConsole(page, s.baseUrl);
}, 120_000);

afterAll(async () => {
  await ctx?.close();
  await browser?.close();
  await s?.close();
});

describe('the console’s first hour', () => {
  it('an empty Videos page says there is no video yet and how to get one; a filter that matches nothing says so', async () => {
    await page.goto(`${s.baseUrl}/console/videos`);
    const empty = page.getByTestId('no-videos');
    await empty.waitFor();
    expect(await empty.textContent()).toContain(en.videos.noneYet);
    expect(await empty.textContent()).toContain('/Api/Video/Post');
    expect(await page.getByText(en.videos.noMatch).count()).toBe(0);
    await empty.getByRole('link', { name: en.videos.toApplications }).click();
    await page.getByRole('heading', { level: 1, name: en.apps.title }).waitFor();

    await page.goto(`${s.baseUrl}/console/videos?q=nothing-like-this`);
    await page.getByText(en.videos.noMatch).waitFor();
    expect(await page.getByTestId('no-videos').count()).toBe(0);
  });

  it('a new application’s open API is advice, not an error', async () => {
    const app = await s.newApp('Brand new site');
    await page.goto(`${s.baseUrl}/console/apps/${app.appId}`);
    const open = page.getByTestId('networks-open');
    await open.waitFor();
    expect(await open.textContent()).toBe(en.app.anyMayCall);
    const look = await open.evaluate((el) => {
      const error = document.createElement('p');
      error.className = 'error';
      document.body.append(error);
      const errorColor = getComputedStyle(error).color;
      error.remove();
      return { classes: [...el.classList], role: el.getAttribute('role'), color: getComputedStyle(el).color, errorColor };
    });
    expect(look.classes).not.toContain('error');
    expect(look.role).not.toBe('alert');
    expect(look.color).not.toBe(look.errorColor);
  });

  it('the tab’s title follows the page and the language', async () => {
    await page.goto(`${s.baseUrl}/console/settings`);
    await page.getByRole('heading', { level: 1, name: en.settings.title }).waitFor();
    expect(await page.title()).toBe(`${en.shell.nav.settings} · vop console`);

    const zh = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'zh-CN' });
    try {
      const p = await zh.newPage();
      await p.goto(`${s.baseUrl}/console`);
      await p.locator('#token').fill(ADMIN_TOKEN);
      await p.keyboard.press('Enter');
      await p.getByRole('heading', { level: 1, name: zhCN.overview.title }).waitFor();
      expect(await p.title()).toBe(zhCN.shell.documentTitle(zhCN.shell.nav.overview));
      expect(await p.title()).toContain('控制台');
      await p.goto(`${s.baseUrl}/console/videos`);
      await p.getByRole('heading', { level: 1, name: zhCN.videos.title }).waitFor();
      expect(await p.title()).toBe(zhCN.shell.documentTitle(zhCN.shell.nav.videos));
    } finally {
      await zh.close();
    }
  });

  it('a pull refused for good says it is not retried, not "attempt 1 of 5"', async () => {
    const app: SpecClient = await s.newApp('Pulling site');
    // This machine's addresses are refused to pulls unless allowed: a permanent refusal.
    const videoId = await app.register({ VideoTitle: 'From this machine', SourceFileGetType: 2, SourceFilePath: 'http://127.0.0.1:9/movie.mp4' });
    await waitForStatus(s.vop, videoId, [4], { timeoutMs: 30_000 });
    await page.goto(`${s.baseUrl}/console/videos/${videoId}`);
    const line = page.locator('.job-line').first();
    await line.waitFor();
    const text = (await line.textContent()) ?? '';
    expect(text).toContain(en.jobs.notRetried(1));
    expect(text).not.toMatch(/attempt 1 of \d/);
    // Its address can be pulled again (once allowed): Retry is offered.
    expect(await page.getByRole('button', { name: en.video.retry, exact: true }).count()).toBe(1);
  });

  it('offers no Retry for a file that was not a video (nothing is kept to retry from)', async () => {
    const app: SpecClient = await s.newApp('Site sending noise');
    const videoId = await app.register({ VideoTitle: 'Not a video' });
    const form = new FormData();
    for (const [k, v] of Object.entries({ ...app.auth(), VideoId: videoId })) form.append(k, v);
    form.append('file', new Blob([new Uint8Array(40_000).fill(7)]), 'noise.mp4');
    expect(((await (await fetch(`${s.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form })).json()) as any).AuthMsg.ResultCode).toBe('307');
    expect(await waitForStatus(s.vop, videoId, [7], { timeoutMs: 30_000 })).toBe(7);
    await page.goto(`${s.baseUrl}/console/videos/${videoId}`);
    await page.getByRole('heading', { level: 1, name: 'Not a video' }).waitFor();
    await page.getByRole('button', { name: en.video.delete }).waitFor();
    expect(await page.getByRole('button', { name: en.video.retry, exact: true }).count()).toBe(0);
  });

  it('a job that succeeded says it is done, not "attempt 1 of 2"', async () => {
    const app: SpecClient = await s.newApp('Transcoding site');
    const videoId = await app.register({ VideoTitle: 'Done at once' });
    await placeSource(s.vop, videoId, await makeClip({ seconds: 1 }));
    expect(await waitForStatus(s.vop, videoId, [1, 7], { timeoutMs: 60_000 })).toBe(1);
    await page.goto(`${s.baseUrl}/console/videos/${videoId}`);
    // The transcode's line (a job still running, the seek previews', rightly says its attempt).
    const line = page.locator('.job-line', { hasText: en.jobs.types.transcode! }).first();
    await line.waitFor();
    const text = (await line.textContent()) ?? '';
    expect(text).toContain(en.jobs.succeededAt(1));
    expect(text).not.toMatch(/attempt \d of \d/);
  }, 90_000);

  it('the Settings page names the widget’s upload kinds in plain words; the spec’s values only as code', async () => {
    for (const [locale, t] of [
      ['en-US', en],
      ['zh-CN', zhCN],
    ] as const) {
      const c = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale });
      try {
        const p = await c.newPage();
        await p.goto(`${s.baseUrl}/console`);
        await p.locator('#token').fill(ADMIN_TOKEN);
        await p.keyboard.press('Enter');
        await p.getByRole('heading', { level: 1, name: t.overview.title }).waitFor();
        await p.goto(`${s.baseUrl}/console/settings`);
        await p.locator('#s-maxUploadBytesFlash').waitFor();
        const labels = await p.locator('label').allTextContents();
        expect(labels.filter((l) => /flash|silverlight/i.test(l))).toEqual([]);
        // Outside code, no page text names them.
        const prose = await p.locator('main').evaluate((main) => {
          const copy = main.cloneNode(true) as HTMLElement;
          copy.querySelectorAll('code').forEach((c) => c.remove());
          return copy.textContent ?? '';
        });
        expect(prose).not.toMatch(/flash|silverlight/i);
      } finally {
        await c.close();
      }
    }
  });
});
