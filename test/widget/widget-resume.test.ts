/**
 * Interrupted uploads on the upload page, in real Chromium with tus-js-client against vop's tus
 * endpoint: a reload mid-way resumes where it stopped, pause and resume carry on, and a lost
 * network is reported to onError and resumes when the network comes back. Every case ends with
 * the stored file's hash equal to the source's, and no byte received twice.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page, Request as PwRequest, Response as PwResponse } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { launchBrowser, startHostServer, type HostServer } from '../helpers/browser.js';
import { makeClip } from '../helpers/clips.js';
import type { SpecClient } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { hostPageHtml, sha256File, waitForHostEvents, widgetOptions } from '../helpers/widgetHost.js';
import { waitForStatus } from '../helpers/wait.js';

/** Small chunks, so that a clip of a megabyte or two takes many PATCH requests. */
const CHUNK = 64 * 1024;
/** How long each PATCH is held back: a slow link, slow enough to interrupt mid-way. */
const PATCH_DELAY_MS = 120;

let vop: TestServer;
let host: HostServer;
let browser: Browser;
let app: SpecClient;
let clip: string;
let size: number;

beforeAll(async () => {
  [vop, host, browser, clip] = await Promise.all([startServer(), startHostServer(), launchBrowser(), makeClip({ seconds: 6, width: 640, height: 360 })]);
  size = fs.statSync(clip).size;
  app = await vop.newApp('resume');
});
afterAll(async () => {
  await browser?.close();
  await host?.close();
  await vop?.close();
});

/** One tus request as the browser sent it, with the server's answer if one came. */
interface TusExchange {
  method: string;
  /** Upload-Offset sent (PATCH). */
  offset: number | undefined;
  status: number | undefined;
  /** Upload-Offset answered (HEAD, PATCH). */
  answeredOffset: number | undefined;
  /** Marks the exchanges after an interruption. */
  phase: string;
}

let context: BrowserContext;
let exchanges: TusExchange[];
let phase: string;

beforeEach(async () => {
  context = await browser.newContext({ viewport: { width: 640, height: 560 } });
  exchanges = [];
  phase = 'first';
  const isTus = (url: URL) => url.pathname.startsWith('/upload/tus');
  const byRequest = new Map<PwRequest, TusExchange>();
  context.on('request', (req) => {
    if (!isTus(new URL(req.url())) || req.method() === 'OPTIONS') return;
    const sent = req.headers()['upload-offset'];
    const x: TusExchange = { method: req.method(), offset: sent === undefined ? undefined : Number(sent), status: undefined, answeredOffset: undefined, phase };
    byRequest.set(req, x);
    exchanges.push(x);
  });
  context.on('response', (res: PwResponse) => {
    const x = byRequest.get(res.request());
    if (!x) return;
    x.status = res.status();
    const answered = res.headers()['upload-offset'];
    if (answered !== undefined) x.answeredOffset = Number(answered);
  });
  await context.route(
    (url) => isTus(url),
    async (route) => {
      // Time is the subject: a slow link (PATCH_DELAY_MS), slow enough to interrupt mid-way.
      if (route.request().method() === 'PATCH') await new Promise((r) => setTimeout(r, PATCH_DELAY_MS));
      await route.continue().catch(() => undefined); // the page may be gone (reload) by now
    },
  );
});
afterEach(async () => {
  await context.close();
});

/** The furthest offset the server has acknowledged so far. */
function acked(): number {
  return Math.max(0, ...exchanges.map((x) => (x.status === 204 ? (x.answeredOffset ?? 0) : 0)));
}

/** Bytes the server took in the PATCHes of `ofPhase` (answered offset minus sent offset). */
function bytesTaken(ofPhase: string): number {
  return exchanges.filter((x) => x.phase === ofPhase && x.method === 'PATCH' && x.status === 204).reduce((n, x) => n + (x.answeredOffset! - x.offset!), 0);
}

function pageUrl(videoId: string): string {
  const o = widgetOptions(app, videoId) as Record<string, string>;
  const q = new URLSearchParams({ appId: o.appId!, timestamp: o.timestamp!, token: o.token!, videoId, mode: 'window', chunkSize: String(CHUNK) });
  return `${vop.baseUrl}/widget/upload?${q}`;
}

