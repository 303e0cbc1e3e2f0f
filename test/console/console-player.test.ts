/**
 * A video's page has one player (issue 13, item 3): the HLS master played adaptively (by the
 * browser where it has HLS of its own, else by hls.js, which the console fetches only then), a
 * quality menu over the MP4 renditions that keeps the position, the cover as poster, a share link
 * and an embed snippet that play; a deleted video says it was deleted. Real server, real
 * transcode, real Chromium.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { makeClip } from '../helpers/clips.js';
import type { SpecClient } from '../helpers/client.js';
import { ensureConsoleBuilt, logIntoConsole, videoJobsOver } from '../helpers/console.js';
import { TINY_PROCESSING } from '../helpers/processing.js';
import { waitForStatus } from '../helpers/wait.js';
import { ROOT, startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let browser: Browser;
let client: SpecClient;
let videoId = '';
let clip = '';

/** Uploads the clip server-side (spec 4.3) to a new video and waits until it is playable. */
async function playableVideo(title: string): Promise<string> {
  const id = await client.register({ VideoTitle: title });
  const form = new FormData();
  for (const [k, v] of Object.entries({ ...client.auth(), VideoId: id })) form.append(k, v);
  form.append('file', new Blob([Uint8Array.from(fs.readFileSync(clip))], { type: 'video/mp4' }), 'clip.mp4');
  expect((await fetch(`${s.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form })).status).toBe(200);
  expect(await waitForStatus(s.vop, id, [1], { timeoutMs: 60_000 })).toBe(1);
  await videoJobsOver(s, id);
  return id;
}

beforeAll(async () => {
  [s, browser, clip] = await Promise.all([startServer({ processing: TINY_PROCESSING }), launchBrowser(), makeClip({ seconds: 4, width: 320, height: 180 }), ensureConsoleBuilt()]);
  client = await s.newApp('Player site');
  videoId = await playableVideo('A clip to play');
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

/** A logged-in page; `noNativeHls` makes the browser say it has no HLS of its own, as Firefox and most Chromium builds do. */
async function consolePage(opts: { noNativeHls?: boolean } = {}): Promise<{ ctx: BrowserContext; page: Page; requests: string[] }> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US' });
  if (opts.noNativeHls) {
    await ctx.addInitScript(() => {
      const real = HTMLMediaElement.prototype.canPlayType;
      HTMLMediaElement.prototype.canPlayType = function (type: string) {
        return /mpegurl/i.test(type) ? '' : real.call(this, type);
      };
    });
  }
  const page = await ctx.newPage();
  const requests: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  await logIntoConsole(page, s.baseUrl);
  return { ctx, page, requests };
}

/** Plays the page's one player muted until it has played `seconds`, then pauses; what it played. */
function playFor(page: Page, seconds: number) {
  return page.evaluate(async (secs) => {
    const v = document.querySelector<HTMLVideoElement>('figure.player video')!;
    v.muted = true;
    await v.play();
    const until = Date.now() + 20_000;
    while (v.currentTime < secs && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    v.pause();
    return { engine: v.dataset.engine, readyState: v.readyState, currentTime: v.currentTime, width: v.videoWidth, height: v.videoHeight, src: v.currentSrc, poster: v.poster };
  }, seconds);
}

/** Plays an embed snippet alone on a page of its own, as another site would hold it, muted, for up to 0.3 s. */
async function embedPlays(ctx: BrowserContext, embed: string): Promise<{ currentTime: number; width: number }> {
  const other = await ctx.newPage();
  await other.setContent(`<!doctype html><html><body>${embed}</body></html>`);
  return other.evaluate(async () => {
    const v = document.querySelector('video')!;
    v.muted = true;
    await v.play();
    const until = Date.now() + 20_000;
    while (v.currentTime < 0.3 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    return { currentTime: v.currentTime, width: v.videoWidth };
  });
}

describe("a video's player", () => {
  it('plays the HLS master with hls.js where the browser has no HLS, fetching hls.js only then', async () => {
    const { ctx, page, requests } = await consolePage({ noNativeHls: true });
    try {
      // The overview loaded the console without hls.js.
      expect(requests.filter((u) => /\/console\/assets\/hls/.test(u))).toEqual([]);
      await page.goto(`${s.baseUrl}/console/videos/${videoId}`);
      await page.locator('figure.player video[data-engine="hls.js"]').waitFor();
      const played = await playFor(page, 0.5);
      expect(played.currentTime).toBeGreaterThan(0.4);
      expect(played.readyState).toBeGreaterThanOrEqual(2);
      expect(played.src).toMatch(/^blob:/); // Media Source Extensions, fed by hls.js
      expect(requests.some((u) => /\/console\/assets\/hls[^/]*\.js$/.test(u))).toBe(true);
      expect(requests.some((u) => u.endsWith(`/media/hls/${videoId}/master.m3u8`))).toBe(true);
    } finally {
      await ctx.close();
    }
  }, 60_000);

  it('plays the largest MP4 instead, and says why, when the HLS stream cannot be had', async () => {
    const { ctx, page } = await consolePage({ noNativeHls: true });
    try {
      // As when the public URL is another host that the console's CSP keeps from hls.js.
      await page.route('**/master.m3u8', (route) => route.abort('blockedbyclient'));
      await page.goto(`${s.baseUrl}/console/videos/${videoId}`);
      await page.locator('figure.player video[data-engine="mp4"]').waitFor();
      await page.getByRole('alert').filter({ hasText: 'The HLS stream could not be played here' }).waitFor();
      const played = await playFor(page, 0.3);
      expect(played).toMatchObject({ engine: 'mp4', width: 320, height: 180 });
    } finally {
      await ctx.close();
    }
  }, 60_000);

  // hls.js empties the element as it is torn down: the position is kept from before that.
  it.each([
    { engine: 'native', noNativeHls: false },
    { engine: 'hls.js', noNativeHls: true },
  ])('plays adaptively by default ($engine), switches to an MP4 rendition from the quality menu keeping the position, and shows the cover as poster', async ({ engine, noNativeHls }) => {
    const { ctx, page } = await consolePage({ noNativeHls });
    try {
      await page.goto(`${s.baseUrl}/console/videos/${videoId}`);
      const pb = (await s.admin.request('GET', `/videos/${videoId}/playback`)).body;
      await page.locator('figure.player video[data-engine]').waitFor();
      expect(await page.locator('video').count()).toBe(1);
      const auto = await playFor(page, 0.5);
      expect(auto.engine).toBe(engine);
      expect(auto.currentTime).toBeGreaterThan(0.4);
      expect(auto.poster).toBe(pb.coverUrl);

      await page.getByLabel('Quality').selectOption('120p');
      await page.locator('figure.player video[data-engine="mp4"]').waitFor();
      // The position carries over to the new rendition.
      await expect.poll(() => page.evaluate(() => document.querySelector<HTMLVideoElement>('figure.player video')!.readyState)).toBeGreaterThanOrEqual(1);
      const at = await page.evaluate(() => document.querySelector<HTMLVideoElement>('figure.player video')!.currentTime);
      expect(at).toBeGreaterThan(0.3);
      const small = await playFor(page, at + 0.3);
      expect(small).toMatchObject({ engine: 'mp4', width: 214, height: 120 });
      expect(small.src).toBe(pb.renditions.find((r: { label: string }) => r.label === '120p').playUrl);
    } finally {
      await ctx.close();
    }
  }, 60_000);

  it('gives a share link and an embed snippet that play on another page', async () => {
    const { ctx, page } = await consolePage();
    try {
      await page.goto(`${s.baseUrl}/console/videos/${videoId}`);
      const pb = (await s.admin.request('GET', `/videos/${videoId}/playback`)).body;
      await page.locator('figure.player video[data-engine]').waitFor();
      await page.getByLabel('Quality').selectOption('180p');
      const share = page.locator('.share .copy-value code');
      await expect.poll(() => share.textContent()).toBe(pb.renditions.find((r: { label: string }) => r.label === '180p').playUrl);
      const res = await fetch((await share.textContent())!);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^video\/mp4/);

      const embed = (await page.locator('code[data-snippet="embed"]').textContent())!;
      expect(embed).toContain(`poster="${pb.coverUrl}"`);
      expect(embed).toContain(`<source src="${pb.hlsUrl}" type="application/vnd.apple.mpegurl">`);
      // The snippet alone, as another site's page would hold it, plays.
      const played = await embedPlays(ctx, embed);
      expect(played.currentTime).toBeGreaterThan(0.2);
      expect(played.width).toBeGreaterThan(0);
    } finally {
      await ctx.close();
    }
  }, 60_000);

  it("plays a signed application's video, and shares it for the lifetime chosen", async () => {
    const signedApp = await s.newApp('Signed site');
    expect((await s.admin.request('PATCH', `/apps/${signedApp.appId}`, { mediaAccess: 'signed', mediaTtlSeconds: 600 })).status).toBe(200);
    const previous = client;
    client = signedApp;
    const id = await playableVideo('A signed clip').finally(() => (client = previous));
    const { ctx, page, requests } = await consolePage({ noNativeHls: true });
    try {
      await page.goto(`${s.baseUrl}/console/videos/${id}`);
      await page.locator('figure.player video[data-engine="hls.js"]').waitFor();
      const played = await playFor(page, 0.5);
      expect(played.currentTime).toBeGreaterThan(0.4);
      // Every media request the player made was a signed one, segments included.
      const media = requests.filter((u) => u.includes('/media/'));
      expect(media.some((u) => /\/seg_\d+\.(ts|m4s)$/.test(u))).toBe(true);
      expect(media.every((u) => u.includes('/media/s/'))).toBe(true);

      // The share link, good for a day once chosen.
      const until = page.locator('[data-signed-until]');
      const before = Number(await until.getAttribute('data-signed-until'));
      expect(before).toBeLessThan(Date.now() + 700_000);
      await page.getByLabel('Works for').selectOption({ label: '24 hours' });
      await expect.poll(async () => Number(await until.getAttribute('data-signed-until'))).toBeGreaterThan(Date.now() + 86_000_000);
      const share = (await page.locator('.share .copy-value code').textContent())!;
      expect(share).toContain('/media/s/');
      expect((await fetch(share)).status).toBe(200);
      // Its plain address is refused.
      expect((await fetch(share.replace(/\/media\/s\/[^/]+\//, '/media/'))).status).toBe(403);
      // The embed code plays on another page.
      const embed = (await page.locator('code[data-snippet="embed"]').textContent())!;
      expect(embed).toContain('/media/s/');
      expect((await embedPlays(ctx, embed)).currentTime).toBeGreaterThan(0.2);
    } finally {
      await ctx.close();
    }
  }, 90_000);

  it("keeps a signed video playing from where it was when the page is given a new address for it", async () => {
    const signedApp = await s.newApp('Rolling site');
    expect((await s.admin.request('PATCH', `/apps/${signedApp.appId}`, { mediaAccess: 'signed', mediaTtlSeconds: 600 })).status).toBe(200);
    const previous = client;
    client = signedApp;
    const id = await playableVideo('A signed clip that plays on').finally(() => (client = previous));
    const { ctx, page, requests } = await consolePage({ noNativeHls: true });
    const masters = () => [...new Set(requests.filter((u) => u.endsWith(`/hls/${id}/master.m3u8`)))];
    try {
      await page.goto(`${s.baseUrl}/console/videos/${id}`);
      await page.locator('figure.player video[data-engine="hls.js"]').waitFor();
      // A quarter speed, so the 4 s clip is still playing when the new address comes.
      await page.evaluate(async () => {
        const v = document.querySelector<HTMLVideoElement>('figure.player video')!;
        v.muted = true;
        v.defaultPlaybackRate = v.playbackRate = 0.25;
        await v.play();
      });
      const position = () => page.evaluate(() => {
        const v = document.querySelector<HTMLVideoElement>('figure.player video')!;
        return { at: v.currentTime, playing: !v.paused && !v.ended };
      });
      await expect.poll(async () => (await position()).at, { timeout: 20_000 }).toBeGreaterThan(0.3);
      expect(masters()).toHaveLength(1);

      // Another lifetime: the next playback the page loads signs another address. A caption
      // added from the page reloads it, as every job of the video that changes state does.
      expect((await s.admin.request('PATCH', `/apps/${signedApp.appId}`, { mediaTtlSeconds: 1200 })).status).toBe(200);
      const before = (await position()).at;
      const section = page.getByTestId('captions');
      await section.getByRole('textbox', { name: 'Language' }).fill('en');
      await section.getByLabel('File (SRT or WebVTT, UTF-8)').setInputFiles({ name: 'c.srt', mimeType: 'application/x-subrip', buffer: Buffer.from('1\n00:00:00,000 --> 00:00:01,000\nHello\n') });
      await section.getByRole('button', { name: 'Add', exact: true }).click();
      await expect.poll(masters, { timeout: 15_000 }).toHaveLength(2);
      // The player went on from where it was, playing, under the new address.
      await expect.poll(position, { timeout: 15_000 }).toMatchObject({ at: expect.toSatisfy((at: number) => at > before + 0.1), playing: true });
      expect(await page.locator('figure.player video').getAttribute('data-engine')).toBe('hls.js');
    } finally {
      await ctx.close();
    }
  }, 90_000);

  it('says a deleted video was deleted, not that it has no cover yet', async () => {
    const id = await playableVideo('Soon deleted');
    expect((await s.admin.request('DELETE', `/videos/${id}`)).status).toBeLessThan(300);
    const { ctx, page } = await consolePage();
    try {
      await page.goto(`${s.baseUrl}/console/videos/${id}`);
      await page.getByTestId('deleted').waitFor();
      const text = (await page.locator('main').textContent()) ?? '';
      expect(text).toContain('This video was deleted');
      expect(text).toContain('Deleted: no covers any more.');
      expect(text).not.toContain('No cover yet');
      expect(await page.locator('video').count()).toBe(0);
    } finally {
      await ctx.close();
    }
  }, 90_000);

  it('keeps hls.js out of the main script', () => {
    const index = fs.readFileSync(path.join(ROOT, 'renderer/dist/index.html'), 'utf8');
    const main = /src="\/console\/(assets\/[^"]+\.js)"/.exec(index)![1]!;
    const assets = fs.readdirSync(path.join(ROOT, 'renderer/dist/assets'));
    // hls.js names its events "hlsManifestParsed" and so on: only its own chunk has them.
    expect(fs.readFileSync(path.join(ROOT, 'renderer/dist', main), 'utf8')).not.toContain('hlsManifestParsed');
    const chunk = assets.find((a) => /^hls.*\.js$/.test(a));
    expect(chunk).toBeDefined();
    expect(fs.readFileSync(path.join(ROOT, 'renderer/dist/assets', chunk!), 'utf8')).toContain('hlsManifestParsed');
  });
});
