/**
 * Playable in seconds: a video moves to 1 with its first rendition (the source's streams copied,
 * or the lowest rung alone), and the `ladder` job adds the other rungs while it is served. What is
 * listed at status 1 stays listed; the HLS master playlist and VideoPlayFile grow; the status moves
 * to 1 once, with one callback; an application can ask for the whole ladder first; and every
 * first rendition goes before any ladder. Real ffmpeg on clips the tests make, real HTTP.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VopEvents } from '../../server/core/events.js';
import type { JobType } from '../../server/core/jobTypes.js';
import { makeClip } from '../helpers/clips.js';
import { processes, runs } from '../helpers/procs.js';
import { SpecClient } from '../helpers/client.js';
import { listFiles, placeSource, probeVideo, TINY_PROCESSING } from '../helpers/processing.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let client: SpecClient;

beforeAll(async () => {
  t = await startServer({ processing: { ...TINY_PROCESSING, ladderConcurrency: 1 } });
  client = await t.newApp();
});
afterAll(async () => {
  await t?.close();
});

type PlayFile = { VideoURL: string; Bitrate: number; BitrateLabel: string };

async function detail(c: SpecClient, id: string): Promise<{ files: PlayFile[]; hls: string }> {
  const r = await c.get('/Api/Video/Get', { Id: id });
  return { files: r.body.VideoPlayFile as PlayFile[], hls: r.body.HlsURL as string };
}

/** What the detail call and the HLS master playlist show at the moment the video moves to 1. */
function atStatusOne(c: SpecClient, id: string): Promise<{ files: PlayFile[]; master: string; ladder: string | undefined }> {
  return new Promise((resolve, reject) => {
    const on = (e: VopEvents['video.status'][0]) => {
      if (e.videoId !== id || e.to !== 1) return;
      t.vop.events.off('video.status', on);
      // Read at once: the ladder job is queued by this same event and takes a run of ffmpeg.
      void (async () => {
        const d = await detail(c, id);
        const master = await (await fetch(d.hls)).text();
        resolve({ files: d.files, master, ladder: (await t.vop.stores.videos.get(id))?.ladder });
      })().catch(reject);
    };
    t.vop.events.on('video.status', on);
  });
}

const variantsOf = (master: string) => master.split('\n').filter((l) => l.endsWith('.m3u8'));

/** The MD5 of a file's first video stream's packets: equal for a stream copy, different for any encode. */
async function videoStreamMd5(file: string): Promise<string> {
  // Without SEI units: a copy carries none (media/streamCopy.ts), the rest of the stream is the source's.
  const { stdout } = await promisify(execFile)('ffmpeg', ['-v', 'error', '-i', file, '-map', '0:v:0', '-c', 'copy', '-bsf:v', 'filter_units=remove_types=6', '-f', 'md5', '-']);
  return stdout.trim();
}