async function assertStored(videoId: string): Promise<void> {
  expect(sha256File(path.join(vop.dataDir, 'media/sources', videoId, 'source'))).toBe(sha256File(clip));
  expect(await waitForStatus(app, videoId, [5, 6, 1])).toBeGreaterThan(0);
}

const done = (p: Page) => p.waitForSelector('body[data-state="done"]', { timeout: 30_000 });

describe('resumable upload from the page', () => {
  it('resumes after a reload of the page mid-way, from where the server stopped', async () => {
    expect(size).toBeGreaterThan(10 * CHUNK);
    const videoId = await app.register();
    const page = await context.newPage();
    await page.goto(pageUrl(videoId));
    await page.setInputFiles('#file', clip);
    await expect.poll(acked, { timeout: 20_000 }).toBeGreaterThan(size * 0.3);

    await page.reload();
    // Only now: until the reload is done, the old page may still send a request or two.
    phase = 'after reload';
    const reachedBefore = acked();
    await page.setInputFiles('#file', clip); // the user picks the same file again
    await done(page);

    const after = exchanges.filter((x) => x.phase === 'after reload');
    expect(after.map((x) => x.method)).not.toContain('POST'); // no new upload
    expect(after[0]?.method).toBe('HEAD');
    const resumedAt = after.find((x) => x.method === 'PATCH')!.offset!;
    expect(resumedAt).toBeGreaterThanOrEqual(reachedBefore);
    expect(resumedAt).toBeLessThan(size);
    expect(Number(await page.getAttribute('body', 'data-resumed-from'))).toBe(resumedAt);
    // What the server took after the reload is exactly the rest: nothing was sent twice.
    expect(bytesTaken('after reload')).toBe(size - resumedAt);
    expect(exchanges.filter((x) => x.method === 'POST')).toHaveLength(1);
    await assertStored(videoId);
  });

  it('another file picked after a reload mid-way replaces the first upload (one per video, issue 12 item 7): the new file is stored', async () => {
    const other = await makeClip({ seconds: 3, width: 320, height: 180 });
    const videoId = await app.register();
    const page = await context.newPage();
    await page.goto(pageUrl(videoId));
    await page.setInputFiles('#file', clip);
    await expect.poll(acked, { timeout: 20_000 }).toBeGreaterThan(size * 0.2);
    await page.reload();
    // The old page's last PATCH must have ended: an upload receiving bytes is not replaced.
    const ledger = vop.vop.services.ingest.room.uploads;
    await expect.poll(() => ledger.liveFor(videoId)?.[1].receiving, { timeout: 10_000 }).toBe(0);
    phase = 'other file';
    await page.setInputFiles('#file', other);
    await done(page);
    const after = exchanges.filter((x) => x.phase === 'other file');
    expect(after.filter((x) => x.method === 'POST').map((x) => x.status)).toEqual([201]);
    expect(sha256File(path.join(vop.dataDir, 'media/sources', videoId, 'source'))).toBe(sha256File(other));
    expect(ledger.liveFor(videoId)).toBeUndefined();
    // The first upload's bytes are gone with it.
    expect(fs.readdirSync(path.join(vop.dataDir, 'media/incoming/tus'))).toEqual([]);
  });

  it('pauses and resumes', async () => {
    const videoId = await app.register();
    const page = await context.newPage();
    await page.goto(pageUrl(videoId));
    await page.setInputFiles('#file', clip);
    await expect.poll(acked, { timeout: 20_000 }).toBeGreaterThan(size * 0.25);
    // Under way: percentage, speed and time left.
    expect(await page.textContent('#percent')).toMatch(/^\d{1,2}%$/);
    expect(await page.textContent('#speed')).toMatch(/^\d+(\.\d)? (KB|MB)\/s$/);
    expect(await page.textContent('#eta')).toMatch(/^(\d+ s|\d+ min \d+ s) left$/);
    await page.click('#pause');
    expect(await page.getAttribute('body', 'data-state')).toBe('paused');
    expect(await page.isVisible('#resume')).toBe(true);
    await page.waitForTimeout(4 * PATCH_DELAY_MS);
    const pausedAt = acked();
    const count = exchanges.length;
    await page.waitForTimeout(4 * PATCH_DELAY_MS);
    expect(exchanges.length).toBe(count); // nothing moves while paused
    expect(pausedAt).toBeLessThan(size);

    phase = 'resumed';
    await page.click('#resume');
    await done(page);
    expect(exchanges.filter((x) => x.method === 'POST')).toHaveLength(1);
    // Resume asks the server where it stands (HEAD) and carries on from there.
    const resumed = exchanges.filter((x) => x.phase === 'resumed');
    expect(resumed[0]?.method).toBe('HEAD');
    const resumedAt = resumed.find((x) => x.method === 'PATCH')!.offset!;
    expect(resumedAt).toBe(resumed[0]!.answeredOffset);
    expect(resumedAt).toBeGreaterThanOrEqual(pausedAt);
    expect(bytesTaken('resumed')).toBe(size - resumedAt);
    await assertStored(videoId);
  });

  it('cancels: the server drops the partial upload, and the next pick starts afresh', async () => {
    const videoId = await app.register();
    const page = await context.newPage();
    await page.goto(pageUrl(videoId));
    await page.setInputFiles('#file', clip);
    await expect.poll(acked, { timeout: 20_000 }).toBeGreaterThan(size * 0.2);
    await page.click('#cancel');
    await expect.poll(() => page.textContent('#message')).toBe('Upload cancelled. Choose a file to start again.');
    expect(await page.getAttribute('body', 'data-state')).toBe('idle');
    // tus termination: DELETE on the upload, 204.
    expect(exchanges.filter((x) => x.method === 'DELETE').map((x) => x.status)).toEqual([204]);

    phase = 'again';
    await page.setInputFiles('#file', clip);
    await done(page);
    const again = exchanges.filter((x) => x.phase === 'again');
    expect(again[0]?.method).toBe('POST'); // nothing left to resume
    expect(bytesTaken('again')).toBe(size);
    await assertStored(videoId);
  });

  it('reports a lost network to onError and resumes by itself when it comes back (window form)', async () => {
    const videoId = await app.register();
    // The widget asks for the default chunk size; ask the page for small ones on the way.
    await context.route('**/widget/upload?*', (route) => route.continue({ url: `${route.request().url()}&chunkSize=${CHUNK}` }));
    host.page('/app.html', hostPageHtml(vop.baseUrl, 'initUploadWidget.js', widgetOptions(app, videoId)));
    const page = await context.newPage();
    await page.goto(`${host.origin}/app.html`);
    const [popup] = await Promise.all([page.waitForEvent('popup'), page.click('#open')]);
    // A file set before the page's script has run would be taken by no listener: the script
    // marks the page idle just before it listens for a pick.
    await popup.waitForSelector('body[data-state="idle"]', { state: 'attached' });
    await popup.setInputFiles('#file', clip);
    await expect.poll(acked, { timeout: 20_000 }).toBeGreaterThan(size * 0.25);

    await context.setOffline(true);
    const [error] = await waitForHostEvents(page, 1);
    expect(error).toEqual({ type: 'error', value: 'network error: the connection to the server was lost' });
    expect(await popup.getAttribute('body', 'data-state')).toBe('stalled');
    expect(await popup.textContent('#message')).toMatch(/The upload stopped: network error/);

    phase = 'back online';
    await context.setOffline(false);
    await done(popup);
    expect(await waitForHostEvents(page, 2)).toEqual([error, { type: 'success', value: videoId }]);
    expect(exchanges.filter((x) => x.method === 'POST')).toHaveLength(1);
    const resumedAt = exchanges.find((x) => x.phase === 'back online' && x.method === 'PATCH')!.offset!;
    expect(resumedAt).toBeGreaterThan(0);
    expect(bytesTaken('back online')).toBe(size - resumedAt);
    await assertStored(videoId);
  });
});
