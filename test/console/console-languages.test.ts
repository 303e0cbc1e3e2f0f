/**
 * The console and the upload page speak the browser's language, English or Simplified Chinese,
 * the console switches on request and remembers it, dates follow the chosen locale, and the
 * console is dark when the system is (issue 13, item 6). Real server, real Chromium; the
 * catalogues themselves are checked by test/console/console-i18n.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { nowSeconds, specToken, type SpecClient } from '../helpers/client.js';
import { ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { zhCN } from '../../renderer/src/messages/zh-CN.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let browser: Browser;
let client: SpecClient;

beforeAll(async () => {
  [s, browser] = await Promise.all([startServer(), launchBrowser(), ensureConsoleBuilt()]);
  client = await s.newApp('Site des langues');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

/** The page's h1 and the document's language. */
const heading = (page: Page) => page.evaluate(() => ({ h1: document.querySelector('h1')?.textContent?.trim(), lang: document.documentElement.lang }));

describe('languages', () => {
  it('shows the console in Chinese to a Chinese browser, every page, with dates in its locale', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'zh-CN' });
    try {
      const page = await ctx.newPage();
      await page.goto(`${s.baseUrl}/console`);
      await page.getByRole('heading', { level: 1, name: '登录' }).waitFor();
      expect(await heading(page)).toEqual({ h1: '登录', lang: 'zh-CN' });
      await page.getByLabel('管理令牌').fill(ADMIN_TOKEN);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { level: 1, name: '概览' }).waitFor();
      for (const [path, title] of [
        ['/apps', '应用'],
        ['/videos', '视频'],
        ['/transcode', '转码监控'],
        ['/transfers', '上传与下载'],
        ['/settings', '设置'],
        ['/nowhere', '未找到'],
      ]) {
        await page.goto(`${s.baseUrl}/console${path}`);
        await page.getByRole('heading', { level: 1, name: title }).waitFor();
        expect((await heading(page)).lang).toBe('zh-CN');
      }
      // A date as the chosen locale writes it (the applications' Created column).
      await page.goto(`${s.baseUrl}/console/apps`);
      const created = (await s.admin.request('GET', `/apps/${client.appId}`)).body.createdAt as string;
      const row = page.locator('tr', { hasText: 'Site des langues' });
      const expected = await page.evaluate((at) => new Date(at).toLocaleString('zh-CN'), created);
      await expect.poll(() => row.locator('td').last().textContent()).toBe(expected);
      expect(expected).not.toBe(await page.evaluate((at) => new Date(at).toLocaleString('en'), created));
    } finally {
      await ctx.close();
    }
  }, 90_000);

  it("says the server's refusals and a callback's failure in Chinese: no bare code, no English sentence", async () => {
    // A port nothing listens on: the callback's attempts are refused (ECONNREFUSED).
    const spare = http.createServer();
    await new Promise<void>((r) => spare.listen(0, '127.0.0.1', r));
    const closed = (spare.address() as AddressInfo).port;
    await new Promise((r) => spare.close(r));
    const app = await s.newApp('Site des rappels');
    expect((await s.admin.request('PATCH', `/apps/${app.appId}`, { callbackUrl: `http://127.0.0.1:${closed}/hook` })).status).toBe(200);
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'zh-CN' });
    try {
      const page = await ctx.newPage();
      await page.goto(`${s.baseUrl}/console`);
      // A wrong token: the server answers 410 with its English words; the page says it in Chinese.
      await page.getByLabel(zhCN.login.token).fill('not-the-token');
      await page.keyboard.press('Enter');
      const refused = page.getByRole('alert');
      await expect.poll(() => refused.textContent()).toBe(zhCN.serverWords.resultCodes['410']);
      await page.getByLabel(zhCN.login.token).fill(ADMIN_TOKEN);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { level: 1, name: zhCN.overview.title }).waitFor();
      await page.goto(`${s.baseUrl}/console/apps/${app.appId}`);
      await page.getByRole('button', { name: zhCN.app.sendTest }).click();
      const said = zhCN.serverWords.callbackFailure({ kind: 'refused', address: `127.0.0.1:${closed}` });
      await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 15_000 }).toBe(zhCN.app.testFailed(said));
      // The delivery log says it the same way, and nowhere does Node's sentence show.
      await expect.poll(() => page.locator('tr[data-delivery]').first().textContent()).toContain(said);
      expect(await page.locator('main').textContent()).not.toContain('connect ECONNREFUSED');
    } finally {
      await ctx.close();
    }
  }, 60_000);

  it('switches to English on request and remembers it in this browser', async () => {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: 'zh-CN' });
    try {
      const page = await ctx.newPage();
      await page.goto(`${s.baseUrl}/console`);
      await page.getByRole('heading', { level: 1, name: '登录' }).waitFor();
      // From the login already.
      await page.getByLabel('语言').selectOption('en');
      await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();
      await logIntoConsole(page, s.baseUrl);
      expect(await heading(page)).toEqual({ h1: 'Overview', lang: 'en' });
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      // And back, in the top bar.
      await page.getByLabel('Language').selectOption('zh-CN');
      await page.getByRole('heading', { level: 1, name: '概览' }).waitFor();
      expect((await heading(page)).lang).toBe('zh-CN');
    } finally {
      await ctx.close();
    }
  }, 60_000);

  it('shows the upload page in the browser’s language, its two catalogues with the same keys', async () => {
    for (const [locale, title, choose] of [
      ['zh-CN', '上传视频', '选择视频文件'],
      ['en-US', 'Upload a video', 'Choose a video file'],
    ] as const) {
      const ctx: BrowserContext = await browser.newContext({ locale });
      try {
        const page = await ctx.newPage();
        const videoId = await client.register({ VideoTitle: `Page in ${locale}` });
        const timestamp = nowSeconds();
        const q = new URLSearchParams({ appId: client.appId, timestamp, token: specToken(timestamp, client.secret), videoId, mode: 'window', origin: s.baseUrl });
        await page.goto(`${s.baseUrl}/widget/upload?${q}`);
        await page.locator('#file').waitFor({ state: 'attached' });
        await expect.poll(() => page.title()).toBe(title);
        expect(await page.locator('h1').textContent()).toBe(title);
        expect(await page.locator('.drop-title').textContent()).toBe(choose);
        expect(await page.evaluate(() => document.documentElement.lang)).toBe(locale === 'zh-CN' ? 'zh-CN' : 'en');
        const keys = await page.evaluate(() => {
          const m = (window as unknown as { vopUploadMessages: Record<string, Record<string, unknown>> }).vopUploadMessages;
          const kinds = (o: Record<string, unknown>) => Object.entries(o).map(([k, v]) => `${k}:${typeof v === 'function' ? `fn/${(v as () => void).length}` : typeof v}`).sort();
          return { en: kinds(m.en!), zh: kinds(m['zh-CN']!) };
        });
        expect(keys.zh).toEqual(keys.en);
        // The error page's title too (its one line is the spec's, the same in every language).
        await page.goto(`${s.baseUrl}/widget/upload?${new URLSearchParams({ appId: client.appId, timestamp, token: 'wrong', videoId, mode: 'window' })}`);
        await expect.poll(() => page.title()).toBe(title);
        expect(await page.locator('body').textContent()).toContain('ErrorCode : 104, ErrorMessage : App SecretKey Error');
      } finally {
        await ctx.close();
      }
    }
  }, 60_000);
});