describe('a video is playable with its first rendition, and its ladder lands after', () => {
  it('copies an H.264 source as its top rendition; the ladder adds the rung below, and nothing listed goes away', async () => {
    const clip = await makeClip({ seconds: 3, width: 320, height: 180 });
    const source = await probeVideo(clip);
    const id = await client.register();
    const renditionEvents: Array<VopEvents['video.renditions'][0]> = [];
    const onRenditions = (e: VopEvents['video.renditions'][0]) => e.videoId === id && renditionEvents.push(e);
    t.vop.events.on('video.renditions', onRenditions);
    const first = atStatusOne(client, id);
    await placeSource(t.vop, id, clip);
    const one = await first;
    expect(one.files.map((f) => f.BitrateLabel)).toEqual(['180p']);
    expect(one.ladder).toBe('pending');
    expect(variantsOf(one.master)).toEqual(['180p/index.m3u8']);

    // The copy is the source's own video stream, packet for packet, but for its SEI units.
    const copyFile = t.vop.media.resolveRelative('play', one.files[0]!.VideoURL)!;
    const copy = await probeVideo(copyFile);
    expect(await videoStreamMd5(copyFile)).toBe(await videoStreamMd5(clip));
    expect([copy.width, copy.height, copy.audioCodec]).toEqual([source.width, source.height, 'aac']);
    const copyBytes = fs.statSync(copyFile).size;

    expect(await waitForStatus(t.vop, id, [1])).toBe(1);
    const done = await detail(client, id);
    expect(done.files.map((f) => f.BitrateLabel)).toEqual(['180p', '120p']);
    // The first rendition's address and file are the same: an application that stored it keeps it.
    expect(done.files[0]!.VideoURL).toBe(one.files[0]!.VideoURL);
    expect(fs.statSync(copyFile).size).toBe(copyBytes);
    const rung = await probeVideo(t.vop.media.resolveRelative('play', done.files[1]!.VideoURL)!);
    expect([rung.width, rung.height]).toEqual([214, 120]);
    // Every address the detail lists is served, and the master lists both variants, each served.
    for (const f of done.files) expect((await fetch(`${t.baseUrl}/media/play/${f.VideoURL}`, { method: 'HEAD' })).status).toBe(200);
    const master = await (await fetch(done.hls)).text();
    expect(variantsOf(master).sort()).toEqual(['120p/index.m3u8', '180p/index.m3u8']);
    for (const v of variantsOf(master)) {
      const playlist = await fetch(new URL(v, done.hls));
      expect(playlist.status).toBe(200);
      expect(await playlist.text()).toContain('#EXT-X-ENDLIST');
    }
    // One move to 1; the ladder told the caches and the console.
    expect((await t.vop.stores.videos.statusHistory(id)).map((c) => c.to)).toEqual([8, 5, 6, 1]);
    await waitUntil('the ladder event', () => (renditionEvents.length > 0 ? true : undefined), { timeoutMs: 5_000 });
    expect(renditionEvents).toEqual([{ videoId: id, appId: client.appId, ladder: '', labels: ['180p', '120p'] }]);
    t.vop.events.off('video.renditions', onRenditions);
    // The seek previews' job follows the ladder (processing/storyboardJob.ts; watch-page.test.ts).
    const jobs = (await t.vop.stores.jobs.list({ videoId: id })).filter((j) => j.type !== 'storyboard');
    expect(jobs.map((j) => [j.type, j.state]).sort()).toEqual([['ladder', 'succeeded'], ['transcode', 'succeeded']]);
  });

  it('encodes the lowest rung alone first for a source browsers do not play as it is, then the rest', async () => {
    // Odd sizes make the clip 4:4:4, which browsers do not decode.
    const clip = await makeClip({ seconds: 3, width: 321, height: 241 });
    const id = await client.register();
    const first = atStatusOne(client, id);
    await placeSource(t.vop, id, clip);
    const one = await first;
    expect(one.files.map((f) => f.BitrateLabel)).toEqual(['120p']);
    expect(variantsOf(one.master)).toEqual(['120p/index.m3u8']);
    expect(await waitForStatus(t.vop, id, [1])).toBe(1);
    const done = await detail(client, id);
    expect(done.files.map((f) => f.BitrateLabel)).toEqual(['180p', '120p']);
    expect(done.files[1]!.VideoURL).toBe(one.files[0]!.VideoURL);
    expect((await t.vop.stores.videos.get(id))?.ladder).toBe('');
  });

  it('makes every rung before status 1 for an application that asks for it, and no ladder job', async () => {
    const { appId, appSecret } = await t.admin.createApp('whole ladder', undefined, { wholeLadderFirst: true });
    expect((await t.admin.request('GET', `/apps/${appId}`)).body.wholeLadderFirst).toBe(true);
    const whole = new SpecClient(t.baseUrl, appId, appSecret);
    const id = await whole.register();
    const first = atStatusOne(whole, id);
    const clip = await makeClip({ seconds: 3, width: 320, height: 180 });
    await placeSource(t.vop, id, clip);
    const one = await first;
    expect(one.files.map((f) => f.BitrateLabel)).toEqual(['180p', '120p']);
    expect(one.ladder).toBe('');
    // Both are encodes: the copy is not made for such an application.
    const top = t.vop.media.resolveRelative('play', one.files[0]!.VideoURL)!;
    expect((await probeVideo(top)).width).toBe(320);
    expect(await videoStreamMd5(top)).not.toBe(await videoStreamMd5(clip));
    expect((await t.vop.stores.jobs.list({ videoId: id })).map((j) => j.type).filter((type) => type !== 'storyboard')).toEqual(['transcode']);
    // The setting is refused when it is not a boolean, and can be turned off.
    expect((await t.admin.request('PATCH', `/apps/${appId}`, { wholeLadderFirst: 'yes' })).status).toBe(400);
    expect((await t.admin.request('PATCH', `/apps/${appId}`, { wholeLadderFirst: false })).body.wholeLadderFirst).toBe(false);
  });

  it('runs every waiting first rendition before any ladder, and the ladder at a lower CPU priority', async () => {
    const ids = [await client.register(), await client.register(), await client.register()];
    const clips = await Promise.all(ids.map(() => makeClip({ seconds: 6, width: 641, height: 361 })));
    // The ladder's ffmpeg, seen while it runs: its niceness (field 19 of /proc/<pid>/stat).
    const niceness = new Set<number>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const p of processes((q) => runs(q, 'ffmpeg') && q.cmdline.includes('-ladder.'))) niceness.add(p.nice);
        await new Promise((r) => setTimeout(r, 20)); // the sampling interval
      }
    })();
    try {
      await Promise.all(ids.map((id, i) => placeSource(t.vop, id, clips[i]!)));
      for (const id of ids) expect(await waitForStatus(t.vop, id, [1], { timeoutMs: 60_000 })).toBe(1);
    } finally {
      watching = false;
      await watcher;
    }
    const jobs = (await t.vop.stores.jobs.list({ limit: 1000 })).filter((j) => ids.includes(j.videoId));
    const started = (type: string) => jobs.filter((j) => j.type === type).map((j) => j.startedAt!);
    expect(started('transcode')).toHaveLength(3);
    expect(started('ladder')).toHaveLength(3);
    expect(Math.min(...started('ladder'))).toBeGreaterThanOrEqual(Math.max(...started('transcode')));
    expect([...niceness]).toEqual([10]);
  });

  it('cancels a waiting ladder when its video is deleted, and leaves nothing of the video', async () => {
    // The ladder job is queued an hour ahead, so the deletion finds it waiting.
    const jobs = t.vop.jobs;
    const enqueue = jobs.enqueue.bind(jobs);
    jobs.enqueue = ((type: JobType, payload: never, o: { runAfter?: number } = {}) =>
      enqueue(type, payload, type === 'ladder' ? { ...o, runAfter: Date.now() + 3_600_000 } : o)) as typeof jobs.enqueue;
    try {
      const id = await client.register();
      await placeSource(t.vop, id, await makeClip({ seconds: 2, width: 320, height: 180 }));
      expect(await waitForStatus(t.vop, id, [1], { timeoutMs: 30_000, firstRendition: true })).toBe(1);
      const ladder = await waitUntil('the ladder job', async () => (await t.vop.stores.jobs.list({ videoId: id, types: ['ladder'] }))[0]);
      expect(ladder.state).toBe('queued');
      expect((await t.admin.request('DELETE', `/videos/${id}`)).status).toBe(200);
      expect((await t.vop.stores.jobs.get(ladder.id))?.state).toBe('cancelled');
      const video = await t.vop.stores.videos.get(id);
      // Deleted, not "a ladder that failed on a playable video".
      expect([video?.status, video?.ladder]).toEqual([0, 'pending']);
      expect(listFiles(t.vop.media.path('play')).filter((f) => f.includes(id))).toEqual([]);
      expect(listFiles(t.vop.media.path('hls', id))).toEqual([]);
    } finally {
      jobs.enqueue = enqueue;
    }
  });
});
