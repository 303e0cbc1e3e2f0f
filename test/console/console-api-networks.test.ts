/**
 * The console's part of issue 12 item 1, in real Chromium: an application's page says when any
 * address may call its API, shows the addresses its API calls came from, allows them in one
 * click, and takes networks typed by hand (a bad one is refused and changes nothing); and its
 * media addresses, public or signed with a lifetime.
 */
import http from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import type { SpecClient } from '../helpers/client.js';
import { ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let browser: Browser;
let client: SpecClient;

beforeAll(async () => {
  [s, browser] = await Promise.all([startServer(), launchBrowser(), ensureConsoleBuilt()]);
  client = await s.newApp('Fenced site');
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

/** GetList (spec 4.3) from `localAddress` (any of 127.0.0.0/8 reaches loopback); its ResultCode. */
function listFrom(localAddress: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${s.baseUrl}/Api/Video/GetList?${client.query()}`, { localAddress, agent: false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve(JSON.parse(text).AuthMsg.ResultCode as string));
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
  });
}

const networks = async () => (await s.admin.request('GET', `/apps/${client.appId}`)).body.apiNetworks as string[];

describe('console: API callers of an application', () => {
  it('warns while any address may call, allows the recent callers in one click, and saves typed networks', async () => {
    expect(await listFrom('127.0.0.2')).toBe('1');
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await ctx.newPage();
      await logIntoConsole(page, s.baseUrl);

      await page.goto(`${s.baseUrl}/console/apps`);
      await page.getByRole('link', { name: 'any address' }).first().waitFor({ timeout: 15_000 });

      await page.goto(`${s.baseUrl}/console/apps/${client.appId}`);
      const card = page.getByTestId('api-networks');
      await card.getByTestId('networks-open').waitFor({ timeout: 15_000 });
      await expect(card.getByTestId('recent-callers').textContent()).resolves.toContain('127.0.0.2');

      await card.getByRole('button', { name: 'Allow only these addresses' }).click();
      await page.getByText('API calls are now accepted only from 127.0.0.2/32.').waitFor({ timeout: 15_000 });
      expect(await networks()).toEqual(['127.0.0.2/32']);
      await expect(card.getByTestId('networks-open').count()).resolves.toBe(0);
      expect(await listFrom('127.0.0.3')).toBe('302');
      expect(await listFrom('127.0.0.2')).toBe('1');

      const field = card.getByLabel(/Allowed networks/);
      await field.fill('nonsense\n10.0.0.0/8');
      await card.getByRole('button', { name: 'Save networks' }).click();
      await page.getByRole('alert').filter({ hasText: 'apiNetworks' }).waitFor({ timeout: 15_000 });
      expect(await networks()).toEqual(['127.0.0.2/32']);

      await field.fill('127.0.0.0/30, 10.1.2.3/8');
      await card.getByRole('button', { name: 'Save networks' }).click();
      await page.getByText('API calls are now accepted only from 127.0.0.0/30, 10.0.0.0/8.').waitFor({ timeout: 15_000 });
      expect(await networks()).toEqual(['127.0.0.0/30', '10.0.0.0/8']);
      expect(await listFrom('127.0.0.3')).toBe('1');

      await field.fill('');
      await card.getByRole('button', { name: 'Save networks' }).click();
      await page.getByText('API calls are accepted from any address again.').waitFor({ timeout: 15_000 });
      expect(await networks()).toEqual([]);
    } finally {
      await ctx.close();
    }
  }, 120_000);
});

describe("console: an application's media addresses", () => {
  it('switches them to signed with a lifetime, refuses a lifetime out of range, and back to public', async () => {
    const app = await s.newApp('Media site');
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await ctx.newPage();
      await logIntoConsole(page, s.baseUrl);
      await page.goto(`${s.baseUrl}/console/apps/${app.appId}`);
      const form = page.locator('form.media-access');
      await form.waitFor({ timeout: 15_000 });
      const save = form.getByRole('button', { name: 'Save' });
      expect(await save.isDisabled()).toBe(true);
      await form.getByLabel('Signed: addresses carry a token and expire').check();
      const ttl = form.getByLabel('Signed addresses work for (seconds)');
      await ttl.fill('5');
      expect(await ttl.getAttribute('aria-invalid')).toBe('true');
      expect(await save.isDisabled()).toBe(true);
      await ttl.fill('900');
      await save.click();
      await page.getByText('served at signed addresses only, each good for 900 s').waitFor();
      expect((await s.admin.request('GET', `/apps/${app.appId}`)).body).toMatchObject({ mediaAccess: 'signed', mediaTtlSeconds: 900 });

      // A reload shows what was saved.
      await page.reload();
      await form.waitFor();
      expect(await form.getByLabel('Signed: addresses carry a token and expire').isChecked()).toBe(true);
      expect(await form.getByLabel('Signed addresses work for (seconds)').inputValue()).toBe('900');
      await form.getByLabel('Public: anyone with an address can watch').check();
      await form.getByRole('button', { name: 'Save' }).click();
      await page.getByText('addresses are public again').waitFor();
      expect((await s.admin.request('GET', `/apps/${app.appId}`)).body.mediaAccess).toBe('public');
    } finally {
      await ctx.close();
    }
  }, 60_000);
});
