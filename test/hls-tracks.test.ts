/**
 * Everything in the source reaches the player: a source with two audio languages plays in
 * hls.js with both tracks listed, named and tagged as the source has them, and switches between
 * them while playing (the second track's segments are then what it fetches); Chromium's own HLS
 * plays the same master to its end. The MP4 renditions carry the first track alone (ffprobe).
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMasterMedia, parseMasterPlaylist } from '../server/media/hls.js';
import { run } from '../server/media/ffmpegRunner.js';
import { launchBrowser } from './helpers/browser.js';
import { makeTempDir } from './helpers/clips.js';
import { SpecClient } from './helpers/client.js';
import { probe } from './helpers/probe.js';
import { placeSource, waitForStatus } from './helpers/processing.js';
import { startServer, type TestServer } from './helpers/server.js';

const require = createRequire(import.meta.url);
const HLS_JS = require.resolve('hls.js/dist/hls.min.js');

let t: TestServer;
let client: SpecClient;
let browser: Browser;
let dir: string;

beforeAll(async () => {
  dir = makeTempDir('vop-hls-tracks-');
  t = await startServer({
    processing: {
      preset: 'ultrafast',
      concurrency: 1,
      retry: { maxRetries: 0 },
      hlsSegmentSeconds: 2,
      ladder: {
        rungs: [
          { label: '360p', shortSide: 360, videoBitrateKbps: 900 },
          { label: '240p', shortSide: 240, videoBitrateKbps: 400 },
        ],
        audioBitrateKbps: 64,
      },
    },
  });
  client = await t.newApp();
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * A 640x360 H.264 Matroska file (copied as the first rendition) with two audio tracks told apart
 * by pitch: English at 440 Hz, French at 880 Hz, the second titled as a film's dub is (an MP4's
 * track has no title ffmpeg writes).
 */
async function twoLanguages(seconds: number): Promise<string> {
  const file = path.join(dir, 'two-languages.mkv');
  await run([
    '-f', 'lavfi', '-i', `testsrc2=s=640x360:r=30:d=${seconds}`,
    '-f', 'lavfi', '-i', `sine=f=440:sample_rate=48000:d=${seconds}`,
    '-f', 'lavfi', '-i', `sine=f=880:sample_rate=48000:d=${seconds}`,
    '-map', '0:v', '-map', '1:a', '-map', '2:a',
    '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-g', '30',
    '-c:a', 'aac', '-b:a', '64k',
    '-metadata:s:a:0', 'language=eng',
    '-metadata:s:a:1', 'language=fre', '-metadata:s:a:1', 'title=Français (doublage)',
    '-f', 'matroska', '-y', file,
  ]);
  return file;
}

