/**
 * Delivery's caches (issue 14) over real HTTP: what a process keeps of a playable video
 * (services/mediaDelivery.ts) never outlives the change that makes it wrong. A video deleted, or
 * out of status 1, is refused at once; one transcoded again serves its new files, and not the old
 * ones, at once; a change that comes with no event (another node's, its event lost) is seen
 * within the cache's lifetime.
 */
import { KeyRing } from '../../server/keys/keyRing.js';
import { MediaTokens } from '../../server/keys/mediaTokens.js';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sendMediaObject } from '../../server/http/fileResponse.js';
import { MediaDeliveryService } from '../../server/services/mediaDelivery.js';
import { LocalObjectMediaStore } from '../../server/storage/media/localObjectMediaStore.js';
import { mediaKey } from '../../server/storage/media/mediaStore.js';
import { ObjectInfoCache } from '../../server/storage/media/objectInfoCache.js';
import { LocalMediaRoot } from '../../server/storage/media/localMediaRoot.js';
import { makeClip } from '../helpers/clips.js';
import type { SpecClient } from '../helpers/client.js';
import { placeSource, TINY_PROCESSING } from '../helpers/processing.js';
import { notYet, waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, tempDataDir, type TestServer } from '../helpers/server.js';

let t: TestServer;
let client: SpecClient;
let clip: string;

beforeAll(async () => {
  t = await startServer({ processing: TINY_PROCESSING });
  client = await t.newApp();
  clip = await makeClip({ seconds: 1, width: 320, height: 180 });
});
afterAll(async () => {
  await t?.close();
});

/** A new video in status 1, and the addresses of its rendition, download, cover and HLS files. */
async function playableVideo(): Promise<{ id: string; videoUrl: string; playUrl: string; urls: string[] }> {
  const id = await client.register();
  await placeSource(t.vop, id, clip);
  expect(await waitForStatus(t.vop, id, [1, 7])).toBe(1);
  const body = (await client.get('/Api/Video/Get', { Id: id })).body;
  const videoUrl: string = body.VideoPlayFile[0].VideoURL;
  const playUrl: string = body.MediaSever.PlayURL;
  const urls = [
    `${playUrl}${videoUrl}`,
    `${body.MediaSever.DownloadURL}${videoUrl}`,
    body.VideoModel.PicSavePath,
    `${body.VideoModel.PicSavePath}?t=3`,
    body.HlsURL,
    body.HlsURL.replace('master.m3u8', '180p/index.m3u8'),
  ];
  return { id, videoUrl, playUrl, urls };
}

/** Each address's status, fetched twice so that the second answer comes from whatever the first left cached. */
async function statuses(urls: string[]): Promise<number[]> {
  const out: number[] = [];
  for (const u of urls) {
    await (await fetch(u, { headers: { range: 'bytes=0-99' } })).arrayBuffer();
    const r = await fetch(u, { headers: { range: 'bytes=0-99' } });
    await r.arrayBuffer();
    out.push(r.status);
  }
  return out;
}

