/**
 * Media in S3-compatible object storage (issue 11, item 2), end to end on a real Ceph RGW
 * (test/helpers/ceph.ts): uploads (multipart and tus) become objects in the bucket, the transcode
 * reads its source from there and stores renditions, every cover size and HLS there, delivery
 * serves them through the server (Range, HEAD, validators), and deletion removes them. The nodes'
 * own disks keep nothing of a video once it is 1.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openS3MediaStore, type S3MediaStore } from '../server/storage/media/s3MediaStore.js';
import { startCeph, type TestCeph } from './helpers/ceph.js';
import type { SpecClient } from './helpers/client.js';
import { makeClip } from './helpers/clips.js';
import { sha256, tokenMetadata, tusCreate, tusMetadata, tusPatch } from './helpers/ingest.js';
import { TINY_PROCESSING, waitForStatus } from './helpers/processing.js';
import { startServer, tempDataDir, type TestServer } from './helpers/server.js';

let ceph: TestCeph;
let t: TestServer;
let client: SpecClient;
/** The test's own view of the bucket, to see what the server stored there. */
let bucket: S3MediaStore;
let clip: Buffer;

beforeAll(async () => {
  ceph = await startCeph();
  const objectStorage = {
    endpoint: ceph.endpoint,
    bucket: `vop-media-${crypto.randomBytes(4).toString('hex')}`,
    accessKeyId: ceph.accessKeyId,
    secretAccessKey: ceph.secretAccessKey,
    forcePathStyle: true,
  };
  t = await startServer({ objectStorage, processing: TINY_PROCESSING });
  client = await t.newApp();
  bucket = await openS3MediaStore({ ...objectStorage, scratchDir: tempDataDir('vop-s3-view-'), log: () => undefined });
  clip = fs.readFileSync(await makeClip({ seconds: 2, width: 320, height: 180 }));
}, 120_000);

afterAll(async () => {
  bucket?.close();
  await t?.close();
  await ceph?.stop();
}, 60_000);

/** Every file under the server's local media root and scratch that names `videoId`. */
function localFilesOf(videoId: string): string[] {
  const found: string[] = [];
  for (const root of [t.vop.media.root, path.join(t.vop.options.dataDir, 'scratch')]) {
    if (!fs.existsSync(root)) continue;
    for (const f of fs.readdirSync(root, { recursive: true }) as string[]) {
      if (f.includes(videoId) && fs.statSync(path.join(root, f)).isFile()) found.push(f);
    }
  }
  return found;
}

async function keysOf(videoId: string): Promise<string[]> {
  const keys: string[] = [];
  for (const area of ['sources', 'covers', 'hls'] as const) keys.push(...(await bucket.list(`${area}/${videoId}`)).map((o) => o.key));
  keys.push(...(await bucket.list('play')).map((o) => o.key).filter((k) => k.includes(videoId)));
  return keys.sort();
}

async function uploadMultipart(videoId: string, data: Buffer): Promise<string> {
  const form = new FormData();
  for (const [k, v] of Object.entries({ ...client.auth(), VideoId: videoId })) form.append(k, v);
  form.append('file', new Blob([Uint8Array.from(data)], { type: 'video/mp4' }), 'clip.mp4');
  const res = await fetch(`${t.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form });
  return (await res.json()).AuthMsg.ResultCode;
}

describe('media in S3-compatible object storage (Ceph RGW)', () => {
  it('stores an upload, transcodes it from the bucket into the bucket, serves it from there, and deletes it', async () => {
    const id = await client.register();
    expect(await uploadMultipart(id, clip)).toBe('1');
    expect(await waitForStatus(t.vop, id, [1, 7], 60_000)).toBe(1);

    const body = (await client.get('/Api/Video/Get', { Id: id })).body;
    const [file] = body.VideoPlayFile as Array<{ VideoURL: string }>;
    const keys = await keysOf(id);
    expect(keys).toEqual(
      expect.arrayContaining([
        `sources/${id}/source`,
        `play/${file!.VideoURL}`,
        `covers/${id}/cover.jpg`,
        ...[2, 3, 4, 5, 6, 7].map((n) => `covers/${id}/t${n}.jpg`),
        `hls/${id}/master.m3u8`,
        `hls/${id}/180p/index.m3u8`,
      ]),
    );
    // The source in the bucket is the upload, byte for byte; nothing of the video stays on the node.
    expect(sha256(Buffer.concat(await (await bucket.openRange(`sources/${id}/source`)).toArray()))).toBe(sha256(clip));
    expect(localFilesOf(id)).toEqual([]);

    // Delivery through the server, from the bucket: whole, a range, HEAD, a validator.
    const url = `${body.MediaSever.PlayURL}${file!.VideoURL}`;
    const stored = (await bucket.stat(`play/${file!.VideoURL}`))!;
    const whole = await fetch(url);
    expect(whole.status).toBe(200);
    expect(Number(whole.headers.get('content-length'))).toBe(stored.size);
    const bytes = Buffer.from(await whole.arrayBuffer());
    const range = await fetch(url, { headers: { Range: 'bytes=100-1123' } });
    expect(range.status).toBe(206);
    expect(range.headers.get('content-range')).toBe(`bytes 100-1123/${stored.size}`);
    expect(Buffer.from(await range.arrayBuffer())).toEqual(bytes.subarray(100, 1124));
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBe(stored.size);
    const etag = whole.headers.get('etag');
    expect(etag).toBeTruthy();
    expect((await fetch(url, { headers: { 'If-None-Match': etag! } })).status).toBe(304);
    for (const u of [body.VideoModel.PicSavePath, `${body.VideoModel.PicSavePath}?t=3`, body.HlsURL, body.HlsURL.replace('master.m3u8', '180p/index.m3u8')]) {
      const r = await fetch(u);
      expect(r.status, u).toBe(200);
      expect((await r.arrayBuffer()).byteLength, u).toBeGreaterThan(0);
    }
    // No cover size was made on request: the worker made them all (a serving node needs no ffmpeg).
    expect(t.logs.filter((l) => /ffmpeg/i.test(l) && /cover/i.test(l))).toEqual([]);

    // Deletion removes every object of the video from the bucket.
    expect((await t.admin.request('DELETE', `/videos/${id}`)).status).toBe(200);
    expect(await keysOf(id)).toEqual([]);
  });

  it('takes a tus upload on the node into the bucket', async () => {
    const id = await client.register();
    const created = await tusCreate(t.baseUrl, clip.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, id)) });
    expect(created.res.status).toBe(201);
    expect((await tusPatch(created.url!, 0, clip)).status).toBe(204);
    expect(await waitForStatus(t.vop, id, [1, 7], 60_000)).toBe(1);
    expect(sha256(Buffer.concat(await (await bucket.openRange(`sources/${id}/source`)).toArray()))).toBe(sha256(clip));
    expect(localFilesOf(id)).toEqual([]);
  });

  it('refuses a file that is not a video, and keeps nothing of it in the bucket', async () => {
    const id = await client.register();
    expect(await uploadMultipart(id, crypto.randomBytes(50_000))).toBe('307');
    expect(await keysOf(id)).toEqual([]);
    expect(localFilesOf(id)).toEqual([]);
  });
});

