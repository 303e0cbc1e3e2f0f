import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DeliveryRecord } from '../../server/storage/callbackRecords.js';
import type { JobRecord } from '../../server/storage/jobRecords.js';
import type { AppRecord, Stores } from '../../server/storage/types.js';
import { videoRecord } from '../helpers/fixtures.js';
import { freshStoresPerTest, insertApp, type StoreFactory } from './storesHarness.js';

/**
 * The contract of the storage as a whole (server/storage/types.ts Stores): what every store kept
 * is there for a new process, and the numbering of jobs and deliveries goes on after it. Run
 * against every engine, as the contract of each store is.
 */
export function storesContract(engine: string, factory: StoreFactory): void {
  describe(`Stores contract: ${engine}`, () => {
    let s: Stores;
    const { reopen } = freshStoresPerTest(factory, (fresh) => (s = fresh));
    const newApp = (overrides: Partial<AppRecord> = {}) => insertApp(s, overrides);

    it('keeps everything across a close and a new open', async () => {
      const a = await newApp();
      await s.apps.setGrants(a.appId, [a.appId]);
      const v = videoRecord(a.appId, { status: 8 });
      await s.videos.insert(v);
      await s.videos.setStatus(v.id, 1, { now: 5000 });
      await s.videos.setRenditions(v.id, [{ videoId: v.id, label: '360p', width: 1, height: 2, bitrateKbps: 3, file: 'f', bytes: 4 }]);
      const j: JobRecord = {
        id: crypto.randomUUID(), type: 't', videoId: v.id, appId: '', payload: { a: 1 }, state: 'queued', priority: 0, seq: 1, attempts: 0, maxAttempts: 1,
        runAfter: 0, progress: 0, error: '', createdAt: 1, startedAt: null, finishedAt: null, updatedAt: 1, lease: '',
      };
      await s.jobs.insert(j);
      const jobSeq = (await s.jobs.get(j.id))!.seq;
      const d: DeliveryRecord = {
        id: crypto.randomUUID(), seq: 1, appId: a.appId, kind: 'status', videoId: v.id, videoStatus: 1, statusAt: 4000, state: 'pending', series: 1,
        seriesAttempts: 0, firstAttemptAt: null, nextAttemptAt: 1, deliveredAt: null, lastError: '', attemptJob: '', createdAt: 1, updatedAt: 1,
      };
      await s.callbacks.insert(d);
      const deliverySeq = (await s.callbacks.get(d.id))!.seq;
      await s.close();
      const again = await reopen();
      expect(await again.apps.get(a.appId)).toEqual(a);
      expect(await again.apps.grants(a.appId)).toEqual([a.appId]);
      expect(await again.videos.get(v.id)).toMatchObject({ status: 1, updatedAt: 5000 });
      expect(await again.videos.statusHistory(v.id)).toHaveLength(2);
      expect(await again.videos.renditions(v.id)).toHaveLength(1);
      // The job took its video's application when it was inserted (JobRecord.appId).
      expect(await again.jobs.get(j.id)).toEqual({ ...j, appId: a.appId, seq: jobSeq });
      expect(await again.callbacks.get(d.id)).toEqual({ ...d, seq: deliverySeq });
      // Numbering goes on after what was stored.
      expect(await again.jobs.maxSeq()).toBeGreaterThanOrEqual(jobSeq);
      expect(await again.callbacks.maxSeq()).toBeGreaterThanOrEqual(deliverySeq);
      expect(again.warnings()).toEqual([]);
    });
  });
}