describe('the cache of playable videos', () => {
  it('serves nothing of a video deleted through the admin API, at once', async () => {
    const v = await playableVideo();
    expect(await statuses(v.urls)).toEqual([206, 206, 206, 206, 206, 206]);
    const r = await t.admin.request('DELETE', `/videos/${v.id}`);
    expect(r.status).toBe(200);
    expect(await statuses(v.urls)).toEqual([404, 404, 404, 404, 404, 404]);
  });

  it('serves nothing of a video moved out of status 1, at once, and serves it again once it is back', async () => {
    const v = await playableVideo();
    expect(await statuses(v.urls)).toEqual([206, 206, 206, 206, 206, 206]);
    expect(await t.vop.services.lifecycle.move(v.id, 5)).toBe(true);
    expect(await statuses(v.urls)).toEqual([404, 404, 404, 404, 404, 404]);
    expect(await t.vop.services.lifecycle.move(v.id, 1)).toBe(true);
    expect(await statuses(v.urls)).toEqual([206, 206, 206, 206, 206, 206]);
  });

  it('serves the new rendition, and not the replaced one, as soon as a video transcoded again is back in status 1', async () => {
    const v = await playableVideo();
    const old = `${v.playUrl}${v.videoUrl}`;
    expect((await statuses([old]))[0]).toBe(206);
    // What a transcode does (transcodeJob.ts), by hand: out of 1, the new file stored, the rows
    // naming it, the old file removed, back to 1.
    const [date] = v.videoUrl.split('/') as [string, string];
    const file = `${v.id}_240p.mp4`;
    const bytes = Buffer.from('a new rendition, as a transcode would store it');
    const scratch = path.join(t.vop.options.dataDir, 'new-rendition.bin');
    fs.writeFileSync(scratch, bytes);
    expect(await t.vop.services.lifecycle.move(v.id, 5)).toBe(true);
    await t.vop.objects.put(mediaKey('play', date, file), { file: scratch });
    await t.vop.stores.videos.setRenditions(v.id, [{ videoId: v.id, label: '240p', width: 426, height: 240, bitrateKbps: 300, file: `${date}/${file}`, bytes: bytes.length }]);
    await t.vop.objects.delete(mediaKey('play', ...(v.videoUrl.split('/') as [string, string])));
    expect(await t.vop.services.lifecycle.move(v.id, 1)).toBe(true);
    const now = await fetch(`${v.playUrl}${date}/${file}`);
    expect(now.status).toBe(200);
    expect(Buffer.from(await now.arrayBuffer()).equals(bytes)).toBe(true);
    expect((await statuses([old]))[0]).toBe(404);
  });

  it("hears another node's change on events.everywhere, and sees one whose event was lost within its lifetime (1 s)", async () => {
    const v = await playableVideo();
    const play = `${v.playUrl}${v.videoUrl}`;
    expect((await statuses([play]))[0]).toBe(206);
    // Another node's move: the row changes here without this node's bus hearing it…
    const video = (await t.vop.stores.videos.get(v.id))!;
    expect(await t.vop.stores.videos.setStatus(v.id, 0)).toBe(true);
    // …and its event comes through the relay, on everywhere.
    t.vop.events.everywhere.emit('video.status', { videoId: v.id, appId: video.appId, from: 1, to: 0, reason: 'on another node', at: Date.now() });
    expect((await statuses([play]))[0]).toBe(404);

    // Back in 1 with no event at all (a relay's connection down): the cache has nothing of a
    // video it refused, so it is served; then out again with no event: refused within 1 s.
    expect(await t.vop.stores.videos.setStatus(v.id, 1)).toBe(true);
    expect((await statuses([play]))[0]).toBe(206);
    expect(await t.vop.stores.videos.setStatus(v.id, 0)).toBe(true);
    const changed = Date.now();
    const status = await waitUntil('the play request refused', async () => {
      const now = (await statuses([play]))[0]!;
      return now === 206 ? notYet(now) : now;
    }, { timeoutMs: 3_000, pollMs: 50 });
    expect(status).toBe(404);
    expect(Date.now() - changed).toBeLessThan(1500);
  });
});

describe('the open-file cache', () => {
  /** Descriptors of this process open on `file` (or on what was there: a removed file's shows as `<file> (deleted)`). */
  const filesOpenAt = (file: string) =>
    fs.readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`).replace(/ \(deleted\)$/, '') === file;
      } catch {
        return false;
      }
    }).length;

  it('serves a file replaced through the store at once and one replaced by hand within 100 ms, and closes a removed one at once', async () => {
    const v = await playableVideo();
    const [date, file] = v.videoUrl.split('/') as [string, string];
    const url = `${v.playUrl}${v.videoUrl}`;
    const key = mediaKey('play', date, file);
    const first = await fetch(url, { headers: { range: 'bytes=0-15' } });
    const etag = first.headers.get('etag');
    await first.arrayBuffer();
    expect((await fetch(url, { headers: { range: 'bytes=0-15' } })).status).toBe(206); // kept open now

    // Through the store, as a transcode replaces a rendition.
    const scratch = path.join(t.vop.options.dataDir, 'replacement.bin');
    fs.writeFileSync(scratch, Buffer.from('replaced through the store'));
    await t.vop.objects.put(key, { file: scratch });
    let r = await fetch(url);
    expect(await r.text()).toBe('replaced through the store');
    expect(r.headers.get('etag')).not.toBe(etag);

    // By hand (another node writing a shared media folder): a new file renamed over the old.
    const onDisk = t.vop.media.path('play', date, file);
    // Seen within the cache's validity (100 ms), the old file's bytes with its own headers until then.
    const body = async () => (await fetch(url)).text();
    const status = async () => (await fetch(url)).status;
    fs.writeFileSync(`${onDisk}.new`, Buffer.from('renamed into place by another process'));
    fs.renameSync(`${onDisk}.new`, onDisk);
    await expect.poll(body, { interval: 20, timeout: 2000 }).toBe('renamed into place by another process');
    // Rewritten in place, same length: the change time and modification time say so. Time is the
    // subject: 20 ms on, so that the times differ.
    await new Promise((resolve) => setTimeout(resolve, 20));
    fs.writeFileSync(onDisk, Buffer.from('RENAMED INTO PLACE BY ANOTHER PROCESS'));
    await expect.poll(body, { interval: 20, timeout: 2000 }).toBe('RENAMED INTO PLACE BY ANOTHER PROCESS');

    // Removed by hand: missing within the validity; removed through the store: its descriptor closed at once.
    fs.renameSync(onDisk, `${onDisk}.away`);
    await expect.poll(status, { interval: 20, timeout: 2000 }).toBe(404);
    fs.renameSync(`${onDisk}.away`, onDisk);
    expect((await fetch(url)).status).toBe(200);
    await expect.poll(() => filesOpenAt(onDisk)).toBe(1); // the descriptor of the file before the renames closes in the background
    await t.vop.objects.delete(key);
    await expect.poll(() => filesOpenAt(onDisk)).toBe(0);
    expect((await fetch(url)).status).toBe(404);
  });
});

/**
 * The store without local files (S3) keeps objects' info between requests: a GET is one openRange
 * with If-Match, a HEAD no call at all, and a replaced or removed object is never answered with
 * the bytes of another. Here the local store plays S3 (its openLocalFileSync hidden), over real
 * HTTP; test/contracts/mediaStore.contract.ts holds S3's If-Match to the same contract on Ceph RGW.
 */
/** A server on a port whose every request is answered by `send` (a 404 when it sends nothing). */
async function serveObject(send: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<boolean>): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((req, res) => {
    send(req, res).then(
      (sent) => {
        if (!sent) res.writeHead(404).end();
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/object` };
}

