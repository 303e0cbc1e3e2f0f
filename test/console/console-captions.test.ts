/**
 * A video's captions in the console: the video page lists its caption tracks, adds one from an
 * SRT file through its form (and says what is wrong with a file the server refuses), removes one
 * after asking; the player offers each caption in its captions menu and shows the one chosen,
 * and lists the video's chapters, each seeking to where it starts. Real server, real transcode,
 * real Chromium.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../server/media/ffmpegRunner.js';
import { launchBrowser } from '../helpers/browser.js';
import { makeClip, makeTempDir } from '../helpers/clips.js';
import { ensureConsoleBuilt, logIntoConsole, videoJobsOver } from '../helpers/console.js';
import { placeSource, TINY_PROCESSING } from '../helpers/processing.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let browser: Browser;
let videoId = '';

/** A 4 s H.264 MP4 with two chapters, "Opening" (0–2 s) and "Ending" (2–4 s), and no subtitle stream. */
async function clipWithChapters(): Promise<string> {
  const dir = makeTempDir('vop-captions-');
  const plain = await makeClip({ seconds: 4, width: 320, height: 180, dir });
  const meta = path.join(dir, 'chapters.txt');
  fs.writeFileSync(meta, ';FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=2000\ntitle=Opening\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=2000\nEND=4000\ntitle=Ending\n');
  const out = path.join(dir, 'chapters.mp4');
  await run(['-i', plain, '-f', 'ffmetadata', '-i', meta, '-map', '0', '-map_chapters', '1', '-c', 'copy', '-f', 'mp4', '-y', out]);
  return out;
}

