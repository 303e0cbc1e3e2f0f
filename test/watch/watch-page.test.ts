/**
 * The watch page (docs/watch.md) in Chromium, inside an iframe of another site's page: it plays
 * at 1280 and 320 px wide with hls.js, its menu switches quality, captions and audio, its URL
 * options hold, it loads nothing from elsewhere; a signed application's page opens only with the
 * video's media token; oEmbed answers for a watch link; what is not playable shows a message.
 */
import fs from 'node:fs';
import type { Browser, Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, startHostServer, type HostServer } from '../helpers/browser.js';
import { makeTempDir } from '../helpers/clips.js';
import type { SpecClient } from '../helpers/client.js';
import { placeSource } from '../helpers/processing.js';
import { notYet, waitForStatus, waitUntil } from '../helpers/wait.js';
import { execFileSync } from 'node:child_process';
import { startServer, type TestServer } from '../helpers/server.js';
import { twoLanguages } from '../helpers/trackSources.js';

let t: TestServer;
let browser: Browser;
let host: HostServer;
let dir: string;
let publicApp: SpecClient;
let signedApp: SpecClient;
let publicId: string;
let signedId: string;

/** Uploads `file` for `client` and waits for both rungs. */
async function publish(client: SpecClient, file: string): Promise<string> {
  const id = await client.register({ VideoTitle: 'Two "languages" <b>&</b> chapters', Description: 'A test video.' });
  await placeSource(t.vop, id, file);
  expect(await waitForStatus(t.vop, id, [1, 7], { timeoutMs: 120_000 })).toBe(1);
  await waitUntil('the ladder to land', async () => {
    const n = (await t.vop.stores.videos.renditions(id)).length;
    return n >= 2 ? true : notYet(`${n} renditions`);
  }, { timeoutMs: 60_000, pollMs: 250 });
  return id;
}

beforeAll(async () => {
  dir = makeTempDir('vop-watch-');
  t = await startServer({
    processing: {
      preset: 'ultrafast',
      concurrency: 1,
      retry: { maxRetries: 0 },
      hlsSegmentSeconds: 2,
      ladder: { rungs: [{ label: '360p', shortSide: 360, videoBitrateKbps: 900 }, { label: '240p', shortSide: 240, videoBitrateKbps: 400 }], audioBitrateKbps: 64 },
    },
  });
  publicApp = await t.newApp('public');
  signedApp = await t.newApp('signed');
  expect((await t.admin.request('PATCH', `/apps/${signedApp.appId}`, { mediaAccess: 'signed', mediaTtlSeconds: 600 })).status).toBe(200);
  const source = await twoLanguages(dir, 8);
  publicId = await publish(publicApp, source);
  signedId = await publish(signedApp, source);
  browser = await launchBrowser();
  host = await startHostServer();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await host?.close();
  await t?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A picture's size, by ffprobe. */
async function probeSize(file: string): Promise<{ width: number; height: number }> {
  const [width, height] = execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'stream=width,height', '-of', 'csv=p=0', file], { encoding: 'utf8' }).trim().split(',').map(Number);
  return { width: width!, height: height! };
}

async function embedUrlOf(client: SpecClient, id: string): Promise<string> {
  const detail = await client.get('/Api/Video/Get', { Id: id });
  return detail.body.EmbedURL as string;
}

/** Another site's page framing `src` at `width` x `height`; the frame, and every address the page loaded. */
async function framed(src: string, width: number, height: number): Promise<{ page: Page; frame: Frame; requests: string[] }> {
  const page = await browser.newPage({ viewport: { width: width + 40, height: height + 40 } });
  const requests: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  const path = `/host-${width}-${Math.random().toString(36).slice(2)}.html`;
  host.page(path, `<!doctype html><body style="margin:0"><iframe id="f" src="${src.replace(/"/g, '&quot;')}" width="${width}" height="${height}" style="border:0" allow="autoplay; fullscreen"></iframe></body>`);
  await page.goto(`${host.origin}${path}`);
  const frame = (await (await page.$('#f'))!.contentFrame())!;
  await frame.waitForSelector('#vop-watch[data-engine]', { timeout: 30_000 });
  return { page, frame, requests };
}

