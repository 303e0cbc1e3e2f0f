/**
 * Everything in the source reaches the player: a source with two audio languages plays in
 * hls.js with both tracks listed, named and tagged as the source has them, and switches between
 * them while playing (the second track's segments are then what it fetches); Chromium's own HLS
 * plays the same master to its end. The MP4 renditions carry the first track alone (ffprobe).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMasterMedia, parseMasterPlaylist } from '../../server/media/hls.js';
import { run } from '../../server/media/ffmpegRunner.js';
import { launchBrowser } from '../helpers/browser.js';
import { openPlayerPage } from '../helpers/playerPage.js';
import { makeTempDir } from '../helpers/clips.js';
import { twoLanguages } from '../helpers/trackSources.js';
import { SpecClient } from '../helpers/client.js';
import { probe } from '../helpers/probe.js';
import { placeSource } from '../helpers/processing.js';
import { notYet, waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

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

/** Uploads `file` and waits for its whole ladder. */
async function publish(file: string): Promise<{ master: string; seconds: number; videoId: string; files: Array<{ VideoURL: string }> }> {
  const info = await probe(file);
  if (!info.isVideo) throw new Error(info.reason);
  const id = await client.register();
  await placeSource(t.vop, id, file);
  expect(await waitForStatus(t.vop, id, [1, 7], { timeoutMs: 120_000 })).toBe(1);
  // The ladder lands after status 1: wait for the detail to list both rungs.
  return waitUntil('the ladder to land', async () => {
    const detail = await client.get('/Api/Video/Get', { Id: id });
    const files = detail.body.VideoPlayFile as Array<{ VideoURL: string }>;
    return files.length >= 2 ? { master: detail.body.HlsURL as string, seconds: info.durationSeconds, videoId: id, files } : notYet(`${files.length} files`);
  }, { timeoutMs: 60_000, pollMs: 250 });
}

