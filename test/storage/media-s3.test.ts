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
import { CreateBucketCommand, DeleteBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openS3MediaStore, type S3MediaStore } from '../../server/storage/media/s3MediaStore.js';
import { startCeph, type TestCeph } from '../helpers/ceph.js';
import type { SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { sha256, tokenMetadata, tusCreate, tusMetadata, tusPatch } from '../helpers/ingest.js';
import { TINY_PROCESSING } from '../helpers/processing.js';
import { notYet, waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, tempDataDir, type TestServer } from '../helpers/server.js';

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

/**
 * Every file the node holds of `videoId` under its media root, and every file at all in its
 * scratch (copies made there are named after keys, not videos, and must all be gone).
 */
/**
 * {@link localFilesOf} once the video's jobs are over: the jobs after its first rendition (the
 * ladder, the seek previews) work in scratch too, and take their own copies there.
 */
async function settledLocalFilesOf(videoId: string): Promise<string[]> {
  await waitUntil(`the jobs of ${videoId} to be over`, async () => {
    const live = (await t.vop.stores.jobs.list({ videoId })).filter((j) => j.state === 'queued' || j.state === 'running');
    return live.length === 0 ? true : notYet(live.map((j) => `${j.type} ${j.state}`));
  }, { timeoutMs: 60_000, pollMs: 100 });
  return localFilesOf(videoId);
}

function localFilesOf(videoId: string): string[] {
  const files = (root: string) => (fs.existsSync(root) ? (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(root, f)).isFile()) : []);
  return [...files(t.vop.media.root).filter((f) => f.includes(videoId)), ...files(path.join(t.vop.options.dataDir, 'scratch')).map((f) => `scratch/${f}`)];
}

async function keysOf(videoId: string): Promise<string[]> {
  const keys: string[] = [];
  for (const area of ['sources', 'covers', 'hls'] as const) keys.push(...(await bucket.list(`${area}/${videoId}`)).map((o) => o.key));
  keys.push(...(await bucket.list('play')).map((o) => o.key).filter((k) => k.includes(videoId)));
  return keys.sort();
}

async function uploadMultipart(videoId: string, data: Buffer, to: { server: TestServer; client: SpecClient } = { server: t, client }): Promise<string> {
  const form = new FormData();
  for (const [k, v] of Object.entries({ ...to.client.auth(), VideoId: videoId })) form.append(k, v);
  form.append('file', new Blob([Uint8Array.from(data)], { type: 'video/mp4' }), 'clip.mp4');
  const res = await fetch(`${to.server.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form });
  return (await res.json()).AuthMsg.ResultCode;
}

describe('media in S3-compatible object storage (Ceph RGW)', () => {
  it('names the bucket in the admin /healthz', async () => {
    const res = await fetch(`${t.baseUrl}/healthz`, { headers: { authorization: `Bearer ${t.vop.adminToken}` } });
    const body = await res.json();
    expect(body.storage.media).toEqual({ engine: 's3', endpoint: ceph.endpoint, bucket: t.vop.options.objectStorage!.bucket });
  });

  it('stores an upload, transcodes it from the bucket into the bucket, serves it from there, and deletes it', async () => {
    const id = await client.register();
    expect(await uploadMultipart(id, clip)).toBe('1');
    expect(await waitForStatus(t.vop, id, [1, 7], { timeoutMs: 60_000 })).toBe(1);

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
    expect(await settledLocalFilesOf(id)).toEqual([]);

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

    // Deletion removes every object of the video from the bucket.
    expect((await t.admin.request('DELETE', `/videos/${id}`)).status).toBe(200);
    expect(await keysOf(id)).toEqual([]);
  });

  it('takes a tus upload on the node into the bucket', async () => {
    const id = await client.register();
    const created = await tusCreate(t.baseUrl, clip.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, id)) });
    expect(created.res.status).toBe(201);
    expect((await tusPatch(created.url!, 0, clip)).status).toBe(204);
    expect(await waitForStatus(t.vop, id, [1, 7], { timeoutMs: 60_000 })).toBe(1);
    expect(sha256(Buffer.concat(await (await bucket.openRange(`sources/${id}/source`)).toArray()))).toBe(sha256(clip));
    expect(await settledLocalFilesOf(id)).toEqual([]);
  });

  it('undoes the claim when the hand-over to the bucket fails, so the upload can be sent again', async () => {
    const name = `vop-gone-${crypto.randomBytes(4).toString('hex')}`;
    const credentials = { accessKeyId: ceph.accessKeyId, secretAccessKey: ceph.secretAccessKey };
    const other = await startServer({ objectStorage: { endpoint: ceph.endpoint, bucket: name, ...credentials, forcePathStyle: true }, processing: TINY_PROCESSING });
    const s3 = new S3Client({ endpoint: ceph.endpoint, region: 'us-east-1', forcePathStyle: true, credentials });
    try {
      const otherClient = await other.newApp();
      const id = await otherClient.register();
      // The bucket goes away (nothing is in it yet): the hand-over fails.
      await s3.send(new DeleteBucketCommand({ Bucket: name }));
      expect(await uploadMultipart(id, clip, { server: other, client: otherClient })).not.toBe('1');
      expect(fs.existsSync(other.vop.media.path('sources', id, 'source'))).toBe(false);
      expect((await other.vop.stores.videos.get(id))?.status).toBe(8);
      // Back again: the same upload is taken.
      await s3.send(new CreateBucketCommand({ Bucket: name }));
      expect(await uploadMultipart(id, clip, { server: other, client: otherClient })).toBe('1');
      expect(await waitForStatus(other.vop, id, [1, 7], { timeoutMs: 60_000 })).toBe(1);
    } finally {
      s3.destroy();
      await other.close();
    }
  });

  it('hands over at the next start a source a crash left claimed on the node', async () => {
    const objectStorage = t.vop.options.objectStorage!;
    const first = await startServer({ objectStorage, processing: TINY_PROCESSING });
    const c = await first.newApp();
    const id = await c.register();
    await first.close();
    // As a crash between the claim and the hand-over leaves it: the file claimed on this node's
    // disk, the video still waiting for its upload, nothing in the bucket.
    fs.mkdirSync(path.dirname(first.vop.media.path('sources', id, 'source')), { recursive: true });
    fs.writeFileSync(first.vop.media.path('sources', id, 'source'), clip);
    expect(await bucket.stat(`sources/${id}/source`)).toBeUndefined();
    const again = await startServer({ dataDir: first.dataDir, objectStorage, processing: TINY_PROCESSING });
    try {
      expect(await waitForStatus(again.vop, id, [1, 7], { timeoutMs: 60_000 })).toBe(1);
      expect(sha256(Buffer.concat(await (await bucket.openRange(`sources/${id}/source`)).toArray()))).toBe(sha256(clip));
      expect(fs.existsSync(again.vop.media.path('sources', id, 'source'))).toBe(false);
    } finally {
      await again.close();
    }
  });

  it('refuses a file that is not a video, and keeps nothing of it in the bucket', async () => {
    const id = await client.register();
    expect(await uploadMultipart(id, crypto.randomBytes(50_000))).toBe('307');
    expect(await keysOf(id)).toEqual([]);
    expect(localFilesOf(id)).toEqual([]);
  });
});