/** Plays until the video has played `seconds` of itself (or ends). */
async function playFor(frame: Frame, seconds: number): Promise<void> {
  await frame.evaluate(() => {
    const v = document.querySelector('video')!;
    v.muted = true;
    return v.play();
  });
  await frame.waitForFunction((s) => {
    const v = document.querySelector('video')!;
    return v.currentTime >= s || v.ended;
  }, seconds, { timeout: 30_000 });
}

/** The menu's sections and their items, each with whether it is checked. */
async function menuOf(frame: Frame): Promise<Record<string, string[]>> {
  await frame.click('#vop-menu-button');
  const sections = await frame.evaluate(() => {
    const out: Record<string, string[]> = {};
    let current = '';
    for (const el of Array.from(document.querySelectorAll('#vop-menu > *'))) {
      if (el.tagName === 'H2') out[(current = el.textContent!)] = [];
      else out[current]!.push(`${el.textContent}${el.getAttribute('aria-checked') === 'true' ? ' *' : ''}`);
    }
    return out;
  });
  await frame.press('#vop-menu-button', 'Escape');
  return sections;
}

async function choose(frame: Frame, label: string): Promise<void> {
  await frame.click('#vop-menu-button');
  await frame.click(`#vop-menu button:text-is("${label}")`);
}

