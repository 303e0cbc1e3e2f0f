/**
 * Resumable uploads across API nodes (issue 11, item 3): two servers on one PostgreSQL
 * (test/helpers/postgres.ts) and one Ceph RGW bucket (test/helpers/ceph.ts), each with its own
 * data folder. A tus upload lives in the bucket (@tus/s3-store) and is locked in the database
 * (advisory locks), so a PATCH cut off on one node resumes on the other, a PATCH on one node
 * never interleaves with one in flight on the other, and a video has one live upload whichever
 * node took it. A multipart upload and a pull work through either node.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openS3MediaStore, type S3MediaStore } from '../../server/storage/media/s3MediaStore.js';
import { advisoryLockKey } from '../../server/storage/postgres/advisoryLocker.js';
import { startCeph, type TestCeph } from '../helpers/ceph.js';
import { SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { multipartUpload, openTusPatch, sha256, tokenMetadata, tusCreate, tusHead, tusMetadata, tusPatch, tusUploadId } from '../helpers/ingest.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { TINY_PROCESSING } from '../helpers/processing.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, tempDataDir, type TestServer } from '../helpers/server.js';

const MIB = 1024 * 1024;

let pgServer: TestPostgres;
let ceph: TestCeph;
let databaseUrl: string;
let a: TestServer;
let b: TestServer;
/** One application, as each node's client sees it. */
let viaA: SpecClient;
let viaB: SpecClient;
/** The test's own view of the bucket. */
let bucket: S3MediaStore;
/** The test's own connection, to see the locks the nodes hold. */
let db: pg.Client;
/** About 8 MB: more than S3's smallest part (5 MiB), so the upload is in parts in the bucket. */
let clip: Buffer;

/**
 * One rung at the clip's own size: an upload that completes is made playable by a stream copy,
 * with nothing to encode. Transcoding is not this file's subject, and the 720p clip encoded to
 * two small rungs cost seconds of CPU per upload while the next tests ran.
 */
const PROCESSING = { ...TINY_PROCESSING, ladder: { ...TINY_PROCESSING.ladder, rungs: [{ label: '720p', shortSide: 720, videoBitrateKbps: 20_000 }] } };

beforeAll(async () => {
  [pgServer, ceph] = await Promise.all([startPostgres(), startCeph()]);
  databaseUrl = await pgServer.createDatabase();
  const objectStorage = {
    endpoint: ceph.endpoint,
    bucket: `vop-tus-${crypto.randomBytes(4).toString('hex')}`,
    accessKeyId: ceph.accessKeyId,
    secretAccessKey: ceph.secretAccessKey,
    forcePathStyle: true,
  };
  // Two nodes: the same database and bucket, a data folder each (scratch only).
  // Pulls from this machine allowed: the pull test's source is a server on loopback.
  const ingest = { pull: { allow: ['127.0.0.0/8'] } };
  a = await startServer({ databaseUrl, objectStorage, processing: PROCESSING, ingest });
  b = await startServer({ databaseUrl, objectStorage, processing: PROCESSING, ingest });
  viaA = await a.newApp();
  viaB = new SpecClient(b.baseUrl, viaA.appId, viaA.secret);
  bucket = await openS3MediaStore({ ...objectStorage, scratchDir: tempDataDir('vop-tus-view-'), log: () => undefined });
  db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  clip = fs.readFileSync(await makeClip({ seconds: 10, width: 1280, height: 720 }));
}, 180_000);

afterAll(async () => {
  await db?.end();
  bucket?.close();
  await a?.close();
  await b?.close();
  await ceph?.stop();
  pgServer?.stop();
}, 60_000);

/** The id of a tus upload from its URL. */
/** The same upload URL on another node. */
const on = (node: TestServer, url: string) => `${node.baseUrl}${new URL(url).pathname}`;

async function sourceHash(videoId: string): Promise<string> {
  return sha256(Buffer.concat(await (await bucket.openRange(`sources/${videoId}/source`)).toArray()));
}

/** What the bucket holds of a tus upload at its root (its bytes, description, tail). */
async function tusObjects(id: string): Promise<string[]> {
  const page = await bucket.client.send(new ListObjectsV2Command({ Bucket: bucket.options.bucket, Delimiter: '/', Prefix: id }));
  return (page.Contents ?? []).map((o) => o.Key!);
}

/** The S3 multipart uploads under way for key `id` (a tus upload's parts before it completes). */
async function multipartUploadsOf(id: string): Promise<string[]> {
  const page = await bucket.client.send(new ListMultipartUploadsCommand({ Bucket: bucket.options.bucket, Prefix: id }));
  return (page.Uploads ?? []).map((u) => u.UploadId!);
}

/** Whether some session holds the advisory lock of tus upload `id` (pg_locks splits the 64-bit key in two). */
async function lockHeld(id: string): Promise<boolean> {
  const key = BigInt.asUintN(64, BigInt(advisoryLockKey('tus', id)));
  const { rows } = await db.query(
    "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND classid::bigint = $1 AND objid::bigint = $2",
    [String(key >> 32n), String(key & 0xffffffffn)],
  );
  return rows[0].n > 0;
}

