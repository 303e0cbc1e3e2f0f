/**
 * Delivery (issue 4, item 5): renditions, downloads, covers at the spec 2.3 sizes and HLS, over
 * real HTTP — Range, conditional requests, content types, containment, and nothing served of a
 * video that is not in status 1.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CACHED_READ_MAX_BYTES, parseRange, sendMediaObject, SYNC_READ_MAX_BYTES } from '../../server/http/fileResponse.js';
import { COVER_SIZES } from '../../server/media/cover.js';
import { LocalObjectMediaStore } from '../../server/storage/media/localObjectMediaStore.js';
import { mediaKey, type MediaStore } from '../../server/storage/media/mediaStore.js';
import { LocalMediaRoot } from '../../server/storage/media/localMediaRoot.js';
import { makeClip, makeTempDir, testBinaries } from '../helpers/clips.js';
import type { SpecClient } from '../helpers/client.js';
import { listFiles, placeSource, TINY_PROCESSING } from '../helpers/processing.js';
import { notYet, waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, tempDataDir, type TestServer } from '../helpers/server.js';
import { isUnexpectedErrorLine } from '../../server/core/logLines.js';

let t: TestServer;
let client: SpecClient;
let videoId: string;
/** `<date>/<file>` of the top rendition, its bytes, and the absolute base of PlayURL. */
let videoUrl: string;
let bytes: Buffer;
let playUrl: string;
let downloadUrl: string;

beforeAll(async () => {
  t = await startServer({ processing: TINY_PROCESSING });
  client = await t.newApp();
  const clip = await makeClip({ seconds: 2, width: 320, height: 180 });
  videoId = await client.register();
  await placeSource(t.vop, videoId, clip);
  expect(await waitForStatus(t.vop, videoId, [1, 7])).toBe(1);
  const body = (await client.get('/Api/Video/Get', { Id: videoId })).body;
  videoUrl = body.VideoPlayFile[0].VideoURL;
  playUrl = body.MediaSever.PlayURL;
  downloadUrl = body.MediaSever.DownloadURL;
  bytes = fs.readFileSync(t.vop.media.resolveRelative('play', videoUrl)!);
});
afterAll(async () => {
  await t?.close();
});

const get = (url: string, headers: Record<string, string> = {}, method = 'GET') => fetch(url, { method, headers });

/**
 * The two ways delivery reads an object (http/fileResponse.ts): the local store's open file, and
 * stat then openRange, which every store has (S3 has only these). The second is taken by hiding
 * the local store's openLocalFileSync for the tests that name it.
 */
const READ_WAYS = ['openLocalFileSync', 'stat and openRange'] as const;
function readBy(way: (typeof READ_WAYS)[number]): void {
  beforeAll(() => {
    if (way === 'stat and openRange') (t.vop.objects as { openLocalFileSync?: unknown }).openLocalFileSync = undefined;
  });
  afterAll(() => {
    delete (t.vop.objects as { openLocalFileSync?: unknown }).openLocalFileSync;
  });
}

/**
 * Sets the video's renditions as a transcode does: out of status 1 and back, so that delivery's
 * cache of playable videos (services/mediaDelivery.ts) hears of it.
 */
async function setRenditions(list: Parameters<TestServer['vop']['stores']['videos']['setRenditions']>[1]): Promise<void> {
  expect(await t.vop.services.lifecycle.move(videoId, 5)).toBe(true);
  await t.vop.stores.videos.setRenditions(videoId, list);
  expect(await t.vop.services.lifecycle.move(videoId, 1)).toBe(true);
}

/**
 * A request with the path and headers sent exactly as written: fetch would normalise `..` and
 * `%2e`, and adds its own cache headers to conditional requests.
 */
