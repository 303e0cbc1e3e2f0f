/**
 * The media store contract (test/contracts/mediaStore.contract.ts) on S3, against a real Ceph RGW
 * (test/helpers/ceph.ts), a bucket per test; and what only object storage has: its options, bucket
 * creation, presigned URLs, multipart uploads, paged lists. test/storage/media-store-contract-local.test.ts
 * runs the same contract on local disk in the quick tier.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMediaStore } from '../../server/storage/media/openMediaStore.js';
import { openS3MediaStore, S3MediaStore } from '../../server/storage/media/s3MediaStore.js';
import { s3OptionsFromEnv, validateS3Options } from '../../server/storage/media/s3Options.js';
import { LocalMediaRoot } from '../../server/storage/media/localMediaRoot.js';
import { bytes, mediaStoreContract, PART, streamOf } from '../contracts/mediaStore.contract.js';
import { startCeph, type TestCeph } from '../helpers/ceph.js';
import { tempDataDir } from '../helpers/server.js';

describe('object storage options', () => {
  const env = { VOP_S3_ENDPOINT: 'http://127.0.0.1:7480', VOP_S3_BUCKET: 'vop-media', VOP_S3_ACCESS_KEY_ID: 'k', VOP_S3_SECRET_ACCESS_KEY: 's' };
  it('is off without VOP_S3_ENDPOINT, and reads the rest with defaults', () => {
    expect(s3OptionsFromEnv({})).toBeUndefined();
    expect(s3OptionsFromEnv({ ...env })).toMatchObject({ endpoint: 'http://127.0.0.1:7480', bucket: 'vop-media', region: 'us-east-1', forcePathStyle: false, createBucketIfMissing: true });
    expect(s3OptionsFromEnv({ ...env, VOP_S3_FORCE_PATH_STYLE: '1', VOP_S3_REGION: 'eu-west-3' })).toMatchObject({ forcePathStyle: true, region: 'eu-west-3' });
  });
  it('names the variable that is wrong', () => {
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_BUCKET: '' })).toThrow(/VOP_S3_BUCKET/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_BUCKET: 'Bad_Bucket' })).toThrow(/VOP_S3_BUCKET/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_ACCESS_KEY_ID: '' })).toThrow(/VOP_S3_ACCESS_KEY_ID/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_SECRET_ACCESS_KEY: undefined })).toThrow(/VOP_S3_SECRET_ACCESS_KEY/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_ENDPOINT: 'ftp://x' })).toThrow(/VOP_S3_ENDPOINT/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_ENDPOINT: 'not a url' })).toThrow(/VOP_S3_ENDPOINT/);
    expect(() => s3OptionsFromEnv({ ...env, VOP_S3_FORCE_PATH_STYLE: 'yes' })).toThrow(/VOP_S3_FORCE_PATH_STYLE/);
    expect(() => validateS3Options({ ...s3OptionsFromEnv(env), partSizeBytes: 1024 })).toThrow(/partSizeBytes/);
    expect(() => validateS3Options({ ...s3OptionsFromEnv(env), listPageSize: 1001 })).toThrow(/listPageSize/);
  });
  it('waits for an endpoint that does not answer with a log line per try, and gives up in bounded time', async () => {
    const lines: string[] = [];
    const started = Date.now();
    await expect(
      openS3MediaStore({ ...s3OptionsFromEnv({ ...env, VOP_S3_ENDPOINT: 'http://127.0.0.1:9' }), waitForEndpointMs: 1500, waitIntervalMs: 200, log: (l) => lines.push(l) }),
    ).rejects.toThrow(/did not answer within/);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines[0]).toMatch(/^Waiting for object storage at http:\/\/127\.0\.0\.1:9 \(bucket vop-media\), try 1/);
  });
});

/** S3 on a real Ceph RGW: the run's one cluster (test/helpers/ceph.ts), a bucket per test. */
describe('Ceph RGW', () => {
  let ceph: TestCeph | undefined;
  const logs: string[] = [];
  beforeAll(async () => {
    ceph = await startCeph();
    console.log(`Ceph RGW started in ${ceph.startMs} ms`);
  }, 120_000);
  afterAll(async () => ceph?.stop(), 30_000);

  const openBucket = (bucket = `vop-${crypto.randomBytes(6).toString('hex')}`, more: Record<string, unknown> = {}) =>
    openS3MediaStore({
      ...s3OptionsFromEnv({
        VOP_S3_ENDPOINT: ceph!.endpoint,
        VOP_S3_BUCKET: bucket,
        VOP_S3_ACCESS_KEY_ID: ceph!.accessKeyId,
        VOP_S3_SECRET_ACCESS_KEY: ceph!.secretAccessKey,
        VOP_S3_FORCE_PATH_STYLE: '1',
      }),
      partSizeBytes: PART,
      scratchDir: tempDataDir('vop-s3-scratch-'),
      log: (l) => logs.push(l),
      ...more,
    });

  mediaStoreContract('S3 (Ceph RGW)', async () => {
    const store = await openBucket();
    return { store, copies: true, close: async () => store.close() };
  });

  describe('S3 specifics', () => {
    let store: S3MediaStore;
    beforeAll(async () => {
      store = await openBucket();
    });
    afterAll(() => store?.close());

    it('creates the bucket when missing, with a log line, and opens an existing one quietly', async () => {
      const bucket = `vop-created-${crypto.randomBytes(4).toString('hex')}`;
      logs.length = 0;
      const first = await openBucket(bucket);
      // One line, naming the bucket and where it is.
      expect(logs).toHaveLength(1);
      expect(logs[0]).toContain(bucket);
      expect(logs[0]).toContain(ceph!.endpoint);
      await first.put('covers/v1/cover.jpg', { stream: streamOf(bytes(3)) });
      first.close();
      logs.length = 0;
      const again = await openBucket(bucket);
      expect(logs).toEqual([]);
      expect((await again.stat('covers/v1/cover.jpg'))?.size).toBe(3);
      again.close();
    });

    it('openMediaStore picks object storage when VOP_S3_ENDPOINT is set, local disk otherwise', async () => {
      const local = new LocalMediaRoot(tempDataDir('vop-media-contract-'));
      const onDisk = await openMediaStore(local, {});
      expect(onDisk.store.kind).toBe('local');
      onDisk.close();
      const bucket = `vop-env-${crypto.randomBytes(4).toString('hex')}`;
      const env = {
        VOP_S3_ENDPOINT: ceph!.endpoint,
        VOP_S3_BUCKET: bucket,
        VOP_S3_ACCESS_KEY_ID: ceph!.accessKeyId,
        VOP_S3_SECRET_ACCESS_KEY: ceph!.secretAccessKey,
        VOP_S3_FORCE_PATH_STYLE: '1',
      };
      const inS3 = await openMediaStore(local, env, { log: () => undefined });
      try {
        expect(inS3.store.kind).toBe('s3');
        await inS3.store.put('covers/v1/cover.jpg', { stream: streamOf(bytes(4)) });
        // The object is in the bucket the environment named, and not on the local disk.
        const direct = await openBucket(bucket);
        expect((await direct.stat('covers/v1/cover.jpg'))?.size).toBe(4);
        direct.close();
        expect(fs.existsSync(local.path('covers', 'v1', 'cover.jpg'))).toBe(false);
      } finally {
        inS3.close();
      }
      await expect(openMediaStore(local, { ...env, VOP_S3_BUCKET: 'Bad_Bucket' })).rejects.toThrow(/VOP_S3_BUCKET/);
    });

    it('refuses a wrong secret with an error that names the variables to check', async () => {
      await expect(openBucket(undefined, { secretAccessKey: 'wrong' })).rejects.toThrow(/refused bucket .*VOP_S3_SECRET_ACCESS_KEY/);
    });

    it('serves a presigned GET with Range (206) and a presigned HEAD, and refuses the GET URL for HEAD', async () => {
      const data = bytes(10_000, 6);
      const key = 'play/20261123/v1-720p.mp4';
      await store.put(key, { stream: streamOf(data) }, { contentType: 'video/mp4' });
      const get = await store.presignedUrl(key, { ttlSeconds: 60 });
      expect(get.startsWith(`${ceph!.endpoint}/`)).toBe(true);
      const whole = await fetch(get);
      expect(whole.status).toBe(200);
      expect(whole.headers.get('content-type')).toBe('video/mp4');
      expect(Buffer.from(await whole.arrayBuffer())).toEqual(data);
      const part = await fetch(get, { headers: { Range: 'bytes=100-199' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes 100-199/${data.length}`);
      expect(Buffer.from(await part.arrayBuffer())).toEqual(data.subarray(100, 200));
      const last = await fetch(get, { headers: { Range: 'bytes=-1' } });
      expect(last.status).toBe(206);
      expect(Buffer.from(await last.arrayBuffer())).toEqual(data.subarray(data.length - 1));

      const head = await fetch(await store.presignedUrl(key, { ttlSeconds: 60, method: 'HEAD' }), { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe(String(data.length));
      expect(head.headers.get('accept-ranges')).toBe('bytes');
      // A signature covers its method: the GET URL is no HEAD URL.
      expect((await fetch(get, { method: 'HEAD' })).status).toBe(403);
      // Nor is it a key to anything else.
      expect((await fetch(get.replace('v1-720p.mp4', 'v1-1080p.mp4'))).status).toBe(403);
    });

    it('presigned URLs expire, and their life is bounded', async () => {
      const key = 'covers/v1/cover.jpg';
      await store.put(key, { stream: streamOf(bytes(5)) });
      const url = await store.presignedUrl(key, { ttlSeconds: 1 });
      expect((await fetch(url)).status).toBe(200);
      // Past the URL's 1 s life (S3 counts whole seconds): time itself is what is tested.
      await new Promise((r) => setTimeout(r, 2100));
      expect((await fetch(url)).status).toBe(403);
      await expect(store.presignedUrl(key, { ttlSeconds: 0 })).rejects.toThrow(RangeError);
      await expect(store.presignedUrl(key, { ttlSeconds: 8 * 24 * 3600 })).rejects.toThrow(RangeError);
    });

    it('a multipart put that fails leaves no upload behind', async () => {
      const data = bytes(2 * PART + 10, 7);
      await expect(store.put('sources/v9/source', { stream: streamOf(data, 2 * PART + 5) })).rejects.toThrow(/source broke off/);
      const uploads = await store.client.send(new ListMultipartUploadsCommand({ Bucket: store.options.bucket }));
      expect(uploads.Uploads ?? []).toEqual([]);
    });

    it('lists and deletes past one page of results', async () => {
      const paged = await openBucket(undefined, { listPageSize: 2 });
      try {
        const keys = Array.from({ length: 7 }, (_, i) => `hls/many/seg-${i}.ts`);
        for (const k of keys) await paged.put(k, { stream: streamOf(Buffer.from(k)) });
        await paged.put('hls/other/seg-0.ts', { stream: streamOf(Buffer.from('x')) });
        expect((await paged.list('hls/many')).map((o) => o.key)).toEqual(keys);
        expect(await paged.deletePrefix('hls/many')).toBe(7);
        expect((await paged.list('hls')).map((o) => o.key)).toEqual(['hls/other/seg-0.ts']);
      } finally {
        paged.close();
      }
    });
  });
});