describe('a source with two audio languages, two subtitle languages and chapters', () => {
  let published: Awaited<ReturnType<typeof publish>>;
  beforeAll(async () => {
    published = await publish(await twoLanguages(dir, 8));
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

  it('lists both subtitle languages as a subtitle group every variant names, and the detail lists them and the chapters', async () => {
    const text = await (await fetch(published.master)).text();
    const subtitles = parseMasterMedia(text).filter((m) => m.type === 'SUBTITLES');
    expect(subtitles.map((m) => ({ name: m.name, language: m.language, default: m.default }))).toEqual([
      { name: 'English', language: 'en', default: false },
      { name: 'Deutsch', language: 'de', default: false },
    ]);
    for (const v of parseMasterPlaylist(text)) expect(v.subtitlesGroup).toBe(subtitles[0]!.groupId);
    const detail = (await client.get('/Api/Video/Get', { Id: published.videoId })).body;
    expect(detail.Captions.map((c: { Language: string; Label: string; Origin: string }) => [c.Language, c.Label, c.Origin])).toEqual([
      ['en', 'English', 'source'],
      ['de', 'Deutsch', 'source'],
    ]);
    // The cues at the times the file has them (ffmpeg wrote the test file's subtitles a few
    // milliseconds in, after the audio's priming).
    const english = await (await fetch(detail.Captions[0].URL)).text();
    expect(english).toMatch(/^WEBVTT\n\n00:00:01\.0\d\d --> 00:00:02\.5\d\d\nHello\n\n00:00:05\.0\d\d --> 00:00:06\.0\d\d\nGoodbye\n\n$/);
    const chapters = await fetch(detail.ChaptersURL);
    expect(chapters.headers.get('content-type')).toMatch(/^text\/vtt/);
    expect(await chapters.text()).toBe('WEBVTT\n\n00:00:00.000 --> 00:00:04.000\nOpening\n\n00:00:04.000 --> 00:00:08.000\nEnding\n\n');
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
    const { page, requests, close } = await openPlayerPage(browser, t.baseUrl, { hlsJs: true });
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
          type Track = { name: string; lang?: string };
          return new Promise<{ tracks: Track[]; subtitles: Track[]; switched: number[]; ended: boolean; error: string | null; audioTrack: number }>((resolve) => {
            const named = (list: Track[]) => list.map((a) => ({ name: a.name, lang: a.lang }));
            const done = (error: string | null) => resolve({ tracks: named(hls.audioTracks), subtitles: named(hls.subtitleTracks), switched, ended: v.ended, error, audioTrack: hls.audioTrack });
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
      expect(played.subtitles).toEqual([
        { name: 'English', lang: 'en' },
        { name: 'Deutsch', lang: 'de' },
      ]);
      expect(played.switched).toContain(1);
      expect(played.audioTrack).toBe(1);
      // What it played after the switch came from the second track's rendition.
      expect(requests.some((u) => /\/hls\/[^/]+\/audio-1\/seg_\d+\.ts$/.test(u))).toBe(true);
    } finally {
      await close();
    }
  });

  it("shows a caption track added through the API in hls.js's subtitle tracks within seconds, its cues at their times, with no re-encode", async () => {
    // Transcodes and ladders (the seek previews' job comes on its own after the ladder).
    const encodes = async () => (await t.vop.stores.jobs.list({ videoId: published.videoId })).filter((j) => j.type !== 'storyboard').length;
    const jobsBefore = await encodes();
    const body = new FormData();
    for (const [k, v] of Object.entries({ ...client.auth(), VideoId: published.videoId, Language: 'pt-BR', Label: 'Português' })) body.append(k, v);
    body.append('file', new Blob(['1\n00:00:03,000 --> 00:00:04,000\nOlá\n']), 'pt.srt');
    const added = (await (await fetch(`${t.baseUrl}/Api/Video/Caption`, { method: 'POST', body })).json()) as any;
    expect(added.AuthMsg.ResultCode).toBe('1');
    const since = Date.now();
    // The master lists it at once: no job, no re-encode.
    const names = async () => parseMasterMedia(await (await fetch(published.master)).text()).filter((m) => m.type === 'SUBTITLES').map((m) => m.name);
    await expect.poll(names, { timeout: 5000 }).toEqual(['English', 'Deutsch', 'Português']);
    expect(Date.now() - since).toBeLessThan(5000);
    expect(await encodes()).toBe(jobsBefore);

    const { page, close } = await openPlayerPage(browser, t.baseUrl, { hlsJs: true });
    try {
      const seen = await page.evaluate(async ({ master }) => {
        const v = document.querySelector('video')!;
        const Hls = (window as unknown as { Hls: any }).Hls;
        const hls = new Hls({ enableWorker: false });
        hls.loadSource(master);
        hls.attachMedia(v);
        return new Promise<{ subtitles: string[]; cues: Array<{ start: number; end: number; text: string }>; error: string | null }>((resolve) => {
          const deadline = setTimeout(() => resolve({ subtitles: [], cues: [], error: 'timed out' }), 40_000);
          hls.on(Hls.Events.MANIFEST_PARSED, () => void v.play());
          v.addEventListener('timeupdate', () => {
            // Turned on once playing, as a viewer does: hls.js settles its own choice (none, as
            // no track is DEFAULT) after it read the tracks.
            const wanted = hls.subtitleTracks.findIndex((s: { name: string }) => s.name === 'Português');
            if (hls.subtitleTrack !== wanted) hls.subtitleTrack = wanted;
            const track = Array.from(v.textTracks).find((tt) => tt.label === 'Português');
            const cues = track?.cues ? Array.from(track.cues as unknown as ArrayLike<VTTCue>) : [];
            if (cues.length === 0 || v.currentTime < 4.5) return;
            clearTimeout(deadline);
            resolve({ subtitles: hls.subtitleTracks.map((s: { name: string }) => s.name), cues: cues.map((c) => ({ start: c.startTime, end: c.endTime, text: c.text })), error: null });
          });
        });
      }, { master: published.master });
      expect(seen.error).toBeNull();
      expect(seen.subtitles).toEqual(['English', 'Deutsch', 'Português']);
      // Where the file put it on the video's timeline, within a frame.
      expect(seen.cues).toHaveLength(1);
      expect(seen.cues[0]!.text).toBe('Olá');
      expect(Math.abs(seen.cues[0]!.start - 3)).toBeLessThan(0.05);
      expect(Math.abs(seen.cues[0]!.end - 4)).toBeLessThan(0.05);
    } finally {
      await close();
    }

    // Removed: gone from the master at once.
    const removed = await client.post('/Api/Video/Caption/Delete', { VideoId: published.videoId, CaptionId: added.Caption.Id });
    expect(removed.body.AuthMsg.ResultCode).toBe('1');
    await expect.poll(names, { timeout: 5000 }).toEqual(['English', 'Deutsch']);
  });

  it("plays to its end in Chromium's own HLS", async () => {
    const { page, close } = await openPlayerPage(browser, t.baseUrl, { hlsJs: true });
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

describe('a caption track added before the file arrives', () => {
  it('is in the master, with its HLS rendition cut as the variants are, once the video is playable', async () => {
    const id = await client.register();
    const body = new FormData();
    for (const [k, v] of Object.entries({ ...client.auth(), VideoId: id, Language: 'es' })) body.append(k, v);
    body.append('file', new Blob([Buffer.from('1\n00:00:01,000 --> 00:00:02,000\nHola\n')]), 'es.srt');
    const added = (await (await fetch(`${t.baseUrl}/Api/Video/Caption`, { method: 'POST', body })).json()) as any;
    expect(added.AuthMsg.ResultCode).toBe('1');

    const file = path.join(dir, 'plain.mp4');
    await run(['-f', 'lavfi', '-i', 'testsrc2=s=320x180:r=30:d=5', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '30', '-f', 'mp4', '-y', file]);
    await placeSource(t.vop, id, file);
    expect(await waitForStatus(t.vop, id, [1, 7], { timeoutMs: 120_000 })).toBe(1);
    const detail = (await client.get('/Api/Video/Get', { Id: id })).body;
    expect(detail.Captions.map((c: { Id: string; Origin: string }) => [c.Id, c.Origin])).toEqual([[added.Caption.Id, 'api']]);
    const master = await (await fetch(detail.HlsURL)).text();
    const subtitles = parseMasterMedia(master).filter((m) => m.type === 'SUBTITLES');
    expect(subtitles.map((m) => [m.name, m.language])).toEqual([['Spanish', 'es']]);
    // Cut as the first variant is: as many segments, of the same lengths.
    const lengths = async (url: string) => [...(await (await fetch(url)).text()).matchAll(/^#EXTINF:([\d.]+)/gm)].map((m) => Number(m[1]));
    const variant = await lengths(new URL(parseMasterPlaylist(master)[0]!.uri, detail.HlsURL).href);
    expect(await lengths(new URL(subtitles[0]!.uri, detail.HlsURL).href)).toEqual(variant);
  }, 180_000);
});