function rawGet(pathAsSent: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const url = new URL(t.baseUrl);
    const req = http.request({ host: url.hostname, port: url.port, path: pathAsSent, method: 'GET', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Width and height of an image, from ffprobe. */
async function imageSize(data: Buffer): Promise<{ width: number; height: number }> {
  const file = path.join(makeTempDir(), 'image.jpg');
  fs.writeFileSync(file, data);
  const { ffprobe } = await testBinaries();
  const { stdout } = await promisify(execFile)(ffprobe.path, ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=width,height', '-of', 'json', file]);
  const s = JSON.parse(stdout).streams[0];
  return { width: s.width, height: s.height };
}

describe.each(READ_WAYS)('renditions, read by %s', (way) => {
  readBy(way);

  it('plays at PlayURL + VideoURL: video/mp4, length, validators, ranges accepted', async () => {
    const r = await get(`${playUrl}${videoUrl}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('video/mp4');
    // Media URLs are public, kept by caches but revalidated on every use (a deleted video's
    // media stop at once; the ETag makes it a 304), never sniffed.
    expect(r.headers.get('cache-control')).toBe('public, no-cache');
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.headers.get('content-length')).toBe(String(bytes.length));
    expect(r.headers.get('accept-ranges')).toBe('bytes');
    // The store's version of the object (MediaObjectInfo.etag), weak: it is not a hash of the bytes.
    expect(r.headers.get('etag')).toBe(`W/"${(await t.vop.objects.stat(`play/${videoUrl}`))!.etag}"`);
    expect(r.headers.get('last-modified')).toBeTruthy();
    expect(r.headers.get('content-disposition')).toBeNull();
    expect(Buffer.from(await r.arrayBuffer()).equals(bytes)).toBe(true);

    const head = await get(`${playUrl}${videoUrl}`, {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(bytes.length));
    expect(head.headers.get('etag')).toBe(r.headers.get('etag'));
    expect((await head.arrayBuffer()).byteLength).toBe(0);
    // HEAD takes no Range (as before, and as send does): the whole file's headers.
    const headRange = await get(`${playUrl}${videoUrl}`, { Range: 'bytes=0-9' }, 'HEAD');
    expect(headRange.status).toBe(200);
    expect(headRange.headers.get('content-length')).toBe(String(bytes.length));
  });

  it('downloads at DownloadURL + VideoURL as an attachment named after the file', async () => {
    const r = await get(`${downloadUrl}${videoUrl}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-disposition')).toBe(`attachment; filename="${path.basename(videoUrl)}"`);
    expect(r.headers.get('content-type')).toBe('video/mp4');
    expect(Buffer.from(await r.arrayBuffer()).equals(bytes)).toBe(true);
    // Ranges work on downloads too (resumed downloads).
    const part = await get(`${downloadUrl}${videoUrl}`, { Range: 'bytes=10-19' });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(10, 20))).toBe(true);
  });

  it('answers Range requests: first byte, suffix, open end, past the end (416), reversed (416), several (whole file)', async () => {
    const url = `${playUrl}${videoUrl}`;
    const len = bytes.length;

    const first = await get(url, { Range: 'bytes=0-0' });
    expect(first.status).toBe(206);
    expect(first.headers.get('content-range')).toBe(`bytes 0-0/${len}`);
    expect(first.headers.get('content-length')).toBe('1');
    expect(Buffer.from(await first.arrayBuffer()).equals(bytes.subarray(0, 1))).toBe(true);

    const last = await get(url, { Range: 'bytes=-1' });
    expect(last.status).toBe(206);
    expect(last.headers.get('content-range')).toBe(`bytes ${len - 1}-${len - 1}/${len}`);
    expect(Buffer.from(await last.arrayBuffer()).equals(bytes.subarray(len - 1))).toBe(true);

    const tail = await get(url, { Range: `bytes=${len - 100}-` });
    expect(tail.status).toBe(206);
    expect(tail.headers.get('content-range')).toBe(`bytes ${len - 100}-${len - 1}/${len}`);
    expect(Buffer.from(await tail.arrayBuffer()).equals(bytes.subarray(len - 100))).toBe(true);

    // RFC 9110 14.1.2: a last-pos past the end is cut to the end.
    const long = await get(url, { Range: `bytes=0-${len * 10}` });
    expect(long.status).toBe(206);
    expect(long.headers.get('content-range')).toBe(`bytes 0-${len - 1}/${len}`);
    await long.arrayBuffer();

    // RFC 9110 15.5.17: unsatisfiable → 416 with the current length.
    for (const range of [`bytes=${len}-`, `bytes=${len + 10}-${len + 20}`, 'bytes=-0']) {
      const past = await get(url, { Range: range });
      expect(past.status, range).toBe(416);
      expect(past.headers.get('content-range'), range).toBe(`bytes */${len}`);
      expect((await past.arrayBuffer()).byteLength).toBe(0);
    }

    // A reversed range is invalid (RFC 9110 14.1.1); a server may ignore or reject it (14.2):
    // `send` rejects it like an unsatisfiable one.
    const reversed = await get(url, { Range: 'bytes=5-2' });
    expect(reversed.status).toBe(416);
    expect(reversed.headers.get('content-range')).toBe(`bytes */${len}`);
    await reversed.arrayBuffer();

    // Several ranges: answered with the whole file (no multipart/byteranges), as RFC 9110 allows.
    const several = await get(url, { Range: 'bytes=0-0,10-20' });
    expect(several.status).toBe(200);
    expect((await several.arrayBuffer()).byteLength).toBe(len);

    // Not a bytes range: ignored.
    const other = await get(url, { Range: 'pages=1-2' });
    expect(other.status).toBe(200);
    await other.arrayBuffer();
  });

  it('answers conditional requests: If-None-Match and If-Modified-Since (304), If-Range', async () => {
    const url = `/media/play/${videoUrl}`;
    const first = await rawGet(url);
    const etag = first.headers.etag!;
    const lastModified = first.headers['last-modified']!;

    const byEtag = await rawGet(url, { 'If-None-Match': etag });
    expect(byEtag.status).toBe(304);
    expect(byEtag.headers.etag).toBe(etag);
    expect(byEtag.headers['cache-control']).toBe('public, no-cache');
    expect(byEtag.headers['access-control-allow-origin']).toBe('*');
    expect(byEtag.body.length).toBe(0);
    expect((await rawGet(url, { 'If-None-Match': `"x", ${etag}` })).status).toBe(304);
    expect((await rawGet(url, { 'If-Modified-Since': lastModified })).status).toBe(304);
    expect((await rawGet(url, { 'If-None-Match': 'W/"something-else"' })).status).toBe(200);
    expect((await rawGet(url, { 'If-Modified-Since': new Date(Date.parse(lastModified) - 60_000).toUTCString() })).status).toBe(200);
    // The origin server evaluates the condition whatever the request's Cache-Control (RFC 9110 13.2.1).
    expect((await rawGet(url, { 'If-None-Match': etag, 'Cache-Control': 'no-cache' })).status).toBe(304);
    // If-Match (weak comparison) and If-Unmodified-Since: 412 when they fail.
    expect((await rawGet(url, { 'If-Match': etag })).status).toBe(200);
    expect((await rawGet(url, { 'If-Match': 'W/"other"' })).status).toBe(412);
    expect((await rawGet(url, { 'If-Unmodified-Since': new Date(Date.parse(lastModified) - 60_000).toUTCString() })).status).toBe(412);

    // If-Range: the range only if the file is still the one the client has.
    const fresh = await rawGet(url, { Range: 'bytes=0-9', 'If-Range': etag });
    expect(fresh.status).toBe(206);
    expect(fresh.body.equals(bytes.subarray(0, 10))).toBe(true);
    const stale = await rawGet(url, { Range: 'bytes=0-9', 'If-Range': 'W/"0-0"' });
    expect(stale.status).toBe(200);
    expect(stale.body.length).toBe(bytes.length);
    const byDateRange = await rawGet(url, { Range: 'bytes=0-9', 'If-Range': lastModified });
    expect(byDateRange.status).toBe(206);
  });
});

describe.each(READ_WAYS)('large files, read by %s', (way) => {
  readBy(way);

  it('streams a large rendition whole and in ranges, and lets a client hang up mid-answer without leaking', async () => {
    const [date] = videoUrl.split('/') as [string, string];
    const name = `${videoId}_big.mp4`;
    const big = crypto.randomBytes(24 * 1024 * 1024 + 123);
    fs.writeFileSync(t.vop.media.path('play', date, name), big);
    const before = await t.vop.stores.videos.renditions(videoId);
    await setRenditions([...before, { videoId, label: 'big', width: 1, height: 1, bitrateKbps: 1, file: `${date}/${name}`, bytes: big.length }]);
    try {
      const whole = await get(`${playUrl}${date}/${name}`);
      expect(Buffer.from(await whole.arrayBuffer()).equals(big)).toBe(true);
      const middle = await get(`${playUrl}${date}/${name}`, { Range: `bytes=${3 * 1024 * 1024 - 7}-${5 * 1024 * 1024 + 9}` });
      expect(middle.status).toBe(206);
      expect(Buffer.from(await middle.arrayBuffer()).equals(big.subarray(3 * 1024 * 1024 - 7, 5 * 1024 * 1024 + 10))).toBe(true);
      // Every size of body each way sends (read at once, read whole in the thread pool, streamed),
      // across the local store's blocks, each twice (the second from its cache where it keeps one).
      for (const [start, length] of [
        [1000, 1024],
        [65_000, SYNC_READ_MAX_BYTES],
        [200_001, SYNC_READ_MAX_BYTES + 1],
        [7 * 1024 * 1024 + 3, CACHED_READ_MAX_BYTES],
        [9 * 1024 * 1024 + 5, CACHED_READ_MAX_BYTES + 1],
      ] as const) {
        for (let i = 0; i < 2; i++) {
          const r = await get(`${playUrl}${date}/${name}`, { Range: `bytes=${start}-${start + length - 1}` });
          expect(r.status).toBe(206);
          expect(r.headers.get('content-length')).toBe(String(length));
          expect(Buffer.from(await r.arrayBuffer()).equals(big.subarray(start, start + length)), `${start}+${length}`).toBe(true);
        }
      }

      const openFds = () => fs.readdirSync('/proc/self/fd').length;
      const fdsBefore = openFds();
      for (let i = 0; i < 5; i++) {
        await new Promise<void>((resolve, reject) => {
          const req = http.get(`${playUrl}${date}/${name}`, { agent: false }, (res) => {
            res.once('data', () => {
              req.destroy(); // hang up after the first chunk
              resolve();
            });
          });
          req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(err)));
        });
      }
      // The server lets go of each hung-up answer's file: the descriptors come back.
      await waitUntil('the descriptors of the hung-up answers closed', () => openFds() <= fdsBefore || notYet({ open: openFds(), before: fdsBefore }), { timeoutMs: 5_000 });
      expect(openFds()).toBeLessThanOrEqual(fdsBefore);
      expect((await get(`${playUrl}${videoUrl}`)).status).toBe(200);
      expect(t.logs.filter(isUnexpectedErrorLine)).toEqual([]);
    } finally {
      await setRenditions(before);
      fs.rmSync(t.vop.media.path('play', date, name));
    }
  });

  it('reads nothing for a client that left before the answer began, small body or large', async () => {
    const store: MediaStore = new LocalObjectMediaStore(new LocalMediaRoot(tempDataDir()));
    if (way === 'stat and openRange') (store as { openLocalFileSync?: unknown }).openLocalFileSync = undefined;
    const key = mediaKey('play', '20260101', 'big.mp4');
    const source = path.join(makeTempDir(), 'big.bin');
    fs.writeFileSync(source, crypto.randomBytes(4 * 1024 * 1024));
    await store.put(key, { file: source });
    const reads = [vi.spyOn(fs, 'read'), vi.spyOn(fs, 'readSync'), vi.spyOn(store, 'openRange')];
    try {
      for (const range of [`bytes=0-${SYNC_READ_MAX_BYTES - 1}`, `bytes=0-${CACHED_READ_MAX_BYTES - 1}`, undefined]) {
        let client: http.ClientRequest | undefined;
        const answered = new Promise<boolean>((resolve, reject) => {
          const server = http.createServer((req, res) => {
            // The client hangs up once its request has arrived, and the answer starts only after the
            // server has seen it go, 'close' and all: as when a client leaves while the video is looked up.
            res.once('close', () => {
              sendMediaObject(req, res, store, key, { contentType: 'video/mp4', maxAgeSeconds: 0, chunkBytes: 64 * 1024, sendTimeoutMs: 60_000 })
                .then(resolve, reject)
                .finally(() => server.close());
            });
            client!.destroy();
          });
          server.listen(0, '127.0.0.1', () => {
            const { port } = server.address() as { port: number };
            client = http.get({ host: '127.0.0.1', port, agent: false, headers: range ? { Range: range } : {} });
            client.on('error', () => undefined);
          });
        });
        expect(await answered).toBe(true);
      }
      for (const spy of reads) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of reads) spy.mockRestore();
    }
  });

  it('parses ranges as RFC 9110 says, with the choices of the send module where it leaves room', () => {
    expect(parseRange(undefined, 100)).toBeUndefined();
    expect(parseRange('bytes=0-0', 100)).toEqual({ start: 0, end: 0 });
    expect(parseRange('bytes=-1', 100)).toEqual({ start: 99, end: 99 });
    expect(parseRange('bytes=-1000', 100)).toEqual({ start: 0, end: 99 });
    expect(parseRange('bytes=90-', 100)).toEqual({ start: 90, end: 99 });
    expect(parseRange('BYTES = 10 - 20', 100)).toEqual({ start: 10, end: 20 });
    expect(parseRange('bytes=10-1000', 100)).toEqual({ start: 10, end: 99 });
    for (const unsatisfiable of ['bytes=100-', 'bytes=100-200', 'bytes=-0', 'bytes=5-2']) expect(parseRange(unsatisfiable, 100), unsatisfiable).toBe('unsatisfiable');
    expect(parseRange('bytes=0-0', 0)).toBe('unsatisfiable');
    for (const ignored of ['pages=1-2', 'bytes=', 'bytes=-', 'bytes=a-b', 'bytes=1-2,4-5', 'bytes 1-2', 'bytes=1.5-2']) expect(parseRange(ignored, 100), ignored).toBeUndefined();
  });
});

