import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../server/storage/jobRecords.js';
import type { AppRecord, Stores } from '../../server/storage/types.js';
import { videoRecord } from '../helpers/fixtures.js';
import { freshStoresPerTest, insertApp, type StoreFactory } from './storesHarness.js';

/**
 * The contract of the job queue (server/storage/jobRecords.ts JobStore), written once and run
 * against every engine (test/storage/store-contract-embedded.test.ts: sql.js;
 * test/storage/store-contract-postgres.test.ts: PostgreSQL), the way tus-node-server runs one suite
 * against every store. An engine passes it by what its methods answer, never by how it stores
 * them.
 */
export function jobStoreContract(engine: string, factory: StoreFactory): void {
  describe(`JobStore contract: ${engine}`, () => {
    let s: Stores;
    freshStoresPerTest(factory, (fresh) => (s = fresh));
    const newApp = (overrides: Partial<AppRecord> = {}) => insertApp(s, overrides);

    let seq = 0;
    const job = (overrides: Partial<JobRecord> = {}): JobRecord => ({
      id: crypto.randomUUID(),
      type: 'work',
      videoId: '',
      appId: '',
      payload: { n: 1, nested: { list: [1, 'two', null], ok: true }, text: 'ü "quoted"' },
      state: 'queued',
      priority: 0,
      seq: ++seq,
      attempts: 0,
      maxAttempts: 3,
      runAfter: 0,
      progress: 0,
      error: '',
      createdAt: 100,
      startedAt: null,
      finishedAt: null,
      updatedAt: 100,
      lease: '',
      ...overrides,
    });
    /** The record as stored, whose seq the store may have numbered itself. */
    const stored = (j: JobRecord) => ({ ...j, seq: expect.any(Number) });

    it('reads back what it stored, payload and all', async () => {
      const j = job({ videoId: 'v', priority: -2, progress: 12.5, error: 'e', startedAt: 1, finishedAt: 2, state: 'failed' });
      await s.jobs.insert(j);
      expect(await s.jobs.get(j.id)).toEqual(stored(j));
      expect(await s.jobs.get(crypto.randomUUID())).toBeUndefined();
      await s.jobs.insertMany([]);
      const many = Array.from({ length: 120 }, () => job());
      await s.jobs.insertMany(many);
      expect(await s.jobs.get(many[119]!.id)).toEqual(stored(many[119]!));
    });

    it('numbers jobs in insertion order, and maxSeq covers them all', async () => {
      expect(await s.jobs.maxSeq()).toBe(0);
      const js = [job(), job(), job()];
      await s.jobs.insert(js[0]!);
      await s.jobs.insertMany([js[1]!, js[2]!]);
      const seqs = await Promise.all(js.map(async (j) => (await s.jobs.get(j.id))!.seq));
      expect(seqs[0]).toBeLessThan(seqs[1]!);
      expect(seqs[1]).toBeLessThan(seqs[2]!);
      expect(await s.jobs.maxSeq()).toBeGreaterThanOrEqual(seqs[2]!);
    });

    it('lists running, then queued by priority and order, then the most recently finished; filtered', async () => {
      const q1 = job({ id: 'q1' });
      const q2 = job({ id: 'q2', priority: 5, type: 'other', videoId: 'v' });
      const q3 = job({ id: 'q3' });
      const r1 = job({ id: 'r1', state: 'running' });
      const f1 = job({ id: 'f1', state: 'succeeded', updatedAt: 500 });
      const f2 = job({ id: 'f2', state: 'failed', updatedAt: 900, videoId: 'v' });
      const c1 = job({ id: 'c1', state: 'cancelled', updatedAt: 700 });
      await s.jobs.insertMany([f1, q1, q2, r1, f2, q3, c1]);
      const ids = async (f?: Parameters<Stores['jobs']['list']>[0]) => (await s.jobs.list(f)).map((j) => j.id);
      expect(await ids()).toEqual(['r1', 'q2', 'q1', 'q3', 'f2', 'c1', 'f1']);
      expect(await ids({ states: ['queued'] })).toEqual(['q2', 'q1', 'q3']);
      expect(await ids({ types: ['other'] })).toEqual(['q2']);
      expect(await ids({ videoId: 'v' })).toEqual(['q2', 'f2']);
      expect(await ids({ states: ['failed', 'succeeded'], types: ['work'] })).toEqual(['f2', 'f1']);
      expect(await ids({ limit: 2 })).toEqual(['r1', 'q2']);
      expect(await ids({ states: [], types: [] })).toHaveLength(7);
      expect((await s.jobs.list({ states: ['running'] }))[0]).toEqual(stored(r1));
    });

    it('claims the next due job of the given types: priority, then order; running, attempt counted', async () => {
      expect(await s.jobs.claimNext(['work'], 1000)).toBeUndefined();
      const later = job({ id: 'later', priority: 9, runAfter: 5000 });
      const a = job({ id: 'a' });
      const b = job({ id: 'b' });
      const urgent = job({ id: 'urgent', priority: 1, attempts: 1 });
      const other = job({ id: 'other', type: 'other', priority: 99 });
      await s.jobs.insertMany([later, a, b, urgent, other]);
      expect(await s.jobs.claimNext([], 1000)).toBeUndefined();
      const first = await s.jobs.claimNext(['work'], 1000);
      expect(first).toEqual({ ...stored(urgent), state: 'running', attempts: 2, startedAt: 1000, updatedAt: 1000, progress: 0 });
      expect(await s.jobs.get('urgent')).toEqual(first);
      expect((await s.jobs.claimNext(['work'], 1001))!.id).toBe('a');
      expect((await s.jobs.claimNext(['work'], 1002))!.id).toBe('b');
      expect(await s.jobs.claimNext(['work'], 4999)).toBeUndefined();
      expect((await s.jobs.claimNext(['work', 'other'], 5000))!.id).toBe('other');
      expect((await s.jobs.claimNext(['work', 'other'], 5000))!.id).toBe('later');
      expect(await s.jobs.claimNext(['work', 'other'], 5000)).toBeUndefined();
    });

    it('holds a claimed job under a lease: fenced updates, and a take-over by turn that fences out the old holder', async () => {
      await s.jobs.insertMany([job({ id: 'a' }), job({ id: 'b' })]);
      const a = await s.jobs.claimNext(['work'], 1000, 'turn-1/x1');
      expect(a).toMatchObject({ id: 'a', state: 'running', lease: 'turn-1/x1' });
      expect(await s.jobs.get('a')).toMatchObject({ lease: 'turn-1/x1' });
      const b = await s.jobs.claimNext(['work'], 1000, 'turn-10/x2');
      expect(b).toMatchObject({ id: 'b', lease: 'turn-10/x2' });
      // Held under another lease: no write.
      expect(await s.jobs.update('a', { progress: 50 }, ['running'], 'turn-1/other')).toBe(false);
      expect(await s.jobs.update('a', { progress: 50 }, ['running'], 'turn-1/x1')).toBe(true);
      // Taken over by turn: "turn-1" is not a prefix match of "turn-10".
      expect(await s.jobs.takeOver('work', 'turn-9', 'turn-9/y', 2000)).toBeUndefined();
      // Turns are numbered per type: another type's turn 1 is another turn.
      expect(await s.jobs.takeOver('other', 'turn-1', 'turn-1/o', 2000)).toBeUndefined();
      const taken = await s.jobs.takeOver('work', 'turn-1', 'turn-1/y1', 2000);
      expect(taken).toMatchObject({ id: 'a', state: 'running', lease: 'turn-1/y1', progress: 50, attempts: 1, updatedAt: 2000 });
      expect(await s.jobs.get('b')).toMatchObject({ lease: 'turn-10/x2' });
      // The old holder is fenced out; the new one writes.
      expect(await s.jobs.update('a', { state: 'succeeded' }, ['running'], 'turn-1/x1')).toBe(false);
      expect(await s.jobs.update('a', { state: 'succeeded', lease: '' }, ['running'], 'turn-1/y1')).toBe(true);
      expect(await s.jobs.get('a')).toMatchObject({ state: 'succeeded', lease: '' });
      // Only running jobs are taken over.
      expect(await s.jobs.takeOver('work', 'turn-1', 'turn-1/z', 3000)).toBeUndefined();
      // Without a lease, claims and updates work as in the embedded mode.
      await s.jobs.insert(job({ id: 'c' }));
      expect(await s.jobs.claimNext(['work'], 1000)).toMatchObject({ id: 'c', lease: '' });
      expect(await s.jobs.update('c', { progress: 3 })).toBe(true);
    });

    it('shares claims fairly between applications: fewest running first, then the least recently served (issue 12, items 6 and 8)', async () => {
      // Application A queued four jobs, then B one: with one slot, B's job is the second to run, not the last.
      const as = ['a1', 'a2', 'a3', 'a4'].map((id) => job({ id, appId: 'A' }));
      await s.jobs.insertMany([...as, job({ id: 'b1', appId: 'B' })]);
      const claim = async () => (await s.jobs.claimNext(['work'], 1000))?.id;
      const finish = (id: string) => s.jobs.update(id, { state: 'succeeded' });
      const queued = async () => (await s.jobs.list({ states: ['queued'], types: ['work'] })).map((j) => j.id);
      // The list is the order the claims take (as long as none finishes).
      expect(await queued()).toEqual(['a1', 'b1', 'a2', 'a3', 'a4']);
      expect(await claim()).toBe('a1');
      expect(await queued()).toEqual(['b1', 'a2', 'a3', 'a4']);
      await finish('a1');
      // Neither runs a job now: B, never served, goes before A, served last, though a2 is older.
      expect(await claim()).toBe('b1');
      await finish('b1');
      expect(await claim()).toBe('a2');
      // Nothing finishes: A has one running, B none, so B's new job goes before A's others.
      await s.jobs.insert(job({ id: 'b2', appId: 'B' }));
      expect(await claim()).toBe('b2');
      await s.jobs.insert(job({ id: 'c1', appId: 'C' }));
      expect(await claim()).toBe('c1');
      expect(await claim()).toBe('a3');
      // Jobs of another type running do not count against an application.
      await s.jobs.insertMany([job({ id: 'x1', appId: 'D', type: 'other', state: 'running' }), job({ id: 'd1', appId: 'D' })]);
      expect(await queued()).toEqual(['d1', 'a4']);
      expect(await claim()).toBe('d1');
      expect(await claim()).toBe('a4');
      expect(await claim()).toBeUndefined();
    });

    it('puts priority above fairness, and keeps each application’s own order (priority, then seq)', async () => {
      await s.jobs.insertMany([
        job({ id: 'a1', appId: 'A', state: 'running' }),
        job({ id: 'a2', appId: 'A', priority: 3 }),
        job({ id: 'b1', appId: 'B' }),
        job({ id: 'b2', appId: 'B', priority: 1 }),
        job({ id: 'a3', appId: 'A', priority: 3, runAfter: 5000 }),
        job({ id: 'a4', appId: 'A' }),
      ]);
      // The list is the order the claims take, as long as none finishes: priority first (a2
      // though A runs one already, then b2 before B's older b1), then turns (A: 1 running).
      const queued = async () => (await s.jobs.list({ states: ['queued'], types: ['work'] })).map((j) => j.id);
      expect(await queued()).toEqual(['a2', 'a3', 'b2', 'b1', 'a4']);
      expect(await s.jobs.list({ states: ['queued'], appId: 'B' }).then((l) => l.map((j) => j.id))).toEqual(['b2', 'b1']);
      const claim = async (now = 1000) => (await s.jobs.claimNext(['work'], now))?.id;
      expect(await claim()).toBe('a2');
      // a3 is not due yet: among the due, b2's priority wins.
      expect(await claim()).toBe('b2');
      expect(await claim()).toBe('b1');
      expect(await claim()).toBe('a4');
      expect(await claim(5000)).toBe('a3');
    });

    it('gives a job inserted without an application its video’s', async () => {
      const a = await newApp();
      const v = videoRecord(a.appId);
      await s.videos.insert(v);
      await s.jobs.insertMany([job({ id: 'of-video', videoId: v.id }), job({ id: 'given', videoId: v.id, appId: 'other' }), job({ id: 'no-video', videoId: 'gone' })]);
      expect((await s.jobs.get('of-video'))!.appId).toBe(a.appId);
      expect((await s.jobs.get('given'))!.appId).toBe('other');
      expect((await s.jobs.get('no-video'))!.appId).toBe('');
      expect((await s.jobs.list({ appId: a.appId })).map((j) => j.id)).toEqual(['of-video']);
    });

    it('never hands one job to two claims made at once', async () => {
      await s.jobs.insertMany(Array.from({ length: 8 }, () => job()));
      const claimed = await Promise.all(Array.from({ length: 12 }, () => s.jobs.claimNext(['work'], 1000)));
      const ids = claimed.filter((j) => j !== undefined).map((j) => j.id);
      expect(ids).toHaveLength(8);
      expect(new Set(ids).size).toBe(8);
    });

    it('updates only from the given states, and says whether it did', async () => {
      const j = job();
      await s.jobs.insert(j);
      expect(await s.jobs.update(j.id, { state: 'running', progress: 40.5, payload: { x: [1] } }, ['queued'])).toBe(true);
      expect(await s.jobs.update(j.id, { state: 'cancelled' }, ['queued'])).toBe(false);
      expect(await s.jobs.update(j.id, { state: 'succeeded', finishedAt: 7, error: '', updatedAt: 7 })).toBe(true);
      expect(await s.jobs.get(j.id)).toEqual({ ...stored(j), state: 'succeeded', progress: 40.5, payload: { x: [1] }, finishedAt: 7, updatedAt: 7 });
      expect(await s.jobs.update(j.id, { startedAt: null, finishedAt: null }, ['succeeded'])).toBe(true);
      expect(await s.jobs.get(j.id)).toMatchObject({ startedAt: null, finishedAt: null });
      expect(await s.jobs.update(crypto.randomUUID(), { state: 'queued' })).toBe(false);
      expect(await s.jobs.update(j.id, {})).toBe(false);
    });

    it('counts jobs per type and state, pairs with none absent', async () => {
      await s.jobs.insertMany([job(), job(), job({ state: 'failed' }), job({ type: 'other', state: 'failed' })]);
      const sorted = (xs: Array<{ type: string; state: string; count: number }>) => [...xs].sort((x, y) => `${x.type}/${x.state}`.localeCompare(`${y.type}/${y.state}`));
      expect(sorted(await s.jobs.countByTypeAndState())).toEqual([
        { type: 'other', state: 'failed', count: 1 },
        { type: 'work', state: 'failed', count: 1 },
        { type: 'work', state: 'queued', count: 2 },
      ]);
      expect(await s.jobs.countByTypeAndState(['queued'])).toEqual([{ type: 'work', state: 'queued', count: 2 }]);
      expect(await s.jobs.countByTypeAndState(['running'])).toEqual([]);
    });

    it('tells when the earliest queued job of the given types is due', async () => {
      expect(await s.jobs.nextRunAfter(['work'])).toBeUndefined();
      await s.jobs.insertMany([job({ runAfter: 300 }), job({ runAfter: 200, state: 'failed' }), job({ runAfter: 100, type: 'other' })]);
      expect(await s.jobs.nextRunAfter(['work'])).toBe(300);
      expect(await s.jobs.nextRunAfter(['work', 'other'])).toBe(100);
      expect(await s.jobs.nextRunAfter([])).toBeUndefined();
    });
  });
}
