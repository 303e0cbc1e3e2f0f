/**
 * An application's page that embeds a vop upload widget, the way the README tells applications to:
 * the auth values computed on the application's server, the script loaded from vop, openUpload
 * called from a click. Callbacks are recorded in `window.events` for the test to read.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { Browser, BrowserContext, Frame, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { nowSeconds, specToken, type SpecClient } from './client.js';
import { escapeHtml, launchBrowser, startHostServer, type HostServer } from './browser.js';
import { makeClip } from './clips.js';
import { startServer, type TestServer } from './server.js';

export type WidgetScript = 'initUploadWidget.js' | 'initUploadABoxWidget.js';

/** A callback as the host page saw it (its first argument). */
export interface HostEvent {
  type: 'success' | 'failure' | 'error';
  value: string;
}

/** onFailure's second argument, as the host page saw it. */
export interface FailureDetail {
  code: string;
  message: string;
  cancelled: boolean;
}

/** Spec 4.5's values for one video, computed server-side (token = MD5(timestamp + secret)). */
export function widgetOptions(app: SpecClient, videoId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const timestamp = nowSeconds();
  return { appId: app.appId, timestamp, token: specToken(timestamp, app.secret), videoId, ...extra };
}

/** JSON for an inline script of the host page (which has no CSP: it is the application's page). */
function jsonInScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/**
 * The host page: a button `#open` that calls openUpload with `options`; `window.openWith(extra)`
 * does the same with changed options (for tests of bad values); `window.handle` is what it returned.
 * onFailure's second argument goes to `window.failureDetails`.
 */
export function hostPageHtml(vopBaseUrl: string, script: WidgetScript, options: Record<string, unknown>, body = ''): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>An application</title>
<style>body { font: 16px system-ui, sans-serif; margin: 0; padding: 24px; background: #f1f5f9; } .content { max-width: 720px; }</style>
</head><body>
<div class="content"><h1>My application</h1><p>Add a video to your library.</p>
<button id="open" type="button">Upload a video</button>${body}</div>
<script src="${escapeHtml(`${vopBaseUrl}/widget/${script}`)}"></script>
<script>
  window.events = [];
  window.failureDetails = [];
  const record = (type) => (value, detail) => {
    window.events.push({ type, value: String(value) });
    if (type === 'failure') window.failureDetails.push(detail);
  };
  const options = ${jsonInScript(options)};
  window.openWith = (extra) => {
    window.handle = openUpload(Object.assign({}, options, { onSuccess: record('success'), onFailure: record('failure'), onError: record('error') }, extra || {}));
  };
  document.getElementById('open').addEventListener('click', () => window.openWith());
</script>
</body></html>`;
}

/** The callbacks the host page has seen so far. */
export function hostEvents(page: Page | Frame): Promise<HostEvent[]> {
  return page.evaluate(() => (window as unknown as { events: HostEvent[] }).events);
}

/** The second arguments onFailure got so far. */
export function failureDetails(page: Page | Frame): Promise<FailureDetail[]> {
  return page.evaluate(() => (window as unknown as { failureDetails: FailureDetail[] }).failureDetails);
}

/** Waits until the host page has seen `n` callbacks, and returns them. */
export async function waitForHostEvents(page: Page | Frame, n = 1, timeout = 30_000): Promise<HostEvent[]> {
  await page.waitForFunction((count) => (window as unknown as { events: unknown[] }).events.length >= count, n, { timeout });
  return hostEvents(page);
}

/**
 * Clicks the pop-up's Close button and resolves once the window is gone. The click closes the
 * window it is in: Playwright's click, still finishing its action when the window goes, may say so
 * ("Target page ... has been closed"; seen in whole runs), which is the very outcome asked for.
 */
export async function closePopup(popup: Page): Promise<void> {
  await Promise.all([popup.waitForEvent('close'), popup.click('#close').catch((err: unknown) => {
    if (!popup.isClosed()) throw err;
  })]);
}

export function sha256File(file: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** Waits until the upload page's progress bar is drawn full (its width is animated), for screenshots. */
export async function waitForFullBar(page: Page | Frame): Promise<void> {
  await page.waitForFunction(() => {
    const fill = document.getElementById('fill')!.getBoundingClientRect().width;
    return fill > 0 && fill === document.getElementById('bar')!.getBoundingClientRect().width;
  });
}

/** What a widget test file runs against; see widgetRig. */
export interface WidgetRig {
  vop: TestServer;
  host: HostServer;
  browser: Browser;
  app: SpecClient;
  clip: string;
  context: BrowserContext;
  page: Page;
}

/**
 * Registers the vitest hooks a widget test file needs, and returns what they set up. Set up once
 * for the whole file, because they are slow to start: vop, a host server on another origin for the
 * application's pages, Chromium, a two-second clip to upload, and an app named `appName`. Made new
 * for each test: a browser context (1000x700) and its page, so that no storage, pop-up or listener
 * carries over from one test to the next. Call it at the top level of the test file. The fields
 * stay empty until the hooks have run, so read them inside tests and hooks. `onReady` runs once
 * the file's servers are up, before its first test.
 */
export function widgetRig(appName: string, onReady?: (rig: WidgetRig) => void): WidgetRig {
  const rig = {} as WidgetRig;
  beforeAll(async () => {
    [rig.vop, rig.host, rig.browser, rig.clip] = await Promise.all([startServer(), startHostServer(), launchBrowser(), makeClip({ seconds: 2 })]);
    rig.app = await rig.vop.newApp(appName);
    onReady?.(rig);
  });
  afterAll(async () => {
    // After a failed beforeAll these may never have been set.
    await rig.browser?.close();
    await rig.host?.close();
    await rig.vop?.close();
  });
  beforeEach(async () => {
    rig.context = await rig.browser.newContext({ viewport: { width: 1000, height: 700 } });
    rig.page = await rig.context.newPage();
  });
  afterEach(async () => {
    await rig.context.close();
  });
  return rig;
}