describe('covers', () => {
  it('serves the full-size cover without t, and exactly the spec 2.3 sizes with t=2..7', async () => {
    const cover = (await client.get('/Api/Video/Get', { Id: videoId })).body.VideoModel.PicSavePath as string;
    const full = await get(cover);
    expect(full.status).toBe(200);
    expect(full.headers.get('content-type')).toBe('image/jpeg');
    expect(await imageSize(Buffer.from(await full.arrayBuffer()))).toEqual({ width: 320, height: 180 });

    for (const [t, size] of Object.entries(COVER_SIZES)) {
      const r = await get(`${cover}?t=${t}`);
      expect(r.status, `t=${t}`).toBe(200);
      expect(r.headers.get('content-type')).toBe('image/jpeg');
      expect(await imageSize(Buffer.from(await r.arrayBuffer())), `t=${t}`).toEqual(size);
      expect(fs.existsSync(sizedCover(videoId, t))).toBe(true);
    }
    // Any other t: the full-size cover (decision documented in the README).
    for (const t of ['1', '8', 'abc', '']) {
      const r = await get(`${cover}?t=${t}`);
      expect(r.status).toBe(200);
      expect(await imageSize(Buffer.from(await r.arrayBuffer())), `t=${t}`).toEqual({ width: 320, height: 180 });
    }
  });

  it('makes each size once: concurrent first requests share one file, later ones come from disk', async () => {
    const cover = `${t.baseUrl}/media/cover/${videoId}.jpg?t=6`;
    fs.rmSync(sizedCover(videoId, '6'), { force: true });
    const answers = await Promise.all(Array.from({ length: 8 }, () => get(cover)));
    const bodies = await Promise.all(answers.map(async (r) => Buffer.from(await r.arrayBuffer())));
    expect(answers.every((r) => r.status === 200)).toBe(true);
    expect(bodies.every((b) => b.equals(bodies[0]!))).toBe(true);
    expect(await imageSize(bodies[0]!)).toEqual(COVER_SIZES[6]);
    const onDisk = fs.readFileSync(sizedCover(videoId, '6'));
    expect(onDisk.equals(bodies[0]!)).toBe(true);
    expect(fs.readdirSync(t.vop.media.path('covers', videoId)).filter((n) => n.includes('partial'))).toEqual([]);

    const mtime = fs.statSync(sizedCover(videoId, '6')).mtimeMs;
    const again = await get(cover);
    const etag = again.headers.get('etag');
    expect(etag).toBe(answers[0]!.headers.get('etag'));
    await again.arrayBuffer();
    expect(fs.statSync(sizedCover(videoId, '6')).mtimeMs).toBe(mtime); // not made again
    const revalidated = await rawGet(`/media/cover/${videoId}.jpg?t=6`, { 'If-None-Match': etag! });
    expect(revalidated.status).toBe(304);
  });
});

