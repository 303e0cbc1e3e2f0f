/**
 * Transcoding through the running server (issue 4): a stored source moves 5 → 6 → 1 with its
 * renditions, cover, HLS and Duration, or ends in 7 with the reason. Real ffmpeg, tiny clips.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { resolveOptions } from '../../server/config.js';
import { liveProcessCount } from '../../server/media/ffmpegRunner.js';
import { makeDateFolder } from '../../server/processing/mediaNames.js';
import { makeClip, makeTempDir, mp4TopLevelBoxes } from '../helpers/clips.js';
import type { SpecClient } from '../helpers/client.js';
import { listFiles, placeSource, probeVideo, storeSource, TINY_PROCESSING } from '../helpers/processing.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let client: SpecClient;
let clip: string;

beforeAll(async () => {
  t = await startServer({ processing: TINY_PROCESSING });
  client = await t.newApp();
  clip = await makeClip({ seconds: 2, width: 320, height: 180 });
});
afterAll(async () => {
  await t?.close();
});

const sha256 = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
const today = () => makeDateFolder()(Date.now());

async function detail(id: string) {
  const r = await client.get('/Api/Video/Get', { Id: id });
  expect(r.body.AuthMsg.ResultCode).toBe('1');
  return r.body;
}

describe('a stored source becomes a playable video', () => {
  it('moves 5 → 6 → 1 with H.264/AAC renditions, a cover, HLS and the detail fields of spec 4.1', async () => {
    const id = await client.register();
    await placeSource(t.vop, id, clip);
    expect(await waitForStatus(t.vop, id, [1, 7])).toBe(1);
    expect((await t.vop.stores.videos.statusHistory(id)).map((c) => c.to)).toEqual([8, 5, 6, 1]);

    const body = await detail(id);
    expect(body.VideoModel).toMatchObject({ Id: id, Status: 1, Duration: 2 });
    expect(body.VideoModel.PicSavePath).toBe(`${t.baseUrl}/media/cover/${id}.jpg`);
    const files = body.VideoPlayFile as Array<{ VideoURL: string; Bitrate: number; BitrateLabel: string }>;
    expect(files.map((f) => f.BitrateLabel)).toEqual(['180p', '120p']);
    for (const f of files) {
      expect(Object.keys(f).sort()).toEqual(['Bitrate', 'BitrateLabel', 'VideoURL']);
      expect(f.VideoURL).toBe(`${today()}/${id}_${f.BitrateLabel}.mp4`);
      expect(Number.isInteger(f.Bitrate) && f.Bitrate > 0).toBe(true);
    }
    expect(files[0]!.Bitrate).toBeGreaterThan(files[1]!.Bitrate); // highest bitrate first
    expect(body.HlsURL).toBe(`${t.baseUrl}/media/hls/${id}/master.m3u8`);

    // ffprobe on each file: codec, size, duration; the index at the front.
    const sizes: Record<string, [number, number]> = { '180p': [320, 180], '120p': [214, 120] };
    for (const f of files) {
      const file = t.vop.media.resolveRelative('play', f.VideoURL)!;
      const info = await probeVideo(file);
      expect(info).toMatchObject({ videoCodec: 'h264', audioCodec: 'aac', rotation: 0 });
      expect([info.width, info.height]).toEqual(sizes[f.BitrateLabel]);
      expect(Math.abs(info.durationSeconds - 2)).toBeLessThan(0.1);
      const boxes = mp4TopLevelBoxes(file).map((b) => b.type);
      expect(boxes.indexOf('moov')).toBeLessThan(boxes.indexOf('mdat'));
    }
    // The base plus VideoURL plays.
    const played = await fetch(`${body.MediaSever.PlayURL}${files[0]!.VideoURL}`);
    expect(played.status).toBe(200);
    expect(played.headers.get('content-type')).toBe('video/mp4');
    expect(Buffer.from(await played.arrayBuffer()).equals(fs.readFileSync(t.vop.media.resolveRelative('play', files[0]!.VideoURL)!))).toBe(true);

    // Cover, every spec 2.3 size (made by the transcode: a node that serves needs no ffmpeg for
    // them) and HLS stored; nothing temporary anywhere, nothing left in the attempt's scratch.
    expect(fs.readdirSync(t.vop.media.path('covers', id)).sort()).toEqual(['cover.jpg', 't2.jpg', 't3.jpg', 't4.jpg', 't5.jpg', 't6.jpg', 't7.jpg']);
    expect(fs.readdirSync(path.join(t.vop.options.dataDir, 'scratch', 'transcode'))).toEqual([]);
    expect(listFiles(t.vop.media.path('hls', id))).toEqual(
      expect.arrayContaining(['master.m3u8', path.join('180p', 'index.m3u8'), path.join('120p', 'index.m3u8'), path.join('180p', 'seg_00000.ts')]),
    );
    for (const area of ['play', 'covers', 'hls'] as const) {
      expect(listFiles(t.vop.media.path(area)).filter((f) => path.basename(f).includes('.partial-'))).toEqual([]);
    }
    const master = fs.readFileSync(t.vop.media.path('hls', id, 'master.m3u8'), 'utf8');
    expect(master).toMatch(/RESOLUTION=320x180,CODECS="avc1\.[0-9a-f]{6},mp4a\.40\.2"/);
  });

  it('keeps a portrait (rotated) clip upright at its displayed size', async () => {
    const portrait = await makeClip({ seconds: 1, width: 320, height: 180, rotate: 90 });
    const id = await client.register();
    await placeSource(t.vop, id, portrait);
    expect(await waitForStatus(t.vop, id, [1, 7])).toBe(1);
    const renditions = await t.vop.stores.videos.renditions(id);
    expect(renditions.map((r) => [r.label, r.width, r.height])).toEqual([
      ['180p', 180, 320],
      ['120p', 120, 214],
    ]);
    const info = await probeVideo(t.vop.media.resolveRelative('play', renditions[0]!.file)!);
    expect({ w: info.width, h: info.height, rotation: info.rotation }).toEqual({ w: 180, h: 320, rotation: 0 });
  });

  it('makes even sizes from an odd-sized, silent clip, without an audio track', async () => {
    const odd = await makeClip({ seconds: 1, width: 321, height: 181, audio: false });
    const id = await client.register();
    await placeSource(t.vop, id, odd);
    expect(await waitForStatus(t.vop, id, [1, 7])).toBe(1);
    const renditions = await t.vop.stores.videos.renditions(id);
    expect(renditions.map((r) => `${r.width}x${r.height}`)).toEqual(['320x180', '212x120']);
    for (const r of renditions) {
      const info = await probeVideo(t.vop.media.resolveRelative('play', r.file)!);
      expect({ codec: info.videoCodec, audio: info.audioCodec, w: info.width, h: info.height }).toEqual({ codec: 'h264', audio: null, w: r.width, h: r.height });
    }
  });

  it('keeps the source byte for byte as the only rendition when asked (needHandleSepcial)', async () => {
    const id = await client.register();
    await placeSource(t.vop, id, clip, true);
    expect(await waitForStatus(t.vop, id, [1, 7])).toBe(1);
    const body = await detail(id);
    expect(body.VideoPlayFile).toHaveLength(1);
    const only = body.VideoPlayFile[0];
    expect(only.VideoURL).toBe(`${today()}/${id}_source.mp4`);
    expect(only.BitrateLabel).toBe('180p');
    expect(sha256(t.vop.media.resolveRelative('play', only.VideoURL)!)).toBe(sha256(clip));
    expect(body.VideoModel.Duration).toBe(2);
    expect(body.HlsURL).toBe(`${t.baseUrl}/media/hls/${id}/master.m3u8`); // H.264 + AAC repackages without re-encoding
  });

  it('ends a corrupt source in 7 with the reason, leaving no output', async () => {
    const junk = path.join(makeTempDir(), 'junk.mp4');
    fs.writeFileSync(junk, crypto.randomBytes(64 * 1024));
    const id = await client.register();
    await placeSource(t.vop, id, junk);
    expect(await waitForStatus(t.vop, id, [1, 7])).toBe(7);
    const video = await t.vop.stores.videos.get(id);
    // Refused as intake refuses (issue 10): the reason says not a video, the file is gone, and
    // the video, an upload, takes another file.
    expect(video!.statusReason).toMatch(/^not a video: /);
    expect(video!.statusReason).not.toContain(t.vop.media.root);
    expect(video!.sourceFile).toBe('');
    expect(fs.existsSync(t.vop.media.path('sources', id, 'source'))).toBe(false);
    expect((await t.vop.stores.videos.statusHistory(id)).map((c) => c.to)).toEqual([8, 5, 6, 7]);
    expect(listFiles(t.vop.media.path('play')).filter((f) => f.includes(id))).toEqual([]);
    expect((await detail(id)).VideoPlayFile).toEqual([]);
    const jobs = await t.admin.request('GET', `/jobs?videoId=${id}`);
    expect(jobs.body.jobs).toMatchObject([{ type: 'transcode', state: 'failed', error: expect.stringMatching(/^not a video/) }]);
  });

  it('keeps the renditions the rows list when a step after writing those rows fails', async () => {
    const id = await client.register();
    const videos = t.vop.stores.videos;
    const updateMedia = videos.updateMedia.bind(videos);
    // The transcode's own updateMedia (the one carrying the cover) fails, after setRenditions ran.
    const spy = vi.spyOn(videos, 'updateMedia').mockImplementation(async (videoId, patch) => {
      if (videoId === id && 'coverFile' in patch) throw new Error('injected failure after setRenditions');
      return updateMedia(videoId, patch);
    });
    try {
      await placeSource(t.vop, id, clip);
      expect(await waitForStatus(t.vop, id, [1, 7])).toBe(7);
    } finally {
      spy.mockRestore();
    }
    const listed = await videos.renditions(id);
    expect(listed.length).toBeGreaterThan(0);
    for (const r of listed) expect(fs.existsSync(t.vop.media.resolveRelative('play', r.file)!), r.file).toBe(true);
  });

  it('reports progress with a percentage, time left and speed', async () => {
    const longer = await makeClip({ seconds: 6, width: 320, height: 180 });
    const id = await client.register();
    const reports: Array<{ percent: number; etaSeconds?: number; speed?: string }> = [];
    const onProgress = (p: { videoId: string; type: string; percent: number; etaSeconds?: number; speed?: string }) => {
      if (p.videoId === id && p.type === 'transcode') reports.push(p);
    };
    t.vop.events.on('job.progress', onProgress);
    try {
      await placeSource(t.vop, id, longer);
      expect(await waitForStatus(t.vop, id, [1, 7])).toBe(1);
    } finally {
      t.vop.events.off('job.progress', onProgress);
    }
    const withEta = reports.filter((r) => typeof r.etaSeconds === 'number');
    expect(withEta.length).toBeGreaterThan(0);
    expect(withEta.every((r) => r.percent >= 0 && r.percent <= 100 && r.etaSeconds! >= 0 && /^\d+\.\d+x$/.test(r.speed ?? ''))).toBe(true);
    expect(reports.at(-1)!.percent).toBeGreaterThanOrEqual(90);
    for (let i = 1; i < reports.length; i++) expect(reports[i]!.percent).toBeGreaterThanOrEqual(reports[i - 1]!.percent);
  });
});

describe('the job queue through the admin API', () => {
  it('lists live progress, reprioritises, cancels (running and queued) and retries transcodes', async () => {
    // A slow preset on a longer clip keeps ffmpeg busy long enough to be caught running.
    const slowClip = await makeClip({ seconds: 16, width: 640, height: 360 });
    const slow = await startServer({ processing: { ...TINY_PROCESSING, preset: 'veryslow' } });
    const admin = slow.admin;
    try {
      const app = await slow.newApp();
      const [a, b, c, d] = [await app.register(), await app.register(), await app.register(), await app.register()];
      await placeSource(slow.vop, a, slowClip);
      const running = await waitUntil('the transcode to run', () => slow.vop.jobs.live().find((l) => l.job.videoId === a && l.progress.etaSeconds !== undefined)?.job);
      for (const id of [b, c, d]) await placeSource(slow.vop, id, clip);
      expect(liveProcessCount()).toBeGreaterThan(0);

      const live = (await admin.request('GET', '/jobs?state=running')).body.jobs;
      expect(live).toMatchObject([{ id: running.id, videoId: a, type: 'transcode', state: 'running', attempts: 1 }]);
      expect(live[0].progress).toBeGreaterThanOrEqual(0);
      expect(typeof live[0].etaSeconds).toBe('number');
      expect(live[0].speed).toMatch(/^\d+\.\d+x$/);
      expect(live[0].payload).toBeUndefined();

      const queuedIds = async () => (await admin.request('GET', '/jobs?state=queued&type=transcode')).body.jobs.map((j: { videoId: string }) => j.videoId);
      expect(await queuedIds()).toEqual([b, c, d]);
      const jobOf = async (id: string) => (await admin.request('GET', `/jobs?videoId=${id}`)).body.jobs[0];
      const jobC = await jobOf(c);
      const raised = await admin.request('PATCH', `/jobs/${jobC.id}`, { priority: 5 });
      expect(raised).toMatchObject({ status: 200, body: { id: jobC.id, priority: 5, state: 'queued' } });
      expect(await queuedIds()).toEqual([c, b, d]);
      expect(await admin.request('PATCH', `/jobs/${running.id}`, { priority: 1 })).toMatchObject({ status: 409, body: { error: { code: '306' } } });
      expect(await admin.request('PATCH', `/jobs/${jobC.id}`, { priority: 'high' })).toMatchObject({ status: 400, body: { error: { code: '201' } } });
      expect(await admin.request('PATCH', '/jobs/no-such-job', { priority: 1 })).toMatchObject({ status: 404, body: { error: { code: '305' } } });
      expect((await admin.request('GET', '/jobs?state=sleeping')).status).toBe(400);

      // Cancel a queued job: its video ends in 7 at once.
      const jobD = await jobOf(d);
      expect(await admin.request('POST', `/jobs/${jobD.id}/cancel`)).toMatchObject({ status: 200, body: { state: 'cancelled' } });
      expect(await slow.vop.stores.videos.get(d)).toMatchObject({ status: 7, statusReason: 'transcoding cancelled' });

      // Cancel the running one: ffmpeg stops, nothing is left, the video ends in 7.
      const r = await admin.request('POST', `/jobs/${running.id}/cancel`);
      expect(r).toMatchObject({ status: 200, body: { id: running.id, state: 'cancelled' } });
      expect(await slow.vop.stores.videos.get(a)).toMatchObject({ status: 7, statusReason: 'transcoding cancelled' });
      expect(listFiles(slow.vop.media.path('play')).filter((f) => f.includes(a))).toEqual([]);
      expect(fs.readdirSync(slow.vop.media.path('hls')).filter((f) => f.includes(a))).toEqual([]);
      expect((await admin.request('POST', `/jobs/${running.id}/cancel`)).status).toBe(409);

      // The raised job ran first.
      expect(await waitForStatus(slow.vop, b, [1, 7])).toBe(1);
      expect(await waitForStatus(slow.vop, c, [1, 7])).toBe(1);
      expect((await jobOf(c)).startedAt).toBeLessThan((await jobOf(b)).startedAt);

      // Retry: the video goes back to 5, the same job runs again.
      const retried = await admin.request('POST', `/jobs/${running.id}/retry`);
      expect(retried.status).toBe(200);
      expect(['queued', 'running']).toContain(retried.body.state);
      expect((await admin.request('POST', `/jobs/${running.id}/retry`)).status).toBe(409);
      await waitUntil('the retried job to run', () => slow.vop.jobs.live().find((l) => l.job.id === running.id));
      expect((await slow.vop.stores.videos.statusHistory(a)).map((x) => x.to)).toEqual([8, 5, 6, 7, 5, 6]);
      expect((await admin.request('GET', `/jobs?videoId=${a}`)).body.jobs).toHaveLength(1);

      const detail = await admin.request('GET', `/videos/${a}`);
      expect(detail.status).toBe(200);
      expect(detail.body.video).toMatchObject({ id: a, status: 6, sourceFile: `${a}/source` });
      expect(detail.body.statusHistory.map((x: { to: number; reason: string }) => [x.to, x.reason])).toContainEqual([7, 'transcoding cancelled']);
      expect(detail.body.jobs).toMatchObject([{ id: running.id, state: 'running' }]);
      expect((await admin.request('GET', `/videos/${c}`)).body.renditions.map((x: { label: string }) => x.label)).toEqual(['180p', '120p']);
      expect((await admin.request('GET', '/videos/00000000-0000-4000-8000-000000000000')).status).toBe(404);
      expect((await admin.request('POST', `/jobs/${running.id}/cancel`)).status).toBe(200);
    } finally {
      await slow.close();
    }
    expect(liveProcessCount()).toBe(0);
  });

  it('shows and changes the processing settings; /healthz names the binaries in use', async () => {
    const got = await t.admin.request('GET', '/processing');
    expect(got.body).toMatchObject({ concurrency: 1, preset: 'ultrafast', hls: true, binaries: { ok: true } });
    expect(got.body.defaultConcurrency).toBeGreaterThanOrEqual(1);
    expect((await t.admin.request('PUT', '/processing', { concurrency: 2 })).body.concurrency).toBe(2);
    expect(t.vop.jobs.concurrency('transcode')).toBe(2);
    expect(await t.admin.request('PUT', '/processing', { concurrency: 0 })).toMatchObject({ status: 400, body: { error: { code: '201' } } });
    await t.admin.request('PUT', '/processing', { concurrency: 1 });
    expect((await fetch(`${t.baseUrl}/admin/api/jobs`)).status).toBe(401);

    const health = await (await fetch(`${t.baseUrl}/healthz`, { headers: { authorization: `Bearer ${t.vop.adminToken}` } })).json();
    for (const tool of ['ffmpeg', 'ffprobe'] as const) {
      expect(health.ffmpeg[tool].path).toMatch(/^\//);
      expect(fs.existsSync(health.ffmpeg[tool].path)).toBe(true);
      expect(['setting', 'ffmpeg-static', '@ffmpeg-installer/ffmpeg', '@ffprobe-installer/ffprobe', 'PATH']).toContain(health.ffmpeg[tool].source);
      expect(health.ffmpeg[tool].version).toMatch(new RegExp(`^${tool} version `));
    }
  });
});

describe('start-up', () => {
  it('queues a transcode for a video left in 5 without its job (the event lost in a crash)', async () => {
    const first = await startServer({ processing: TINY_PROCESSING });
    const app = await first.newApp();
    const id = await app.register();
    await storeSource(first.vop, id, clip);
    // The store directly: the move is durable but no event fires, as if the process died here.
    expect(await first.vop.stores.videos.setStatus(id, 5)).toBe(true);
    expect(await first.vop.stores.jobs.list({ types: ['transcode'], videoId: id })).toEqual([]);
    await first.close();

    const restartedAt = Date.now();
    const second = await startServer({ dataDir: first.dataDir, processing: TINY_PROCESSING });
    try {
      expect(await waitForStatus(second.vop, id, [1, 7])).toBe(1);
      // The job that made it playable is the one start-up queued: the video's only transcode, the second server's.
      const jobs = await second.vop.stores.jobs.list({ types: ['transcode'], videoId: id });
      expect(jobs).toMatchObject([{ state: 'succeeded' }]);
      expect(jobs[0]!.createdAt).toBeGreaterThanOrEqual(restartedAt);
    } finally {
      await second.close();
    }
  });

  it('leaves a video in 5 without a stored source alone (its status was set by hand)', async () => {
    const id = await client.register();
    expect(await t.vop.services.lifecycle.move(id, 5)).toBe(true);
    await t.vop.jobs.idle(['transcode']);
    expect((await t.vop.stores.videos.get(id))!.status).toBe(5);
  });
});

describe('options', () => {
  it('names the bad option', () => {
    const bad = (processing: object) => () => resolveOptions({ dataDir: makeTempDir(), processing });
    expect(bad({ concurrency: 0 })).toThrow(/processing\.concurrency/);
    expect(bad({ preset: 'warp' })).toThrow(/processing\.preset/);
    expect(bad({ ladder: { rungs: [] } })).toThrow(/processing\.ladder\.rungs/);
    expect(bad({ ladder: { rungs: [{ label: '../x', shortSide: 360, videoBitrateKbps: 800 }] } })).toThrow(/processing\.ladder\.rungs\[0\]\.label/);
    expect(bad({ retry: { maxRetries: -1 } })).toThrow(/processing\.retry/);
    expect(resolveOptions({ dataDir: makeTempDir() }).processing.concurrency).toBeGreaterThanOrEqual(1);
  });
});