/** Uploads `file` and waits for its whole ladder. */
async function publish(file: string): Promise<{ master: string; seconds: number; videoId: string; files: Array<{ VideoURL: string }> }> {
  const info = await probe(file);
  if (!info.isVideo) throw new Error(info.reason);
  const id = await client.register();
  await placeSource(t.vop, id, file);
  expect(await waitForStatus(t.vop, id, [1, 7], 120_000)).toBe(1);
  // The ladder lands after status 1: wait for the detail to list both rungs.
  for (let i = 0; i < 240; i++) {
    const detail = await client.get('/Api/Video/Get', { Id: id });
    const files = detail.body.VideoPlayFile as Array<{ VideoURL: string }>;
    if (files.length >= 2) return { master: detail.body.HlsURL as string, seconds: info.durationSeconds, videoId: id, files };
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('the ladder did not land');
}

/** A blank page on vop's origin, hls.js loaded, every request it makes noted. */
async function playerPage(): Promise<{ page: Page; requests: string[]; close: () => Promise<void> }> {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const requests: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.route(`${t.baseUrl}/__player`, (route) => route.fulfill({ contentType: 'text/html', body: '<!doctype html><html><body><video muted playsinline></video></body></html>' }));
  await page.goto(`${t.baseUrl}/__player`);
  await page.addScriptTag({ path: HLS_JS });
  return { page, requests, close: () => ctx.close() };
}

describe('a source with two audio languages', () => {
  let published: Awaited<ReturnType<typeof publish>>;
  beforeAll(async () => {
    published = await publish(await twoLanguages(8));
  }, 180_000);

  it('lists both tracks as an audio group, named and tagged from the source, the first the default, every variant playing with it', async () => {
    const text = await (await fetch(published.master)).text();
    const audio = parseMasterMedia(text).filter((m) => m.type === 'AUDIO');
    expect(audio.map((m) => ({ name: m.name, language: m.language, default: m.default }))).toEqual([
      { name: 'English', language: 'en', default: true },
      { name: 'Français (doublage)', language: 'fr', default: false },
    ]);
    const variants = parseMasterPlaylist(text);
    expect(variants.map((v) => v.uri.split('/')[0]).sort()).toEqual(['240p', '360p']);
    for (const v of variants) {
      expect(v.audioGroup).toBe(audio[0]!.groupId);
      expect(v.codecs).toMatch(/,mp4a\.40\.2$/);
    }
  });

  it('keeps the first track alone in the MP4 renditions, and no audio in the variants\' segments', async () => {
    for (const f of published.files) {
      const file = path.join(dir, path.basename(f.VideoURL));
      fs.writeFileSync(file, Buffer.from(await (await fetch(`${t.baseUrl}/media/play/${f.VideoURL}`)).arrayBuffer()));
      const info = await probe(file);
      expect(info.isVideo && info.audioTracks?.length).toBe(1);
    }
    const variant = parseMasterPlaylist(await (await fetch(published.master)).text())[0]!;
    const segment = path.join(dir, 'variant-seg.ts');
    fs.writeFileSync(segment, Buffer.from(await (await fetch(new URL('seg_00000.ts', new URL(variant.uri, published.master)))).arrayBuffer()));
    const info = await probe(segment);
    expect(info.isVideo && info.audioTracks).toEqual([]);
  });

  it('plays in hls.js with both tracks listed, and switches to the second while playing', async () => {
    const { page, requests, close } = await playerPage();
    try {
      const played = await page.evaluate(
        async ({ master }) => {
          const v = document.querySelector('video')!;
          const Hls = (window as unknown as { Hls: any }).Hls;
          const hls = new Hls({ enableWorker: false });
          const switched: number[] = [];
          hls.on(Hls.Events.AUDIO_TRACK_SWITCHED, (_: unknown, d: { id: number }) => switched.push(d.id));
          hls.loadSource(master);
          hls.attachMedia(v);
          return new Promise<{ tracks: Array<{ name: string; lang?: string }>; switched: number[]; ended: boolean; error: string | null; audioTrack: number }>((resolve) => {
            const done = (error: string | null) =>
              resolve({ tracks: hls.audioTracks.map((a: { name: string; lang?: string }) => ({ name: a.name, lang: a.lang })), switched, ended: v.ended, error, audioTrack: hls.audioTrack });
            const deadline = setTimeout(() => done('timed out'), 50_000);
            hls.on(Hls.Events.ERROR, (_: unknown, d: { fatal: boolean; details: string }) => {
              if (d.fatal) {
                clearTimeout(deadline);
                done(`hls.js: ${d.details}`);
              }
            });
            v.addEventListener('ended', () => {
              clearTimeout(deadline);
              done(null);
            });
            let asked = false;
            v.addEventListener('timeupdate', () => {
              if (asked || v.currentTime < 1) return;
              asked = true;
              hls.audioTrack = 1;
            });
            v.playbackRate = 2;
            v.addEventListener('loadedmetadata', () => void v.play().catch((e: Error) => done(`play() refused: ${e.message}`)), { once: true });
          });
        },
        { master: published.master },
      );
      expect(played.error).toBeNull();
      expect(played.ended).toBe(true);
      expect(played.tracks).toEqual([
        { name: 'English', lang: 'en' },
        { name: 'Français (doublage)', lang: 'fr' },
      ]);
      expect(played.switched).toContain(1);
      expect(played.audioTrack).toBe(1);
      // What it played after the switch came from the second track's rendition.
      expect(requests.some((u) => /\/hls\/[^/]+\/audio-1\/seg_\d+\.ts$/.test(u))).toBe(true);
    } finally {
      await close();
    }
  });

  it("plays to its end in Chromium's own HLS", async () => {
    const { page, close } = await playerPage();
    try {
      const played = await page.evaluate(async ({ master }) => {
        const v = document.querySelector('video')!;
        v.src = master;
        return new Promise<{ ended: boolean; duration: number; error: string | null }>((resolve) => {
          const done = (error: string | null) => resolve({ ended: v.ended, duration: v.duration, error });
          const deadline = setTimeout(() => done('timed out'), 50_000);
          v.addEventListener('ended', () => {
            clearTimeout(deadline);
            done(null);
          });
          v.addEventListener('error', () => {
            clearTimeout(deadline);
            done(`media error ${v.error?.code}: ${v.error?.message}`);
          });
          v.playbackRate = 2;
          v.addEventListener('loadedmetadata', () => void v.play().catch((e: Error) => done(`play() refused: ${e.message}`)), { once: true });
        });
      }, { master: published.master });
      expect(played.error).toBeNull();
      expect(played.ended).toBe(true);
      expect(Math.abs(played.duration - published.seconds)).toBeLessThan(0.2);
    } finally {
      await close();
    }
  });
});