describe('themes', () => {
  /** The page's background lightness, 0 (black) to 255 (white): the root's, which paints the page (an unpainted one fails). */
  const lightness = (page: Page) =>
    page.evaluate(() => {
      const [r, g, b, a] = getComputedStyle(document.documentElement).backgroundColor.match(/[\d.]+/g)!.map(Number);
      return a === 0 ? NaN : Math.round((r! + g! + b!) / 3);
    });

  it('is dark when the system is, and light otherwise', async () => {
    const seen: Record<string, number> = {};
    for (const colorScheme of ['dark', 'light'] as const) {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme, locale: 'en-US' });
      try {
        const page = await ctx.newPage();
        await logIntoConsole(page, s.baseUrl);
        seen[colorScheme] = await lightness(page);
        // Fields follow (a white box on a dark page would glare).
        await page.goto(`${s.baseUrl}/console/settings`);
        const field = await page.locator('#s-publicUrl').evaluate((el) => getComputedStyle(el).backgroundColor);
        seen[`${colorScheme}-field`] = Math.round(field.match(/\d+/g)!.slice(0, 3).map(Number).reduce((a, b) => a + b) / 3);
      } finally {
        await ctx.close();
      }
    }
    expect(seen.dark).toBeLessThan(60);
    expect(seen['dark-field']).toBeLessThan(60);
    expect(seen.light).toBeGreaterThan(200);
    expect(seen['light-field']).toBeGreaterThan(200);
  }, 60_000);
});
