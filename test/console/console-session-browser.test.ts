/**
 * The real console in Chromium sends its session's secret: every admin request after the login
 * carries the login's `consoleSecret` in X-Vop-Console, the event stream opens with a ticket
 * (never the secret in its URL), a new tab of the same browser keeps the session, and a page
 * whose secret is wrong is sent back to the login with a message that says to log in again.
 */
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let secret = '';
/** Every admin API request the pages made: method, path and its X-Vop-Console. */
const calls: Array<{ method: string; path: string; search: string; header: string | undefined }> = [];

beforeAll(async () => {
  [s, browser] = await Promise.all([startServer(), launchBrowser(), ensureConsoleBuilt()]);
  ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en' });
  ctx.on('request', (r: Request) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/admin/api/')) calls.push({ method: r.method(), path: u.pathname, search: u.search, header: r.headers()['x-vop-console'] });
  });
  ctx.on('response', async (r) => {
    if (r.request().method() === 'POST' && new URL(r.url()).pathname === '/admin/api/session' && r.ok()) secret = (await r.json()).consoleSecret;
  });
  page = await ctx.newPage();
}, 120_000);

afterAll(async () => {
  await ctx?.close();
  await browser?.close();
  await s?.close();
});

describe("the console's session secret in Chromium", () => {
  it('sends the login’s secret on every request, and opens the live stream with a ticket', async () => {
    await logIntoConsole(page, s.baseUrl);
    await page.locator('.live.on').waitFor();
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Applications' }).click();
    await page.getByLabel('Name').fill('Made in the browser');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.locator('.secret').waitFor();
    expect((await s.admin.request('GET', '/apps')).body.apps.map((a: { name: string }) => a.name)).toContain('Made in the browser');

    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const login = calls.findIndex((c) => c.method === 'POST' && c.path === '/admin/api/session');
    const after = calls.slice(login + 1);
    const stream = after.filter((c) => c.path === '/admin/api/events');
    expect(stream.length).toBeGreaterThan(0);
    for (const c of stream) {
      expect(c.search).toMatch(/^\?ticket=/);
      expect(c.search).not.toContain(secret);
    }
    const others = after.filter((c) => c.path !== '/admin/api/events');
    expect(others.map((c) => `${c.method} ${c.path}`)).toContain('POST /admin/api/apps');
    expect(others.map((c) => `${c.method} ${c.path}`)).toContain('POST /admin/api/events/ticket');
    for (const c of others) expect(c.header, `${c.method} ${c.path}`).toBe(secret);
  });

  it('keeps the session in a new tab of the same browser', async () => {
    const tab = await ctx.newPage();
    try {
      await tab.goto(`${s.baseUrl}/console/apps`);
      await tab.getByRole('heading', { level: 1, name: 'Applications' }).waitFor();
      await tab.locator('.live.on').waitFor();
    } finally {
      await tab.close();
    }
  });

  it('sends a page whose secret is wrong back to the login, saying to log in again', async () => {
    await page.evaluate(() => window.localStorage.setItem('vop.consoleSecret', 'not-the-secret'));
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Videos' }).click();
    await page.getByText('This browser no longer holds the session’s secret. Log in again.').waitFor();
    await page.getByLabel('Admin token').waitFor();
  });
});