beforeAll(async () => {
  let clip: string;
  [s, browser, clip] = await Promise.all([startServer({ processing: TINY_PROCESSING }), launchBrowser(), clipWithChapters(), ensureConsoleBuilt()]);
  const client = await s.newApp('Captions site');
  videoId = await client.register({ VideoTitle: 'A clip with captions' });
  await placeSource(s.vop, videoId, clip);
  expect(await waitForStatus(s.vop, videoId, [1, 4, 7], { timeoutMs: 90_000 })).toBe(1);
  // The player is set up in the page (a chapter, a caption track chosen): no job's end may reload it meanwhile.
  await videoJobsOver(s, videoId);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

const SRT = '1\n00:00:00,000 --> 00:00:03,500\nHello from the captions test\n';
/** Latin-1, not UTF-8: "Café" with é as the single byte 0xE9. */
const LATIN1_SRT = Buffer.from('1\n00:00:01,000 --> 00:00:02,000\nCaf\xe9\n', 'latin1');

/** The `<video>`'s subtitle tracks: label, mode and the text of their cues (empty until loaded). */
function textTracks(page: Page) {
  return page.evaluate(() =>
    Array.from(document.querySelector<HTMLVideoElement>('figure.player video')!.textTracks)
      .filter((t) => t.kind === 'subtitles' || t.kind === 'captions')
      .map((t) => ({ label: t.label, language: t.language, mode: t.mode, cues: Array.from(t.cues ?? []).map((c) => (c as VTTCue).text) })),
  );
}

describe("a video's captions in the console", () => {
  it('adds an SRT file, plays it from the captions menu, refuses a file that is not UTF-8, and removes it after asking', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
    try {
      const page = await ctx.newPage();
      await logIntoConsole(page, s.baseUrl);
      await page.goto(`${s.baseUrl}/console/videos/${videoId}`);
      await page.locator('figure.player video[data-engine]').waitFor();
      const section = page.getByTestId('captions');
      const rows = section.locator('tr[data-caption]');
      const menu = page.getByRole('combobox', { name: 'Captions', exact: true });
      await section.getByText('No captions.').waitFor();
      expect(await menu.count()).toBe(0);

      // The source's chapters, under the player: each seeks to where it starts.
      const chapters = page.getByRole('navigation', { name: 'Chapters' });
      await expect.poll(() => chapters.getByRole('button').allTextContents(), { timeout: 15_000 }).toEqual(['0:00 Opening', '0:02 Ending']);
      await expect.poll(() => page.evaluate(() => document.querySelector<HTMLVideoElement>('figure.player video')!.readyState), { timeout: 15_000 }).toBeGreaterThanOrEqual(1);
      await chapters.getByRole('button', { name: 'Play from 0:02: Ending' }).click();
      await expect.poll(() => page.evaluate(() => document.querySelector<HTMLVideoElement>('figure.player video')!.currentTime)).toBeCloseTo(2, 1);

      // Adding one from an SRT file.
      await section.getByRole('textbox', { name: 'Language' }).fill('en');
      await section.getByRole('textbox', { name: 'Label (optional)' }).fill('English (test)');
      await section.getByLabel('File (SRT or WebVTT, UTF-8)').setInputFiles({ name: 'captions.srt', mimeType: 'application/x-subrip', buffer: Buffer.from(SRT) });
      await section.getByRole('button', { name: 'Add', exact: true }).click();
      await section.getByRole('status').filter({ hasText: 'Captions “English (test)” (en) added.' }).waitFor();
      // Its language, label and origin.
      await expect.poll(() => rows.locator('td:not(.actions)').allTextContents()).toEqual(['en', 'English (test)', 'added']);
      const stored = (await s.admin.request('GET', `/videos/${videoId}/captions`)).body.captions;
      expect(stored).toEqual([{ id: expect.any(String), language: 'en', label: 'English (test)', origin: 'api', url: expect.stringContaining(`/media/text/${videoId}/`) }]);
      // The form is empty again for the next one.
      expect(await section.getByRole('textbox', { name: 'Language' }).inputValue()).toBe('');

      // The player offers it, off until chosen; chosen, it shows and its cues load.
      await expect.poll(() => menu.locator('option').allTextContents()).toEqual(['Off', 'English (test)']);
      expect(await textTracks(page)).toEqual([{ label: 'English (test)', language: 'en', mode: 'disabled', cues: [] }]);
      await menu.selectOption({ label: 'English (test)' });
      await expect.poll(() => textTracks(page), { timeout: 15_000 }).toEqual([{ label: 'English (test)', language: 'en', mode: 'showing', cues: ['Hello from the captions test'] }]);
      // Back to Off: the track is no longer shown.
      await menu.selectOption({ label: 'Off' });
      await expect.poll(async () => (await textTracks(page)).map((t) => t.mode)).toEqual(['disabled']);
      await menu.selectOption({ label: 'English (test)' });

      // A file that is not UTF-8: the server's reason, and nothing added.
      await section.getByRole('textbox', { name: 'Language' }).fill('fr');
      await section.getByLabel('File (SRT or WebVTT, UTF-8)').setInputFiles({ name: 'latin1.srt', mimeType: 'application/x-subrip', buffer: LATIN1_SRT });
      await section.getByRole('button', { name: 'Add', exact: true }).click();
      const alert = section.getByRole('alert');
      await expect.poll(() => alert.textContent()).toContain('UTF-8');
      expect(await alert.textContent()).toMatch(/^Caption File Invalid/);
      expect(await rows.count()).toBe(1);
      expect((await s.admin.request('GET', `/videos/${videoId}/captions`)).body.captions).toHaveLength(1);

      // Removing it asks first; confirmed, it is gone from the list, the menu and the player.
      await rows.getByRole('button', { name: 'Remove the captions English (test) (en)' }).click();
      const dialog = page.getByRole('dialog', { name: 'Remove these captions?' });
      await dialog.waitFor();
      await dialog.getByRole('button', { name: 'Remove the captions', exact: true }).click();
      await section.getByRole('status').filter({ hasText: 'Captions “English (test)” removed.' }).waitFor();
      await expect.poll(() => rows.count()).toBe(0);
      await section.getByText('No captions.').waitFor();
      await expect.poll(() => menu.count()).toBe(0);
      await expect.poll(() => textTracks(page)).toEqual([]);
      expect((await s.admin.request('GET', `/videos/${videoId}/captions`)).body.captions).toEqual([]);
    } finally {
      await ctx.close();
    }
  }, 120_000);
});

describe("a video's seek previews in the console", () => {
  it('shows the storyboard tile under the pointer on the seek bar under the player, and seeks where it is clicked', async () => {
    await waitUntil('the storyboard', async () => ((await s.admin.request('GET', `/videos/${videoId}/playback`)).body.storyboardUrl as string) || undefined, { timeoutMs: 60_000 });
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
    try {
      const page = await ctx.newPage();
      await logIntoConsole(page, s.baseUrl);
      await page.goto(`${s.baseUrl}/console/videos/${videoId}`);
      await page.locator('figure.player video[data-engine]').waitFor();
      const bar = page.getByTestId('seek-previews');
      await bar.waitFor({ timeout: 15_000 });
      const box = (await bar.boundingBox())!;
      // 4 s of video, a tile every 2 s: three quarters of the bar is the second tile.
      await page.mouse.move(box.x + box.width * 0.75, box.y + box.height / 2);
      const tile = page.getByTestId('seek-preview').locator('.seek-previews-tile');
      await expect.poll(() => tile.getAttribute('data-cue')).toBe('0.jpg#160,0');
      expect(await page.getByTestId('seek-preview').locator('span').textContent()).toBe('0:03');
      await page.mouse.click(box.x + box.width * 0.5, box.y + box.height / 2);
      await expect.poll(() => page.evaluate(() => Math.round(document.querySelector<HTMLVideoElement>('figure.player video')!.currentTime))).toBe(2);
    } finally {
      await ctx.close();
    }
  }, 90_000);
});
