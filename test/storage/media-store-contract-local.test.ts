/**
 * The media store contract (test/contracts/mediaStore.contract.ts) on local disk, the embedded
 * default, in the quick tier; and what only the local store does. test/storage/media-store-contract-s3.test.ts
 * runs the same contract on S3 (Ceph RGW).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalObjectMediaStore } from '../../server/storage/media/localObjectMediaStore.js';
import { LocalMediaRoot } from '../../server/storage/media/localMediaRoot.js';
import { bytes, mediaStoreContract, streamOf } from '../contracts/mediaStore.contract.js';
import { tempDataDir } from '../helpers/server.js';

/** Local disk: a data directory per test (under the run's temporary folder, removed at its end). */
mediaStoreContract('local disk', async () => {
  const local = new LocalMediaRoot(tempDataDir('vop-media-contract-'));
  return { store: new LocalObjectMediaStore(local), copies: false, close: async () => undefined };
});

describe('local disk specifics', () => {
  it('keeps objects as files under the media root, hides puts in progress from list, and has no presigned URL', async () => {
    const local = new LocalMediaRoot(tempDataDir('vop-media-contract-'));
    const s = new LocalObjectMediaStore(local);
    await s.put('play/20261123/v1-720p.mp4', { stream: streamOf(bytes(10)) });
    expect(fs.readFileSync(local.path('play', '20261123', 'v1-720p.mp4'))).toEqual(bytes(10));
    // What a put in progress looks like (atomicFile's hidden temporary name): never a key.
    fs.writeFileSync(path.join(local.path('play', '20261123'), '.v1-1080p.mp4.partial-abc.mp4'), 'half');
    expect((await s.list('play')).map((o) => o.key)).toEqual(['play/20261123/v1-720p.mp4']);
    expect(await s.presignedUrl('play/20261123/v1-720p.mp4')).toBeUndefined();
    expect(await s.freeBytes()).toBeGreaterThan(0);
    await s.deletePrefix('play');
    expect(fs.existsSync(local.path('play'))).toBe(true);
  });
});