describe('the cache of objects’ info (stores without local files)', () => {
  it('asks the store once per GET and not at all per HEAD; a replaced object is asked for anew, a removed one is a 404', async () => {
    const store = new LocalObjectMediaStore(new LocalMediaRoot(tempDataDir()));
    (store as { openLocalFileSync?: unknown }).openLocalFileSync = undefined;
    const key = mediaKey('hls', 'v1', '360p', 'seg_00000.ts');
    const first = crypto.randomBytes(50_000);
    await store.put(key, { stream: Readable.from([first]) });
    const objectInfo = new ObjectInfoCache({ ttlMs: 60_000, maxObjects: 10 });
    const { server, url } = await serveObject((req, res) =>
      sendMediaObject(req, res, store, key, { contentType: 'video/mp2t', maxAgeSeconds: 0, chunkBytes: 64 * 1024, sendTimeoutMs: 10_000, objectInfo }),
    );
    const stat = vi.spyOn(store, 'stat');
    const openRange = vi.spyOn(store, 'openRange');
    try {
      const get = async (range?: string) => {
        const r = await fetch(url, { headers: range ? { Range: range } : {} });
        return { status: r.status, body: Buffer.from(await r.arrayBuffer()), etag: r.headers.get('etag') };
      };
      const whole = await get();
      expect(whole.body.equals(first)).toBe(true);
      expect([stat.mock.calls.length, openRange.mock.calls.length]).toEqual([1, 1]);
      expect((await get('bytes=100-199')).body.equals(first.subarray(100, 200))).toBe(true);
      expect((await fetch(url, { method: 'HEAD' })).headers.get('content-length')).toBe(String(first.length));
      expect((await fetch(url, { headers: { 'If-None-Match': whole.etag! } })).status).toBe(304);
      expect([stat.mock.calls.length, openRange.mock.calls.length]).toEqual([1, 2]); // HEAD and 304 from the kept info
      expect(openRange.mock.calls.every((c) => typeof c[2]?.ifMatch === 'string')).toBe(true);

      // Replaced under the kept info (as on another node): the GET's If-Match fails, the info is taken anew.
      const statsDuring = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
        const before = stat.mock.calls.length;
        const result = await fn();
        return [result, stat.mock.calls.length - before];
      };
      const second = crypto.randomBytes(70_000);
      await store.put(key, { stream: Readable.from([second]) });
      const [again, asked] = await statsDuring(() => get('bytes=100-199'));
      expect(again.status).toBe(206);
      expect(again.body.equals(second.subarray(100, 200))).toBe(true);
      expect(asked).toBe(1);
      const [next, askedNext] = await statsDuring(() => get('bytes=60000-60099'));
      expect(next.body.equals(second.subarray(60_000, 60_100))).toBe(true);
      expect(askedNext).toBe(0); // the new info is kept
      // Replaced by a longer one: a range past the kept length is not refused on the kept word.
      const third = crypto.randomBytes(90_000);
      await store.put(key, { stream: Readable.from([third]) });
      const longer = await get('bytes=80000-80099');
      expect(longer.status).toBe(206);
      expect(longer.body.equals(third.subarray(80_000, 80_100))).toBe(true);
      // By a shorter one: the GET fails its If-Match, and the fresh info refuses the range.
      await store.put(key, { stream: Readable.from([crypto.randomBytes(30_000)]) });
      expect((await get('bytes=40000-40099')).status).toBe(416);

      // Removed: a 404, and nothing of it kept.
      await store.delete(key);
      expect((await get()).status).toBe(404);
      expect(objectInfo.size).toBe(0);
    } finally {
      server.close();
      stat.mockRestore();
      openRange.mockRestore();
    }
  });

  it("forgets a video's kept objects when its status event comes, from this node or another (MediaDeliveryService)", async () => {
    const v = await playableVideo();
    const [date, file] = v.videoUrl.split('/') as [string, string];
    const key = mediaKey('play', date, file);
    // The server's own media, through a store without local files (as S3 is): the service keeps objects' info then.
    const store = new LocalObjectMediaStore(new LocalMediaRoot(t.vop.options.dataDir));
    (store as { openLocalFileSync?: unknown }).openLocalFileSync = undefined;
    const tokens = new MediaTokens(await KeyRing.open({ store: t.vop.stores.signingKeys, purpose: 'media', events: t.vop.events, log: () => {} }));
    const delivery = new MediaDeliveryService({ videos: t.vop.stores.videos, apps: t.vop.stores.apps, tokens, objects: store, covers: t.vop.services.processing.covers, events: t.vop.events });
    const { server, url } = await serveObject((req, res) =>
      delivery.send(req, res, key, { contentType: 'video/mp4', maxAgeSeconds: 0, chunkBytes: 64 * 1024, sendTimeoutMs: 10_000 }),
    );
    const stat = vi.spyOn(store, 'stat');
    const statsFor = async (fn: () => void | Promise<void>) => {
      await fn();
      const before = stat.mock.calls.length;
      const r = await fetch(url, { method: 'HEAD' });
      expect(r.status).toBe(200);
      return stat.mock.calls.length - before;
    };
    try {
      expect(await statsFor(() => {})).toBe(1); // first asked
      expect(await statsFor(() => {})).toBe(0); // kept
      const video = (await t.vop.stores.videos.get(v.id))!;
      // Its status event from another node (through the relay, on everywhere): asked anew.
      expect(await statsFor(() => void t.vop.events.everywhere.emit('video.status', { videoId: v.id, appId: video.appId, from: 1, to: 5, reason: 'on another node', at: Date.now() }))).toBe(1);
      expect(await statsFor(() => {})).toBe(0);
      // This node's own move (out of 1 and back): asked anew.
      expect(
        await statsFor(async () => {
          expect(await t.vop.services.lifecycle.move(v.id, 5)).toBe(true);
          expect(await t.vop.services.lifecycle.move(v.id, 1)).toBe(true);
        }),
      ).toBe(1);
      // Another video's event leaves it kept.
      expect(await statsFor(() => void t.vop.events.everywhere.emit('video.status', { videoId: 'another', appId: video.appId, from: 1, to: 5, reason: 'test', at: Date.now() }))).toBe(0);
    } finally {
      server.close();
      stat.mockRestore();
    }
  });

  it("drops a video's objects on its status event", async () => {
    const store = new LocalObjectMediaStore(new LocalMediaRoot(tempDataDir()));
    const objectInfo = new ObjectInfoCache({ ttlMs: 60_000, maxObjects: 2 });
    const keys = [mediaKey('covers', 'video-a', 'cover.jpg'), mediaKey('hls', 'video-a', 'master.m3u8'), mediaKey('covers', 'video-b', 'cover.jpg')];
    for (const key of keys) await store.put(key, { stream: Readable.from([Buffer.from(key)]) });
    for (const key of keys) await objectInfo.stat(store, key);
    expect(objectInfo.size).toBe(2); // the bound: the oldest went
    objectInfo.forgetVideo('video-a');
    expect(objectInfo.size).toBe(1);
    objectInfo.forgetVideo('video-b');
    expect(objectInfo.size).toBe(0);
  });
});