/** Bytes of an upload node `node` has received into the write under way (its ledger's count). */
const received = (node: TestServer, id: string) => node.vop.services.ingest.room.uploads.get(id)?.written;

/** Resolves with the status of a PATCH the test writes by hand, once the server answers (or 0 if the connection drops first). */
function answerOf(req: http.ClientRequest): Promise<{ status: number; offset: string | undefined }> {
  return new Promise((resolve) => {
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, offset: res.headers['upload-offset'] as string | undefined });
    });
    req.on('error', () => resolve({ status: 0, offset: undefined }));
  });
}

describe('tus across two API nodes (PostgreSQL, Ceph RGW)', () => {
  it('resumes on node B an upload cut off on node A, and the source in the bucket is the file', async () => {
    const videoId = await viaA.register();
    const created = await tusCreate(a.baseUrl, clip.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(viaA, videoId)) });
    expect(created.res.status, created.body).toBe(201);
    const url = created.url!;
    const id = tusUploadId(url);

    // A PATCH to node A announces the whole file, sends 5.5 MiB, then its connection drops.
    const cutAt = 5.5 * MIB;
    expect(clip.length).toBeGreaterThan(cutAt + MIB);
    const cut = openTusPatch(url, clip.length);
    cut.on('error', () => undefined);
    cut.write(clip.subarray(0, cutAt));
    await waitUntil('node A to receive 5.5 MiB', () => (received(a, id) === cutAt ? true : undefined));
    // The lock node A holds is the database's, not one in A's memory.
    expect(await lockHeld(id)).toBe(true);
    cut.destroy();

    // Node B knows the upload from the bucket alone: what A kept of the cut PATCH is its offset.
    const head = await tusHead(on(b, url));
    expect(head.status).toBe(200);
    expect(head.headers.get('upload-length')).toBe(String(clip.length));
    const offset = Number(head.headers.get('upload-offset'));
    expect(offset).toBe(cutAt);

    // The rest goes to node B, which finishes the upload.
    const last = await tusPatch(on(b, url), offset, clip.subarray(offset));
    expect(last.status, await last.clone().text()).toBe(204);
    expect(last.headers.get('upload-offset')).toBe(String(clip.length));
    expect(last.headers.get('x-video-status')).toBe('5');
    expect(await waitForStatus(b.vop, videoId, [1, 7], { timeoutMs: 120_000 })).toBe(1);
    expect(await sourceHash(videoId)).toBe(sha256(clip));

    // Finished once, then forgotten everywhere: both nodes answer 404 (tus: a removed upload is
    // 404 or 410), a late PATCH to A changes nothing, and nothing of it is left in the bucket.
    expect((await tusHead(url)).status).toBe(404);
    expect((await tusHead(on(b, url))).status).toBe(404);
    expect((await tusPatch(url, clip.length, Buffer.alloc(0))).status).toBe(404);
    expect(await tusObjects(id)).toEqual([]);
    expect(await lockHeld(id)).toBe(false);
    expect((await b.vop.stores.videos.statusHistory(videoId)).filter((c) => c.to === 5)).toHaveLength(1);
  }, 180_000);

  it("resumes on node B an upload page's upload begun on node A, with the credential node A gave it", async () => {
    const videoId = await viaA.register();
    const auth = viaA.auth();
    const session = await a.vop.services.ingest.openUploadSession({ appId: auth.AppId, timestamp: auth.Timestamp, token: auth.Token }, videoId, {}, '127.0.0.1');
    const credential = { 'X-Upload-Credential': session.credential };
    const created = await tusCreate(a.baseUrl, clip.length, { ...credential, 'Upload-Metadata': tusMetadata({ videoId, filename: 'clip.mp4' }) });
    expect(created.res.status, created.body).toBe(201);
    const half = Math.floor(clip.length / 2);
    expect((await tusPatch(created.url!, 0, clip.subarray(0, half), credential)).status).toBe(204);

    // Node B checks the credential node A signed (the key comes from the admin token both share).
    const url = on(b, created.url!);
    expect((await tusHead(url)).status).toBe(401); // without it: the upload was made with a credential
    expect((await tusHead(url, credential)).headers.get('upload-offset')).toBe(String(half));
    const last = await tusPatch(url, half, clip.subarray(half), credential);
    expect(last.status, await last.clone().text()).toBe(204);
    expect(last.headers.get('x-video-status')).toBe('5');
    expect(await sourceHash(videoId)).toBe(sha256(clip));
  }, 180_000);

  it('makes a PATCH on node B wait for the one node A has in flight, and never mixes their bytes', async () => {
    const videoId = await viaA.register();
    const created = await tusCreate(a.baseUrl, clip.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(viaA, videoId)) });
    expect(created.res.status, created.body).toBe(201);
    const url = created.url!;
    const id = tusUploadId(url);

    // Node A's PATCH has 1 MiB in and holds the upload's lock, its client still sending.
    const inFlight = openTusPatch(url, clip.length);
    const aAnswer = answerOf(inFlight);
    inFlight.write(clip.subarray(0, MIB));
    await waitUntil('node A to receive 1 MiB', () => (received(a, id) === MIB ? true : undefined));
    expect(await lockHeld(id)).toBe(true);

    // A second client sends other bytes to node B for the same offset 0. @tus/server's lock
    // protocol: B asks the holder to let go (across nodes, by NOTIFY), A ends its write with the
    // bytes it has, and only then does B take the lock, find the offset moved, and refuse (409).
    const other = crypto.randomBytes(64 * 1024);
    const competing = await tusPatch(on(b, url), 0, other);
    expect(competing.status).toBe(409);
    const fromA = await aAnswer;
    expect([0, 204]).toContain(fromA.status);
    inFlight.destroy();

    // What the upload holds is A's 1 MiB and nothing of B's; resumed from there, it is the file.
    const offset = Number((await tusHead(on(b, url))).headers.get('upload-offset'));
    expect(offset).toBe(MIB);
    const last = await tusPatch(on(b, url), offset, clip.subarray(offset));
    expect(last.status, await last.clone().text()).toBe(204);
    expect(last.headers.get('x-video-status')).toBe('5');
    expect(await sourceHash(videoId)).toBe(sha256(clip));
    expect(await tusObjects(id)).toEqual([]);
  }, 180_000);

  it('keeps one live upload per video across the nodes', async () => {
    const videoId = await viaA.register();
    const meta = () => ({ 'Upload-Metadata': tusMetadata(tokenMetadata(viaA, videoId)) });
    const first = await tusCreate(a.baseUrl, clip.length, meta());
    expect(first.res.status, first.body).toBe(201);

    // Node B has no upload of the video in its own ledger, and still refuses a second one (303).
    const second = await tusCreate(b.baseUrl, clip.length, meta());
    expect(second.res.status).toBe(403);
    expect(second.body).toMatch(/^ErrorCode : 303, .*another upload of this video is under way/);

    // Ended through node B (tus termination), the first no longer stands in the way.
    const ended = await fetch(on(b, first.url!), { method: 'DELETE', headers: { 'Tus-Resumable': '1.0.0' } });
    expect(ended.status).toBe(204);
    const third = await tusCreate(b.baseUrl, clip.length, meta());
    expect(third.res.status, third.body).toBe(201);
    expect((await tusPatch(third.url!, 0, clip)).headers.get('x-video-status')).toBe('5');
    expect(await sourceHash(videoId)).toBe(sha256(clip));
  }, 180_000);

  it("sweeps an unfinished upload past its expiry out of the bucket, the multipart upload's parts included", async () => {
    const videoId = await viaA.register();
    const created = await tusCreate(a.baseUrl, clip.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(viaA, videoId)) });
    expect(created.res.status, created.body).toBe(201);
    const url = created.url!;
    const id = tusUploadId(url);
    // 5.5 MiB: a part of the multipart upload, not only a short tail.
    expect((await tusPatch(url, 0, clip.subarray(0, 5.5 * MIB))).status).toBe(204);
    expect(await tusObjects(id)).toEqual([`${id}.info`]);
    expect(await multipartUploadsOf(id)).toHaveLength(1);

    // A third node whose uploads expire after one second (A and B keep the default day): to it,
    // the upload is soon past its expiry, and its sweep (at its start, or the one called here)
    // removes it for every node.
    const c = await startServer({ databaseUrl, objectStorage: a.vop.options.objectStorage, processing: PROCESSING, ingest: { uploadExpiryMs: 1000 } });
    try {
      // 410 once expired, 404 once swept (C's start may already have).
      await waitUntil('node C to take the upload for expired', async () => ((await tusHead(on(c, url))).status !== 200 ? true : undefined));
      await c.vop.tus.sweepExpired();
    } finally {
      await c.close();
    }
    expect(await tusObjects(id)).toEqual([]);
    expect(await multipartUploadsOf(id)).toEqual([]);
    expect((await tusHead(url)).status).toBe(404);
    // The video takes another upload at once.
    const again = await tusCreate(b.baseUrl, clip.length, { 'Upload-Metadata': tusMetadata(tokenMetadata(viaA, videoId)) });
    expect(again.res.status, again.body).toBe(201);
  }, 180_000);

  it('takes a multipart upload on node B into the bucket', async () => {
    const videoId = await viaB.register();
    expect(await multipartUpload(viaB, videoId, clip)).toBe('1');
    expect(await waitForStatus(a.vop, videoId, [1, 7], { timeoutMs: 120_000 })).toBe(1);
    expect(await sourceHash(videoId)).toBe(sha256(clip));
  }, 180_000);

  it('pulls a video registered through node B into the bucket (the download job runs on whichever node takes it)', async () => {
    const source = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': clip.length }).end(clip));
    await new Promise<void>((resolve) => source.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = source.address() as AddressInfo;
      const videoId = await viaB.register({ SourceFileGetType: 2, SourceFilePath: `http://127.0.0.1:${port}/clip.mp4` });
      expect(await waitForStatus(a.vop, videoId, [1, 4, 7], { timeoutMs: 120_000 })).toBe(1);
      expect(await sourceHash(videoId)).toBe(sha256(clip));
    } finally {
      source.close();
    }
  }, 180_000);
});