describe('HLS', () => {
  it('serves the master playlist, variant playlists and segments with their content types', async () => {
    const hlsUrl = (await client.get('/Api/Video/Get', { Id: videoId })).body.HlsURL as string;
    const master = await get(hlsUrl);
    expect(master.status).toBe(200);
    expect(master.headers.get('content-type')).toMatch(/^application\/vnd\.apple\.mpegurl/);
    expect(master.headers.get('access-control-allow-origin')).toBe('*');
    const text = await master.text();
    const variant = text.split('\n').find((l) => l.endsWith('.m3u8'))!;
    const variantUrl = new URL(variant, hlsUrl).toString();
    const playlist = await get(variantUrl);
    expect(playlist.status).toBe(200);
    expect(playlist.headers.get('content-type')).toMatch(/^application\/vnd\.apple\.mpegurl/);
    const segment = (await playlist.text()).split('\n').find((l) => l.endsWith('.ts'))!;
    const seg = await get(new URL(segment, variantUrl).toString());
    expect(seg.status).toBe(200);
    expect(seg.headers.get('content-type')).toBe('video/mp2t');
    expect((await seg.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });
});

describe('what is never served', () => {
  it('reads no path outside the media root: dot segments, encoded slashes, absolute paths', async () => {
    const [date, file] = videoUrl.split('/') as [string, string];
    // The token file exists only when none is configured: put one there to look for.
    const secret = 'not-to-be-served-0123456789';
    fs.writeFileSync(path.join(t.dataDir, 'admin-token'), `${secret}\n`);
    const attempts = [
      `/media/play/../../admin-token`,
      `/media/play/%2e%2e/%2e%2e/admin-token`,
      `/media/play/${date}/..%2f..%2f..%2fadmin-token`,
      `/media/play/${date}/%2e%2e%2f%2e%2e%2f%2e%2e%2fadmin-token`,
      `/media/play/%2e%2e%2f%2e%2e/admin-token`,
      `/media/download/${date}/..%2F..%2F..%2Fvop.db`,
      `/media/download//etc/passwd`,
      `/media/play/${encodeURIComponent(t.dataDir)}/admin-token`,
      `/media/play/${date}/${encodeURIComponent(path.join(t.dataDir, 'admin-token'))}`,
      `/media/cover/..%2f..%2f..%2fadmin-token`,
      `/media/cover/${videoId}.jpg%2f..%2f..%2f..%2fadmin-token`,
      `/media/hls/${videoId}/..%2f..%2f..%2fadmin-token`,
      `/media/hls/${videoId}/180p/..%2f..%2f..%2f..%2fadmin-token`,
      `/media/hls/..%2f..%2fadmin-token/x/index.m3u8`,
      `/media/hls/${videoId}/%2e%2e/%2e%2e%2fadmin-token`,
      `/media/play/${date}/${file}%00.txt`,
      `/media/play/${date}/${file}/..`,
    ];
    for (const p of attempts) {
      const r = await rawGet(p);
      expect([400, 404], p).toContain(r.status);
      const body = r.body.toString('latin1');
      expect(body, p).not.toContain(secret);
      expect(body, p).not.toContain('SQLite format');
      expect(body, p).not.toContain('root:');
    }
  });

  it('serves only files the video lists: not a stray file, not a temporary name', async () => {
    const [date] = videoUrl.split('/') as [string, string];
    const dir = t.vop.media.path('play', date);
    fs.writeFileSync(path.join(dir, `${videoId}_999p.mp4`), 'stray');
    fs.writeFileSync(path.join(dir, `.${videoId}_180p.mp4.partial-0123abcd.mp4`), 'half');
    expect((await get(`${playUrl}${date}/${videoId}_999p.mp4`)).status).toBe(404);
    expect((await rawGet(`/media/play/${date}/.${videoId}_180p.mp4.partial-0123abcd.mp4`)).status).toBe(404);
    expect((await get(`${playUrl}${date}/00000000-0000-4000-8000-000000000000_180p.mp4`)).status).toBe(404);
    expect((await get(`${t.baseUrl}/media/hls/${videoId}/180p/other.m3u8`)).status).toBe(404);
    fs.rmSync(path.join(dir, `${videoId}_999p.mp4`));
    fs.rmSync(path.join(dir, `.${videoId}_180p.mp4.partial-0123abcd.mp4`));
  });

  it('matches media paths as the Express routes did: fixed words in any case, one trailing slash, percent-encoded name characters', async () => {
    const [date, file] = videoUrl.split('/') as [string, string];
    for (const p of [`/MEDIA/Play/${date}/${file}`, `/media/play/${date}/${file}/`, `/media/play/${date}/${file.replace('_', '%5F')}`]) {
      const r = await rawGet(p);
      expect(r.status, p).toBe(200);
      expect(r.body.equals(bytes), p).toBe(true);
    }
    for (const p of [`/media/play/${date}/${file}//`, `/media//play/${date}/${file}`, `/media/play/${date}/${file}%2F`, `/media/play/${date}/${file}%zz`, `/media/play/${date}`]) {
      expect((await rawGet(p)).status, p).toBe(404);
    }
  });

  it('answers other methods with 405 and Allow', async () => {
    const r = await fetch(`${playUrl}${videoUrl}`, { method: 'POST' });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('GET, HEAD');
  });

  it('serves nothing of a video that is not in status 1', async () => {
    const clip = await makeClip({ seconds: 1, width: 320, height: 180 });
    const id = await client.register();
    await placeSource(t.vop, id, clip);
    expect(await waitForStatus(t.vop, id, [1, 7])).toBe(1);
    const body = (await client.get('/Api/Video/Get', { Id: id })).body;
    const urls = [
      `${body.MediaSever.PlayURL}${body.VideoPlayFile[0].VideoURL}`,
      `${body.MediaSever.DownloadURL}${body.VideoPlayFile[0].VideoURL}`,
      body.VideoModel.PicSavePath,
      `${body.VideoModel.PicSavePath}?t=2`,
      body.HlsURL,
      body.HlsURL.replace('master.m3u8', '180p/index.m3u8'),
    ];
    for (const u of urls) expect((await get(u)).status, u).toBe(200);
    // A cover file gone from disk, and a size the transcode did not make (a video transcoded
    // before it made them all): 404, and no size is attempted from it.
    fs.rmSync(t.vop.media.path('covers', id, 't5.jpg'));
    fs.renameSync(t.vop.media.path('covers', id, 'cover.jpg'), `${t.vop.media.path('covers', id, 'cover.jpg')}.away`);
    expect((await get(`${body.VideoModel.PicSavePath}?t=5`)).status).toBe(404);
    // Moved away by hand: seen within the open-file cache's validity (100 ms).
    await expect.poll(async () => (await get(body.VideoModel.PicSavePath)).status, { interval: 20, timeout: 2000 }).toBe(404);
    fs.renameSync(`${t.vop.media.path('covers', id, 'cover.jpg')}.away`, t.vop.media.path('covers', id, 'cover.jpg'));

    // Waiting for deletion (status 0): every file is still on disk, and none is served.
    expect(await t.vop.services.lifecycle.move(id, 0)).toBe(true);
    for (const u of urls) {
      const r = await get(u);
      expect(r.status, u).toBe(404);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      // Not kept by any cache: the refusal must not outlive a restore, nor a cache keep the video.
      expect(r.headers.get('cache-control'), u).toBe('no-store');
    }
    expect(listFiles(t.vop.media.path('play')).some((f) => f.includes(id))).toBe(true);
    const after = (await client.get('/Api/Video/Get', { Id: id })).body;
    expect(after.VideoPlayFile).toEqual([]);
    expect(after.HlsURL).toBe('');
  });
});

/** Where the cover of size `n` is cached. */
function sizedCover(id: string, n: string): string {
  return t.vop.media.path('covers', id, `t${n}.jpg`);
}
