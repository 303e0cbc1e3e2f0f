/**
 * The Settings page says what is wrong with a refused value next to the field it concerns, in the
 * page's own words, and moves focus there (issue 13, item 1); the pull policy is worded as vop
 * behaves (loopback and link-local refused unless the allow list opts them in). Real server,
 * real Chromium, at both of the console's sizes.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let browser: Browser;

beforeAll(async () => {
  [s, browser] = await Promise.all([startServer(), launchBrowser(), ensureConsoleBuilt()]);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

/** The focused element's id, whether it is in the window, and the error text its field shows. */
function focusState(page: Page) {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null;
    const r = el?.getBoundingClientRect();
    const describedBy = el?.getAttribute('aria-describedby');
    return {
      id: el?.id ?? '',
      invalid: el?.getAttribute('aria-invalid') ?? '',
      inView: !!r && r.top >= 0 && r.bottom <= window.innerHeight,
      error: describedBy ? (document.getElementById(describedBy)?.textContent ?? '') : '',
      // The error sits in the same field block as the input, not somewhere else on the page.
      errorNearby: !!el?.closest('.field')?.querySelector('.field-error'),
    };
  });
}

describe('settings errors', () => {
  for (const viewport of [
    { width: 1280, height: 800 },
    { width: 390, height: 844 },
  ]) {
    it(`shows a refused value beside its field, in the page's words, and focuses it (${viewport.width} px)`, async () => {
      const ctx = await browser.newContext({ viewport, locale: 'en-US' });
      try {
        const page = await ctx.newPage();
        await logIntoConsole(page, s.baseUrl);
        await page.goto(`${s.baseUrl}/console/settings`);
        await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();

        // The pull policy as vop behaves today: loopback and link-local only when allowed.
        await expect.poll(() => page.locator('form.settings').textContent()).toContain('are refused unless a network below allows them');

        // A wrong network in the allow list (far down the page): focus moves to it, the reason is under it.
        await page.locator('#s-pullAllow').fill('127.0.0.0/8\nnot-a-cidr');
        await page.locator('#page-title').focus();
        await page.getByRole('button', { name: 'Save settings' }).click();
        await expect.poll(async () => (await focusState(page)).id).toBe('s-pullAllow');
        const cidr = await focusState(page);
        expect(cidr).toMatchObject({ invalid: 'true', inView: true, errorNearby: true });
        expect(cidr.error).toBe('“not-a-cidr” is not a network. Write one per line, like 127.0.0.0/8 or fd00::/8.');
        // Never the server's internal names.
        const text = (await page.locator('main').textContent()) ?? '';
        expect(text).not.toMatch(/Option |ingest\.pull|processing\.ladder|rungs\[/);
        await page.getByRole('alert').filter({ hasText: 'Not saved: Pull: allowed networks' }).waitFor();

        // A rung: named as the admin counts them (the second row is rung 2), its own input focused.
        await page.locator('#s-pullAllow').fill('127.0.0.0/8');
        await page.getByRole('button', { name: 'Add a rung' }).click();
        const rows = await page.locator('table.rungs tbody tr').count();
        await page.getByLabel(`Rung ${rows} label`).fill('tiny');
        await page.getByLabel(`Rung ${rows} shorter side`).fill('101');
        await page.getByLabel(`Rung ${rows} video kbps`).fill('100');
        await page.getByRole('button', { name: 'Save settings' }).click();
        await expect.poll(async () => (await focusState(page)).id).toBe(`s-ladderRungs-${rows - 1}-shortSide`);
        const rung = await focusState(page);
        expect(rung).toMatchObject({ invalid: 'true', inView: true, errorNearby: true });
        expect(rung.error).toBe(`Rung ${rows} (shorter side): Enter an even whole number of at least 2 (the encoder needs even sizes).`);
        // Only the one field is marked.
        expect(await page.locator('[aria-invalid="true"]').count()).toBe(1);

        // Put right, it saves, and nothing is marked any more.
        await page.getByLabel(`Rung ${rows} shorter side`).fill('100');
        await page.getByRole('button', { name: 'Save settings' }).click();
        await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
        expect(await page.locator('[aria-invalid="true"]').count()).toBe(0);
        expect((await s.admin.request('GET', '/settings')).body.saved).toMatchObject({ pullAllow: ['127.0.0.0/8'] });
        await s.admin.request('PUT', '/settings', { ladderRungs: (await s.admin.request('GET', '/settings')).body.running.ladderRungs });
      } finally {
        await ctx.close();
      }
    }, 90_000);
  }
});
