/**
 * A page for real players to play vop's HLS in (Chromium's own HLS, hls.js): blank, on vop's
 * origin so that the player's requests are same-origin, with one muted `<video>`, every request
 * it makes noted.
 */
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';

const require = createRequire(import.meta.url);

/** hls.js's build that sets `window.Hls`, for `page.addScriptTag`. */
export const HLS_JS_PATH = require.resolve('hls.js/dist/hls.min.js');

export interface PlayerPage {
  page: Page;
  /** Every address the page asked for, in order. */
  requests: string[];
  close: () => Promise<void>;
}

/** Opens the page in a context of its own; with `hlsJs`, hls.js is loaded in it. */
export async function openPlayerPage(browser: Browser, baseUrl: string, o: { hlsJs?: boolean } = {}): Promise<PlayerPage> {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const requests: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.route(`${baseUrl}/__player`, (route) => route.fulfill({ contentType: 'text/html', body: '<!doctype html><html><body><video muted playsinline></video></body></html>' }));
  await page.goto(`${baseUrl}/__player`);
  if (o.hlsJs) await page.addScriptTag({ path: HLS_JS_PATH });
  return { page, requests, close: () => ctx.close() };
}