describe('the watch page of a public application', () => {
  it('is in the detail, plays in an iframe at 1280 px with hls.js, and switches quality, captions and audio from its menu', async () => {
    const src = await embedUrlOf(publicApp, publicId);
    expect(src).toBe(`${t.baseUrl}/embed/${publicId}`);
    const { page, frame, requests } = await framed(src, 1280, 720);
    try {
      expect(await frame.getAttribute('#vop-watch', 'data-engine')).toBe('hls.js');
      await playFor(frame, 1);
      const menu = await menuOf(frame);
      expect(menu.Quality).toEqual(['Auto *', '360p', '240p']);
      expect(menu.Captions).toEqual(['Off *', 'English', 'Deutsch']);
      expect(menu.Audio).toEqual(['English *', 'Français (doublage)']);

      await choose(frame, '240p');
      await choose(frame, 'English');
      await choose(frame, 'Français (doublage)');
      await frame.evaluate(() => {
        const v = document.querySelector('video')!;
        v.currentTime = 0.5;
      });
      // "Hello" is on from 1 s to 2.5 s in the English captions.
      await frame.waitForFunction(() => {
        const track = Array.from(document.querySelector('video')!.textTracks).find((tt) => tt.mode === 'showing');
        return track?.language === 'en' && Array.from(track.activeCues ?? []).some((c) => (c as VTTCue).text === 'Hello');
      }, undefined, { timeout: 20_000 });
      const after = await menuOf(frame);
      expect(after.Quality).toContain('240p *');
      expect(after.Captions).toContain('English *');
      expect(after.Audio).toContain('Français (doublage) *');
      expect(requests.some((u) => u.includes(`/hls/${publicId}/240p/`))).toBe(true);
      // The second audio track's own segments are fetched once it is chosen.
      await frame.waitForFunction(() => !document.querySelector('video')!.paused);
      await waitUntil('a segment of the second audio track', () => requests.some((u) => /\/hls\/[^/]+\/audio-1\/seg_\d+\.ts$/.test(u)) || undefined, { timeoutMs: 10_000, pollMs: 50 });

      // It plays to its end.
      await frame.evaluate(() => {
        const v = document.querySelector('video')!;
        v.currentTime = v.duration - 1.5;
      });
      await frame.waitForFunction(() => document.querySelector('video')!.ended, undefined, { timeout: 30_000 });
      // Nothing from elsewhere: every address the frame's page loaded is vop's (the host page aside).
      const outside = requests.filter((u) => !u.startsWith(t.baseUrl) && !u.startsWith(host.origin) && !u.startsWith('blob:') && !u.startsWith('data:'));
      expect(outside).toEqual([]);
      expect(await frame.evaluate(() => document.getElementById('vop-error')!.hidden)).toBe(true);
    } finally {
      await page.close();
    }
  }, 120_000);

  it('fits 320 px: nothing wider than the frame, the menu button within it, and it plays', async () => {
    const { page, frame } = await framed(await embedUrlOf(publicApp, publicId), 320, 180);
    try {
      const box = await frame.evaluate(() => ({ scroll: document.documentElement.scrollWidth, button: document.getElementById('vop-menu-button')!.getBoundingClientRect().right }));
      expect(box.scroll).toBeLessThanOrEqual(320);
      await playFor(frame, 1);
      await frame.hover('video');
      const button = await frame.evaluate(() => document.getElementById('vop-menu-button')!.getBoundingClientRect());
      expect(button.right).toBeLessThanOrEqual(320);
      expect(button.width).toBeGreaterThanOrEqual(32);
      const menuBox = await frame.evaluate(() => {
        document.getElementById('vop-menu-button')!.click();
        const r = document.getElementById('vop-menu')!.getBoundingClientRect();
        return { left: r.left, right: r.right };
      });
      expect(menuBox.left).toBeGreaterThanOrEqual(0);
      expect(menuBox.right).toBeLessThanOrEqual(320);
    } finally {
      await page.close();
    }
  }, 60_000);

  it('shows the storyboard tile under the pointer on its seek bar, from sprites of the smallest rendition', async () => {
    const storyboard = await waitUntil('the storyboard', async () => {
      const d = await publicApp.get('/Api/Video/Get', { Id: publicId });
      return (d.body.StoryboardURL as string) || undefined;
    }, { timeoutMs: 60_000 });
    expect(storyboard).toMatch(new RegExp(`^${t.baseUrl}/media/text/${publicId}/[0-9a-f]{8}\\.vtt$`));
    const vtt = await (await fetch(storyboard)).text();
    // 8 s of video: a tile every 2 s, 160 px wide, in one sprite of ten by ten.
    const cues = [...vtt.matchAll(/^(\S+) --> (\S+)\n([0-9a-f]{8})\/(\d+)\.jpg#xywh=(\d+),(\d+),(\d+),(\d+)$/gm)];
    expect(cues.map((c) => [c[1], c[2], c[4], c[5], c[6], c[7], c[8]])).toEqual([
      ['00:00:00.000', '00:00:02.000', '0', '0', '0', '160', '90'],
      ['00:00:02.000', '00:00:04.000', '0', '160', '0', '160', '90'],
      ['00:00:04.000', '00:00:06.000', '0', '320', '0', '160', '90'],
      ['00:00:06.000', '00:00:08.000', '0', '480', '0', '160', '90'],
    ]);
    const sprite = await fetch(new URL(`${cues[0]![3]}/0.jpg`, storyboard));
    expect(sprite.status).toBe(200);
    expect(sprite.headers.get('content-type')).toBe('image/jpeg');
    const bytes = Buffer.from(await sprite.arrayBuffer());
    const spriteFile = `${dir}/sprite.jpg`;
    fs.writeFileSync(spriteFile, bytes);
    expect(await probeSize(spriteFile)).toEqual({ width: 1600, height: 900 });

    const { page, frame } = await framed(await embedUrlOf(publicApp, publicId), 1280, 720);
    try {
      await frame.waitForSelector('#vop-watch[data-storyboard="4"]');
      const bar = (await frame.$('#vop-seek'))!;
      const box = (await bar.boundingBox())!;
      // The pointer at three quarters of the bar: 6 s of 8, the fourth tile.
      await frame.hover('#vop-seek', { position: { x: box.width * 0.76, y: box.height / 2 } });
      await frame.waitForSelector('#vop-preview:not([hidden])');
      const shown = await frame.evaluate(() => {
        const tile = document.getElementById('vop-preview-tile')!;
        return { cue: tile.getAttribute('data-cue'), hidden: tile.hidden, image: getComputedStyle(tile).backgroundImage, time: document.getElementById('vop-preview-time')!.textContent };
      });
      expect(shown.hidden).toBe(false);
      expect(shown.cue).toBe('0.jpg#480,0');
      expect(shown.image).toContain(`/media/text/${publicId}/`);
      expect(shown.time).toBe('0:06');
      // A click there seeks there.
      await frame.click('#vop-seek', { position: { x: box.width * 0.5, y: box.height / 2 } });
      expect(await frame.evaluate(() => Math.round(document.querySelector('video')!.currentTime))).toBe(4);
    } finally {
      await page.close();
    }
  }, 90_000);

  it('takes its URL options: autoplay, muted, loop, start, captions; controls=0 shows no controls', async () => {
    const { page, frame } = await framed(`${await embedUrlOf(publicApp, publicId)}?autoplay=1&muted=1&loop=1&start=3&captions=de`, 640, 360);
    try {
      await frame.waitForFunction(() => {
        const v = document.querySelector('video')!;
        return !v.paused && v.currentTime > 3;
      }, undefined, { timeout: 20_000 });
      const state = await frame.evaluate(() => {
        const v = document.querySelector('video')!;
        return { muted: v.muted, loop: v.loop, controls: document.getElementById('vop-controls') !== null, showing: Array.from(v.textTracks).filter((tt) => tt.mode === 'showing').map((tt) => tt.language) };
      });
      expect(state).toEqual({ muted: true, loop: true, controls: true, showing: ['de'] });
    } finally {
      await page.close();
    }
    const bare = await framed(`${await embedUrlOf(publicApp, publicId)}?controls=0`, 640, 360);
    try {
      expect(await bare.frame.evaluate(() => ({ controls: document.getElementById('vop-controls') !== null || document.querySelector('video')!.controls, tools: document.getElementById('vop-tools')!.hidden }))).toEqual({ controls: false, tools: true });
    } finally {
      await bare.page.close();
    }
  }, 60_000);

  it('carries link-preview tags and the oEmbed discovery link; oEmbed answers for it', async () => {
    const src = await embedUrlOf(publicApp, publicId);
    const res = await fetch(src);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain('frame-ancestors *');
    const html = await res.text();
    const meta = (name: string) => new RegExp(`<meta (?:property|name)="${name}" content="([^"]*)">`).exec(html)?.[1];
    expect(meta('og:title')).toBe('Two &quot;languages&quot; &lt;b&gt;&amp;&lt;/b&gt; chapters');
    expect(meta('og:video:type')).toBe('video/mp4');
    expect(meta('og:image')).toBe(`${t.baseUrl}/media/cover/${publicId}.jpg`);
    expect(meta('twitter:player')).toBe(src);
    const discovery = /<link rel="alternate" type="application\/json\+oembed" href="([^"]+)"/.exec(html)![1]!.replace(/&amp;/g, '&');
    expect(discovery).toBe(`${t.baseUrl}/oembed?url=${encodeURIComponent(src)}&format=json`);

    const o = await fetch(discovery);
    expect(o.status).toBe(200);
    expect(o.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await o.json();
    expect(body).toMatchObject({ version: '1.0', type: 'video', provider_name: 'vop', title: 'Two "languages" <b>&</b> chapters', width: 640, height: 360, thumbnail_url: `${t.baseUrl}/media/cover/${publicId}.jpg` });
    expect(body.html).toContain(`<iframe src="${src}" width="640" height="360"`);
    const small = await (await fetch(`${t.baseUrl}/oembed?url=${encodeURIComponent(src)}&maxwidth=320`)).json();
    expect([small.width, small.height]).toEqual([320, 180]);

    const xml = await fetch(`${t.baseUrl}/oembed?url=${encodeURIComponent(src)}&format=xml`);
    expect(xml.status).toBe(501);
    expect((await xml.json()).AuthMsg.ResultCode).toBe('406');
    expect((await fetch(`${t.baseUrl}/oembed?url=${encodeURIComponent(`http://elsewhere.example/embed/${publicId}`)}`)).status).toBe(404);
    expect((await fetch(`${t.baseUrl}/oembed`)).status).toBe(400);
  });

  it('shows a translated message, never a player, for a video not playable yet or unknown', async () => {
    const waiting = await publicApp.register({ VideoTitle: 'not uploaded' });
    const res = await fetch(`${t.baseUrl}/embed/${waiting}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('still being prepared');
    expect(html).not.toContain('<video');
    const zh = await (await fetch(`${t.baseUrl}/embed/${waiting}`, { headers: { 'accept-language': 'zh-CN,zh;q=0.9,en;q=0.5' } })).text();
    expect(zh).toContain('仍在处理中');
    expect(zh).toContain('<html lang="zh-CN">');
    const unknown = await fetch(`${t.baseUrl}/embed/00000000-0000-4000-8000-000000000000`);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('does not exist');
    expect((await fetch(`${t.baseUrl}/embed/not-an-id`)).status).toBe(404);
  });
});

describe("the watch page of a signed application's video", () => {
  it('opens only with the media token: the plain address, a cover token and an altered token are refused', async () => {
    const src = await embedUrlOf(signedApp, signedId);
    expect(src).toMatch(new RegExp(`^${t.baseUrl}/embed/${signedId}\\?t=[\\w.-]+$`));
    const plain = await fetch(`${t.baseUrl}/embed/${signedId}`);
    expect(plain.status).toBe(403);
    const plainHtml = await plain.text();
    expect(plainHtml).not.toContain('<video');
    expect(plainHtml).not.toContain('Two &quot;languages');
    const detail = await signedApp.get('/Api/Video/Get', { Id: signedId });
    const coverToken = /\/media\/s\/([^/]+)\/cover\//.exec(detail.body.VideoModel.PicSavePath as string)![1]!;
    expect((await fetch(`${t.baseUrl}/embed/${signedId}?t=${coverToken}`)).status).toBe(403);
    const altered = src.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
    expect((await fetch(altered)).status).toBe(403);
    // oEmbed: the signed link's preview, none for the plain one.
    expect((await fetch(`${t.baseUrl}/oembed?url=${encodeURIComponent(`${t.baseUrl}/embed/${signedId}`)}`)).status).toBe(403);
    const o = await (await fetch(`${t.baseUrl}/oembed?url=${encodeURIComponent(src)}`)).json();
    expect(o.html).toContain(`src="${src.replace(/&/g, '&amp;')}"`);
    expect(o.thumbnail_url).toMatch(new RegExp(`/media/s/[^/]+/cover/${signedId}\\.jpg$`));
    expect((await fetch(o.thumbnail_url)).status).toBe(200);
  });

  it('plays from its signed address, every media address it loads signed', async () => {
    const src = await embedUrlOf(signedApp, signedId);
    const { page, frame, requests } = await framed(src, 640, 360);
    try {
      expect(await frame.getAttribute('#vop-watch', 'data-engine')).toBe('hls.js');
      await playFor(frame, 2);
      const media = requests.filter((u) => u.startsWith(`${t.baseUrl}/media/`));
      expect(media.length).toBeGreaterThan(3);
      expect(media.filter((u) => !u.startsWith(`${t.baseUrl}/media/s/`))).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);
});

describe("the watch page's weight", () => {
  it('is a small page and script; hls.js is fetched only where the browser needs it', async () => {
    const page = await (await fetch(await embedUrlOf(publicApp, publicId))).text();
    const script = await (await fetch(`${t.baseUrl}/embed/assets/watch.js`)).arrayBuffer();
    const style = await (await fetch(`${t.baseUrl}/embed/assets/watch.css`)).arrayBuffer();
    expect(Buffer.byteLength(page) + script.byteLength + style.byteLength).toBeLessThan(32 * 1024);
    const hls = await fetch(`${t.baseUrl}/embed/assets/hls.min.js`);
    expect(hls.status).toBe(200);
    expect(hls.headers.get('cache-control')).toBe('public, max-age=86400');
    const again = await fetch(`${t.baseUrl}/embed/assets/hls.min.js`, { headers: { 'if-none-match': hls.headers.get('etag')! } });
    expect(again.status).toBe(304);
    expect((await fetch(`${t.baseUrl}/embed/assets/other.js`)).status).toBe(404);
  });
});
