import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AttemptRecord, DeliveryRecord } from '../../server/storage/callbackRecords.js';
import type { AppRecord, Stores } from '../../server/storage/types.js';
import { videoRecord } from '../helpers/fixtures.js';
import { freshStoresPerTest, insertApp, type StoreFactory } from './storesHarness.js';

/**
 * The contract of status callback deliveries and their attempts, and the outbox that writes them
 * with a status move (server/storage/callbackRecords.ts CallbackStore), written once and run
 * against every engine (test/storage/store-contract-embedded.test.ts: sql.js;
 * test/storage/store-contract-postgres.test.ts: PostgreSQL), the way tus-node-server runs one suite
 * against every store. An engine passes it by what its methods answer, never by how it stores
 * them.
 */
export function callbackStoreContract(engine: string, factory: StoreFactory): void {
  describe(`CallbackStore contract: ${engine}`, () => {
    let s: Stores;
    freshStoresPerTest(factory, (fresh) => (s = fresh));
    const newApp = (overrides: Partial<AppRecord> = {}) => insertApp(s, overrides);

    let seq = 0;
    const delivery = (overrides: Partial<DeliveryRecord> = {}): DeliveryRecord => ({
      id: crypto.randomUUID(), seq: ++seq, appId: 'app', kind: 'status', videoId: crypto.randomUUID(), videoStatus: 1, statusAt: 1000,
      state: 'pending', series: 1, seriesAttempts: 0, firstAttemptAt: null, nextAttemptAt: 1000, deliveredAt: null, lastError: '',
      attemptJob: '', createdAt: 1000, updatedAt: 1000, ...overrides,
    });
    const stored = (d: DeliveryRecord) => ({ ...d, seq: expect.any(Number) });
    const attempt = (d: DeliveryRecord, n: number, overrides: Partial<AttemptRecord> = {}): AttemptRecord => ({
      deliveryId: d.id, series: d.series, attempt: n, at: 2000 + n, url: 'http://cb/', httpStatus: 500, error: 'HTTP 500',
      latencyMs: 12, responseExcerpt: 'oops', ok: false, ...overrides,
    });

    it('reads back what it stored; a second status delivery for the same change is refused', async () => {
      const d = delivery({ firstAttemptAt: 5, deliveredAt: 6, lastError: 'x' });
      expect(await s.callbacks.insert(d)).toBe(true);
      expect(await s.callbacks.get(d.id)).toEqual(stored(d));
      expect(await s.callbacks.get(crypto.randomUUID())).toBeUndefined();
      expect(await s.callbacks.insert(delivery({ videoId: d.videoId }))).toBe(false);
      expect(await s.callbacks.insert(delivery({ videoId: d.videoId, statusAt: 1001 }))).toBe(true);
      expect(await s.callbacks.insert(delivery({ videoId: d.videoId, videoStatus: 4 }))).toBe(true);
      // Tests are not status changes: any number of them.
      const test = { kind: 'test' as const, videoId: '00000000-0000-0000-0000-000000000000', statusAt: null };
      expect(await s.callbacks.insert(delivery(test))).toBe(true);
      expect(await s.callbacks.insert(delivery(test))).toBe(true);
      expect((await s.callbacks.listByApp('app', { limit: 100 })).length).toBe(5);
    });

    it('inserts many at once and says which were stored', async () => {
      expect(await s.callbacks.insertMany([])).toEqual([]);
      const first = Array.from({ length: 250 }, (_, i) => delivery({ videoId: `video-${i}`, state: 'skipped', nextAttemptAt: null }));
      expect(await s.callbacks.insertMany(first)).toEqual(first.map(() => true));
      const again = Array.from({ length: 300 }, (_, i) => delivery({ videoId: `video-${i}`, statusAt: i % 2 === 0 ? 1000 : 2000, state: 'skipped' }));
      expect(await s.callbacks.insertMany(again)).toEqual(again.map((_, i) => i >= 250 || i % 2 === 1));
      expect(await s.callbacks.get(again[0]!.id)).toBeUndefined();
      expect(await s.callbacks.get(again[1]!.id)).toEqual(stored(again[1]!));
      expect((await s.callbacks.listByApp('app', { limit: 1000 })).length).toBe(250 + 175);
    });

    it('lists an application’s deliveries newest first, a page before a seq at a time', async () => {
      const ds = Array.from({ length: 5 }, () => delivery());
      for (const d of ds.slice(0, 2)) await s.callbacks.insert(d);
      await s.callbacks.insertMany(ds.slice(2));
      await s.callbacks.insert(delivery({ appId: 'other' }));
      const page1 = await s.callbacks.listByApp('app', { limit: 2 });
      expect(page1.map((d) => d.id)).toEqual([ds[4]!.id, ds[3]!.id]);
      expect(page1[0]).toEqual(stored(ds[4]!));
      const page2 = await s.callbacks.listByApp('app', { limit: 2, beforeSeq: page1[1]!.seq });
      expect(page2.map((d) => d.id)).toEqual([ds[2]!.id, ds[1]!.id]);
      const page3 = await s.callbacks.listByApp('app', { limit: 2, beforeSeq: page2[1]!.seq });
      expect(page3.map((d) => d.id)).toEqual([ds[0]!.id]);
      expect(await s.callbacks.listByApp('nobody', { limit: 2 })).toEqual([]);
      expect(await s.callbacks.maxSeq()).toBeGreaterThanOrEqual(Math.max(...(await s.callbacks.listByApp('other', { limit: 1 })).map((d) => d.seq), page1[0]!.seq));
    });

    it('lists pending deliveries oldest first', async () => {
      const [p1, done, p2] = [delivery(), delivery({ state: 'delivered' }), delivery({ appId: 'other' })];
      await s.callbacks.insertMany([p1, done, p2]);
      expect((await s.callbacks.listPending()).map((d) => d.id)).toEqual([p1.id, p2.id]);
      expect(await s.callbacks.maxSeq()).toBeGreaterThan(0);
    });

    it('updates, with `expect` only if the series and attempt count still match', async () => {
      const d = delivery();
      await s.callbacks.insert(d);
      expect(await s.callbacks.update(d.id, { state: 'failed', nextAttemptAt: null, lastError: 'window over', updatedAt: 3000 }, { series: 1, seriesAttempts: 1 })).toBe(false);
      expect(await s.callbacks.update(d.id, { state: 'failed', nextAttemptAt: null, lastError: 'window over', updatedAt: 3000 }, { series: 1, seriesAttempts: 0 })).toBe(true);
      expect(await s.callbacks.get(d.id)).toEqual({ ...stored(d), state: 'failed', nextAttemptAt: null, lastError: 'window over', updatedAt: 3000 });
      expect(await s.callbacks.update(d.id, { state: 'pending', series: 2, seriesAttempts: 0, firstAttemptAt: null })).toBe(true);
      expect(await s.callbacks.get(d.id)).toMatchObject({ state: 'pending', series: 2, seriesAttempts: 0 });
      expect(await s.callbacks.update(d.id, {})).toBe(false);
      expect(await s.callbacks.update(crypto.randomUUID(), { state: 'failed' })).toBe(false);
    });

    it('logs every attempt, and applies its standing only when the delivery still expects it', async () => {
      const d = delivery();
      await s.callbacks.insert(d);
      const a1 = attempt(d, 1);
      expect(await s.callbacks.recordAttempt(a1, { firstAttemptAt: a1.at, nextAttemptAt: 9000, lastError: 'HTTP 500', updatedAt: a1.at })).toBe(true);
      expect(await s.callbacks.get(d.id)).toMatchObject({ seriesAttempts: 1, firstAttemptAt: a1.at, nextAttemptAt: 9000, lastError: 'HTTP 500', state: 'pending' });
      // The same attempt again (a job retried after a crash) changes nothing.
      expect(await s.callbacks.recordAttempt(a1, { lastError: 'again' })).toBe(false);
      // A redelivery started a new series meanwhile: this late attempt is logged, nothing more.
      await s.callbacks.update(d.id, { series: 2, seriesAttempts: 0, lastError: '' });
      const late = attempt(d, 2);
      expect(await s.callbacks.recordAttempt(late, { state: 'failed', lastError: 'late' })).toBe(false);
      expect(await s.callbacks.get(d.id)).toMatchObject({ series: 2, seriesAttempts: 0, state: 'pending', lastError: '' });
      const ok = attempt({ ...d, series: 2 }, 1, { httpStatus: 204, error: '', ok: true, responseExcerpt: '' });
      expect(await s.callbacks.recordAttempt(ok, { state: 'delivered', deliveredAt: ok.at, nextAttemptAt: null, updatedAt: ok.at })).toBe(true);
      expect(await s.callbacks.get(d.id)).toMatchObject({ series: 2, seriesAttempts: 1, state: 'delivered', deliveredAt: ok.at, nextAttemptAt: null });
      // Not pending any more: no attempt is expected.
      expect(await s.callbacks.recordAttempt(attempt({ ...d, series: 2 }, 2), { lastError: 'x' })).toBe(false);
      const other = delivery();
      await s.callbacks.insert(other);
      const noAnswer = attempt(other, 1, { httpStatus: null, error: 'refused' });
      await s.callbacks.recordAttempt(noAnswer, {});
      expect(await s.callbacks.attempts([d.id])).toEqual([a1, late, ok, attempt({ ...d, series: 2 }, 2)].sort((x, y) => x.series - y.series || x.attempt - y.attempt));
      expect(await s.callbacks.attempts([other.id, d.id])).toHaveLength(5);
      expect(await s.callbacks.attempts([other.id])).toEqual([noAnswer]);
      expect(await s.callbacks.attempts([])).toEqual([]);
    });

    it('writes the delivery of a move to an end state with the move itself (the outbox), once per change', async () => {
      const loud = await newApp({ callbackUrl: 'http://cb.example/vop' });
      const quiet = await newApp();
      const off = await newApp({ callbackUrl: 'http://cb.example/vop', disabled: true });
      const v1 = videoRecord(loud.appId, { status: 6 });
      const v2 = videoRecord(quiet.appId, { status: 3 });
      const v3 = videoRecord(off.appId, { status: 6 });
      for (const v of [v1, v2, v3]) await s.videos.insert(v);
      const ofVideo = async (appId: string, videoId: string) => (await s.callbacks.listByApp(appId, { limit: 100 })).filter((d) => d.videoId === videoId);

      expect(await s.videos.setStatus(v1.id, 1, { now: 7000, from: [6] })).toBe(true);
      // No event, no service: the row is there as soon as the move is.
      const [d1, ...more] = await ofVideo(loud.appId, v1.id);
      expect(more).toEqual([]);
      expect(d1).toMatchObject({ kind: 'status', appId: loud.appId, videoStatus: 1, statusAt: 7000, state: 'pending', series: 1, seriesAttempts: 0,
        nextAttemptAt: 7000, lastError: '', attemptJob: '', createdAt: 7000 });
      expect(await s.callbacks.listUnqueued({ limit: 10 })).toEqual([d1]);
      // Refused moves, moves to the same status and to other states write none.
      expect(await s.videos.setStatus(v1.id, 7, { now: 7100, from: [6] })).toBe(false);
      expect(await s.videos.setStatus(v1.id, 1, { now: 7200 })).toBe(true);
      expect(await s.videos.setStatus(v2.id, 5, { now: 7300 })).toBe(true);
      expect(await ofVideo(loud.appId, v1.id)).toEqual([d1]);
      expect(await ofVideo(quiet.appId, v2.id)).toEqual([]);
      // Each real change gets its own: 1 to 5 to 7.
      await s.videos.setStatus(v1.id, 5, { now: 7400 });
      await s.videos.setStatus(v1.id, 7, { now: 7500 });
      expect((await ofVideo(loud.appId, v1.id)).map((d) => [d.videoStatus, d.statusAt])).toEqual([[7, 7500], [1, 7000]]);
      // Nowhere to send, or disabled: recorded as skipped at once, as the service would.
      await s.videos.setStatus(v2.id, 7, { now: 7600 });
      await s.videos.setStatus(v3.id, 1, { now: 7700 });
      expect(await ofVideo(quiet.appId, v2.id)).toMatchObject([{ state: 'skipped', lastError: 'no callback address', nextAttemptAt: null }]);
      expect(await ofVideo(off.appId, v3.id)).toMatchObject([{ state: 'skipped', lastError: 'application disabled', nextAttemptAt: null }]);
      // A delivery of the same change written another way (a catch-up) is refused.
      expect(await s.callbacks.insert(delivery({ appId: loud.appId, videoId: v1.id, videoStatus: 1, statusAt: 7000 }))).toBe(false);
      // Racing moves: one wins, one delivery.
      const v4 = videoRecord(loud.appId, { status: 6 });
      await s.videos.insert(v4);
      const won = await Promise.all([1, 7, 1, 7].map((to, i) => s.videos.setStatus(v4.id, to, { now: 8000 + i, from: [6] })));
      expect(won.filter(Boolean)).toHaveLength(1);
      expect(await ofVideo(loud.appId, v4.id)).toHaveLength(1);
    });

    it('gives the next attempt of a pending delivery to one job, and frees it', async () => {
      const d = delivery();
      await s.callbacks.insert(d);
      const expectAt = { series: 1, seriesAttempts: 0 };
      expect(await s.callbacks.listUnqueued({ limit: 10 })).toEqual([stored(d)]);
      expect(await s.callbacks.listUnqueued({ limit: 10, videoId: 'another' })).toEqual([]);
      expect(await s.callbacks.listUnqueued({ limit: 10, updatedBefore: d.updatedAt })).toEqual([]);
      // Two jobs racing: one holds it.
      const claims = await Promise.all(['job-a', 'job-b'].map((j) => s.callbacks.claimAttempt(d.id, expectAt, j)));
      expect(claims.filter(Boolean)).toHaveLength(1);
      const holder = claims[0] ? 'job-a' : 'job-b';
      expect(await s.callbacks.claimAttempt(d.id, expectAt, holder)).toBe(true);
      expect(await s.callbacks.listUnqueued({ limit: 10 })).toEqual([]);
      expect((await s.callbacks.listHeld({ limit: 10, dueBefore: 1001 })).map((x) => x.attemptJob)).toEqual([holder]);
      expect(await s.callbacks.listHeld({ limit: 10, dueBefore: 1000 })).toEqual([]);
      // A cancel by another job than the holder changes nothing.
      expect(await s.callbacks.update(d.id, { state: 'failed' }, { ...expectAt, attemptJob: 'job-c' })).toBe(false);
      expect(await s.callbacks.releaseAttempt(d.id, 'job-c')).toBe(false);
      expect(await s.callbacks.releaseAttempt(d.id, holder)).toBe(true);
      expect(await s.callbacks.claimAttempt(d.id, { series: 1, seriesAttempts: 1 }, 'job-c')).toBe(false);
      expect(await s.callbacks.claimAttempt(d.id, expectAt, 'job-c')).toBe(true);
      // Recording the attempt frees the next one.
      expect(await s.callbacks.recordAttempt(attempt(d, 1), { nextAttemptAt: 5000, updatedAt: 2000 })).toBe(true);
      expect(await s.callbacks.get(d.id)).toMatchObject({ seriesAttempts: 1, attemptJob: '' });
      expect(await s.callbacks.claimAttempt(d.id, expectAt, 'job-d')).toBe(false);
      expect(await s.callbacks.claimAttempt(d.id, { series: 1, seriesAttempts: 1 }, 'job-d')).toBe(true);
      // Not pending: nothing to hold.
      await s.callbacks.update(d.id, { state: 'delivered', attemptJob: '' });
      expect(await s.callbacks.claimAttempt(d.id, { series: 1, seriesAttempts: 1 }, 'job-e')).toBe(false);
    });

    it('finds end-state changes with no status delivery, a slice of videos at a time', async () => {
      const a = await newApp({ appId: 'app' });
      // Changes stored without their delivery (setStatus writes one: see the outbox case), as
      // a version before the outbox could leave them: videos inserted in their end state.
      const v = (id: string, status: number, createdAt: number) => videoRecord(a.appId, { id, status, createdAt });
      for (const x of [v('v1', 1, 200), v('v2', 4, 300), v('v3', 5, 250), v('v4', 1, 150), v('v5', 7, 120)]) await s.videos.insert(x);
      // A move to the same status is not a change: the delivery of the real one still counts.
      await s.videos.setStatus('v4', 1, { now: 400 });
      await s.callbacks.insert(delivery({ appId: 'app', videoId: 'v4', videoStatus: 1, statusAt: 150 }));
      const all = await s.callbacks.missingStatusDeliveries([1, 4, 7], { videos: 100 });
      expect(all.missing).toEqual([
        { appId: 'app', videoId: 'v5', videoStatus: 7, statusAt: 120 },
        { appId: 'app', videoId: 'v1', videoStatus: 1, statusAt: 200 },
        { appId: 'app', videoId: 'v2', videoStatus: 4, statusAt: 300 },
      ]);
      const first = await s.callbacks.missingStatusDeliveries([1, 4, 7], { videos: 2 });
      expect(first).toEqual({ missing: [all.missing[1], all.missing[2]], next: 'v2' });
      const second = await s.callbacks.missingStatusDeliveries([1, 4, 7], { afterVideoId: first.next, videos: 2 });
      expect(second).toEqual({ missing: [], next: 'v4' });
      const third = await s.callbacks.missingStatusDeliveries([1, 4, 7], { afterVideoId: second.next, videos: 2 });
      expect(third.missing).toEqual([all.missing[0]]);
      const last = await s.callbacks.missingStatusDeliveries([1, 4, 7], { afterVideoId: 'v5', videos: 2 });
      expect(last).toEqual({ missing: [] });
      expect((await s.callbacks.missingStatusDeliveries([], { videos: 2 })).missing).toEqual([]);
      // Once its delivery exists, a change is no longer missing.
      await s.callbacks.insert(delivery({ appId: 'app', videoId: 'v1', videoStatus: 1, statusAt: 200 }));
      expect((await s.callbacks.missingStatusDeliveries([1, 4, 7], { videos: 100 })).missing.map((m) => m.videoId)).toEqual(['v5', 'v2']);
    });
  });
}
