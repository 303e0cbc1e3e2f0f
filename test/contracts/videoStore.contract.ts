import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AppRecord, RenditionRecord, Stores, TextTrackRecord, VideoRecord } from '../../server/storage/types.js';
import { videoRecord } from '../helpers/fixtures.js';
import { freshStoresPerTest, insertApp, type StoreFactory } from './storesHarness.js';

/**
 * The contract of the videos, their status history, renditions and text tracks
 * (server/storage/types.ts VideoStore), written once and run against every engine
 * (test/storage/store-contract-embedded.test.ts: sql.js; test/storage/store-contract-postgres.test.ts:
 * PostgreSQL), the way tus-node-server runs one suite against every store. An engine passes it by
 * what its methods answer, never by how it stores them.
 */
export function videoStoreContract(engine: string, factory: StoreFactory): void {
  describe(`VideoStore contract: ${engine}`, () => {
    let s: Stores;
    const { reopen } = freshStoresPerTest(factory, (fresh) => (s = fresh));
    const newApp = (overrides: Partial<AppRecord> = {}) => insertApp(s, overrides);

    it('reads back what it stored, with its first status in the history', async () => {
      const a = await newApp();
      const v = videoRecord(a.appId, {
        title: 'T', description: 'D', tags: 't1,t2', actors: 'x', createUser: 'u1', status: 8, sourceType: 2,
        sourceUrl: 'http://src/v.mp4', duration: 12, coverFile: 'c/1.jpg', sourceFile: 's/1.mp4', keepSource: true, ladder: 'pending', createdAt: 1234, updatedAt: 1234,
      });
      await s.videos.insert(v);
      expect(await s.videos.get(v.id)).toEqual(v);
      expect(await s.videos.get(crypto.randomUUID())).toBeUndefined();
      expect(await s.videos.statusHistory(v.id)).toEqual([{ at: 1234, from: null, to: 8, reason: '' }]);
      await expect(s.videos.insert(v)).rejects.toThrow();
    });

    it('lists an application’s videos newest first (createdAt, then id), a page at a time, with the total', async () => {
      const [a, other] = [await newApp(), await newApp()];
      const vs = [
        videoRecord(a.appId, { id: 'v-b', createdAt: 2000 }),
        videoRecord(a.appId, { id: 'v-a', createdAt: 2000 }),
        videoRecord(a.appId, { id: 'v-c', createdAt: 1000 }),
        videoRecord(a.appId, { id: 'v-d', createdAt: 3000 }),
        videoRecord(other.appId, { id: 'v-z', createdAt: 5000 }),
      ];
      for (const v of vs) await s.videos.insert(v);
      const all = await s.videos.listByApp(a.appId, { offset: 0, limit: 10 });
      expect(all.total).toBe(4);
      expect(all.items.map((v) => v.id)).toEqual(['v-d', 'v-b', 'v-a', 'v-c']);
      expect(all.items[0]).toEqual(vs[3]);
      const page2 = await s.videos.listByApp(a.appId, { offset: 1, limit: 2 });
      expect(page2).toEqual({ total: 4, items: [vs[0], vs[1]] });
      expect(await s.videos.listByApp(a.appId, { offset: 10, limit: 2 })).toEqual({ total: 4, items: [] });
      expect(await s.videos.listByApp('nobody', { offset: 0, limit: 2 })).toEqual({ total: 0, items: [] });
    });

    it('lists what was written since the last list: new videos, new statuses, new media', async () => {
      const a = await newApp();
      const first = videoRecord(a.appId, { createdAt: 1000 });
      await s.videos.insert(first);
      expect((await s.videos.listByApp(a.appId, { offset: 0, limit: 10 })).total).toBe(1);
      expect((await s.videos.listByAppAndUser(a.appId, '', { offset: 0, limit: 10 })).total).toBe(1);
      const second = videoRecord(a.appId, { createdAt: 2000 });
      await s.videos.insert(second);
      expect((await s.videos.listByApp(a.appId, { offset: 0, limit: 10 })).items.map((v) => v.id)).toEqual([second.id, first.id]);
      expect((await s.videos.listByAppAndUser(a.appId, '', { offset: 0, limit: 10 })).total).toBe(2);
      await s.videos.setStatus(first.id, 1, { now: 3000 });
      await s.videos.updateMedia(first.id, { coverFile: 'c.jpg' });
      const [, listed] = (await s.videos.listByApp(a.appId, { offset: 0, limit: 10 })).items;
      expect(listed).toMatchObject({ id: first.id, status: 1, coverFile: 'c.jpg', updatedAt: 3000 });
    });

    it('lists one uploader’s videos the same way', async () => {
      const a = await newApp();
      const mine = [videoRecord(a.appId, { createUser: 'u', createdAt: 1 }), videoRecord(a.appId, { createUser: 'u', createdAt: 3 })];
      for (const v of [...mine, videoRecord(a.appId, { createUser: 'U', createdAt: 2 }), videoRecord(a.appId, { createdAt: 4 })]) await s.videos.insert(v);
      expect(await s.videos.listByAppAndUser(a.appId, 'u', { offset: 0, limit: 10 })).toEqual({ total: 2, items: [mine[1], mine[0]] });
      expect(await s.videos.listByAppAndUser(a.appId, 'u', { offset: 1, limit: 10 })).toEqual({ total: 2, items: [mine[0]] });
      expect(await s.videos.listByAppAndUser(a.appId, 'nobody', { offset: 0, limit: 10 })).toEqual({ total: 0, items: [] });
    });

    it('moves a status only from one of `from`, records each move, and says whether it moved', async () => {
      const a = await newApp();
      const v = videoRecord(a.appId, { status: 8, createdAt: 1000 });
      await s.videos.insert(v);
      expect(await s.videos.setStatus(v.id, 5, { from: [8], now: 2000 })).toBe(true);
      expect(await s.videos.setStatus(v.id, 6, { from: [8, 4], now: 2500 })).toBe(false);
      expect(await s.videos.setStatus(v.id, 4, { from: [5, 6], reason: 'broken', now: 3000 })).toBe(true);
      expect(await s.videos.get(v.id)).toMatchObject({ status: 4, statusReason: 'broken', updatedAt: 3000 });
      // Without `from`, any status moves, to the same one too; the reason is replaced.
      expect(await s.videos.setStatus(v.id, 4, { now: 4000 })).toBe(true);
      expect(await s.videos.get(v.id)).toMatchObject({ status: 4, statusReason: '', updatedAt: 4000 });
      expect(await s.videos.setStatus(crypto.randomUUID(), 1)).toBe(false);
      expect(await s.videos.statusHistory(v.id)).toEqual([
        { at: 1000, from: null, to: 8, reason: '' },
        { at: 2000, from: 8, to: 5, reason: '' },
        { at: 3000, from: 5, to: 4, reason: 'broken' },
        { at: 4000, from: 4, to: 4, reason: '' },
      ]);
      // Changes at the same millisecond stay in the order they were made.
      await s.videos.setStatus(v.id, 5, { now: 5000 });
      await s.videos.setStatus(v.id, 6, { now: 5000 });
      await s.videos.setStatus(v.id, 1, { now: 5000 });
      expect((await s.videos.statusHistory(v.id)).slice(-3).map((h) => h.to)).toEqual([5, 6, 1]);
      expect(await s.videos.statusHistory(crypto.randomUUID())).toEqual([]);
    });

    it('lets one of two racing guarded moves win', async () => {
      const a = await newApp();
      const vs = Array.from({ length: 10 }, () => videoRecord(a.appId, { status: 5 }));
      for (const v of vs) await s.videos.insert(v);
      const results = await Promise.all(vs.flatMap((v) => [s.videos.setStatus(v.id, 6, { from: [5] }), s.videos.setStatus(v.id, 4, { from: [5] })]));
      for (let i = 0; i < vs.length; i++) expect([results[2 * i], results[2 * i + 1]].filter(Boolean)).toHaveLength(1);
      for (const v of vs) expect(await s.videos.statusHistory(v.id)).toHaveLength(2);
    });

    it('sets media facts, only those given, the duration in whole seconds', async () => {
      const a = await newApp();
      const v = videoRecord(a.appId);
      await s.videos.insert(v);
      await s.videos.updateMedia(v.id, { sourceFile: 's/x.mp4', keepSource: true });
      await s.videos.updateMedia(v.id, { duration: 12.6 });
      await s.videos.updateMedia(v.id, {});
      await s.videos.updateMedia(v.id, { coverFile: 'c/x.jpg', keepSource: false });
      expect(await s.videos.get(v.id)).toEqual({ ...v, sourceFile: 's/x.mp4', keepSource: false, duration: 13, coverFile: 'c/x.jpg' });
    });

    it('keeps where the rest of the ladder stands, and finds the videos in each state', async () => {
      const a = await newApp();
      const [v, w, x] = [videoRecord(a.appId), videoRecord(a.appId), videoRecord(a.appId)];
      for (const r of [v, w, x]) await s.videos.insert(r);
      expect(await s.videos.idsByLadder('pending')).not.toContain(v.id);
      await s.videos.updateMedia(v.id, { ladder: 'pending' });
      await s.videos.updateMedia(w.id, { ladder: 'failed' });
      await s.videos.updateMedia(x.id, { ladder: 'pending' });
      await s.videos.updateMedia(x.id, { ladder: '' });
      expect((await s.videos.get(v.id))?.ladder).toBe('pending');
      const pending = await s.videos.idsByLadder('pending');
      expect(pending).toContain(v.id);
      expect(pending).not.toContain(w.id);
      expect(pending).not.toContain(x.id);
      expect(await s.videos.idsByLadder('failed')).toContain(w.id);
      expect((await s.videos.get(x.id))?.ladder).toBe('');
    });

    it('claims a source once, racing claims included, and releases only its own claim', async () => {
      const a = await newApp();
      const v = videoRecord(a.appId);
      await s.videos.insert(v);
      // Two nodes claiming at once: exactly one wins.
      const claims = await Promise.all([s.videos.claimSource(v.id, `${v.id}/source`), s.videos.claimSource(v.id, `${v.id}/other`)]);
      expect(claims.filter(Boolean)).toHaveLength(1);
      const won = (await s.videos.get(v.id))!.sourceFile;
      expect([`${v.id}/source`, `${v.id}/other`]).toContain(won);
      expect(await s.videos.claimSource(v.id, `${v.id}/late`)).toBe(false);
      // The loser's release leaves the winner's claim alone; the winner's frees it.
      await s.videos.releaseSource(v.id, won === `${v.id}/source` ? `${v.id}/other` : `${v.id}/source`);
      expect((await s.videos.get(v.id))!.sourceFile).toBe(won);
      await s.videos.releaseSource(v.id, won);
      expect((await s.videos.get(v.id))!.sourceFile).toBe('');
      expect(await s.videos.claimSource(v.id, `${v.id}/source`)).toBe(true);
      expect(await s.videos.claimSource('00000000-0000-4000-8000-000000000000', 'x/source')).toBe(false);
    });

    it('replaces renditions and reads them highest bitrate first, then by label', async () => {
      const a = await newApp();
      const [v, w] = [videoRecord(a.appId), videoRecord(a.appId)];
      await s.videos.insert(v);
      await s.videos.insert(w);
      const r = (label: string, bitrateKbps: number, videoId = v.id): RenditionRecord => ({ videoId, label, width: 640, height: 360, bitrateKbps, file: `d/${label}.mp4`, bytes: 2 ** 33 });
      await s.videos.setRenditions(v.id, [r('360p', 800), r('1080p', 5000)]);
      await s.videos.setRenditions(v.id, [r('360p', 800), r('720p-b', 2500), r('720p-a', 2500)]);
      await s.videos.setRenditions(w.id, [r('240p', 400, w.id)]);
      expect(await s.videos.renditions(v.id)).toEqual([r('720p-a', 2500), r('720p-b', 2500), r('360p', 800)]);
      // The detail call's read: the video and the same renditions, in the same order.
      expect(await s.videos.getWithRenditions(v.id)).toEqual({ video: v, renditions: [r('720p-a', 2500), r('720p-b', 2500), r('360p', 800)] });
      await s.videos.setRenditions(w.id, []);
      expect(await s.videos.renditions(w.id)).toEqual([]);
      expect(await s.videos.getWithRenditions(w.id)).toEqual({ video: w, renditions: [] });
      expect(await s.videos.getWithRenditions(crypto.randomUUID())).toBeUndefined();
    });

    it("keeps a video's text tracks: added under a limit per kind, listed oldest first, removed, its source's replaced as a set", async () => {
      const a = await newApp();
      const [v, w] = [videoRecord(a.appId), videoRecord(a.appId)];
      await s.videos.insert(v);
      await s.videos.insert(w);
      const track = (id: string, o: Partial<TextTrackRecord> = {}, videoId = v.id): TextTrackRecord => ({
        videoId, id, kind: 'captions', origin: 'api', language: 'pt-BR', label: 'Português', forced: false, bytes: 2 ** 33, createdAt: 1_700_000_000_000, ...o,
      });
      expect(await s.videos.addTextTrack(track('000000bb', { createdAt: 2 }), 2)).toBe(true);
      expect(await s.videos.addTextTrack(track('000000aa', { createdAt: 2 }), 2)).toBe(true);
      // The limit counts tracks of the kind: a third caption track is refused, chapters are not.
      expect(await s.videos.addTextTrack(track('000000cc', { createdAt: 3 }), 2)).toBe(false);
      expect(await s.videos.addTextTrack(track('000000dd', { createdAt: 1, kind: 'chapters', language: '', label: 'Chapters' }), 2)).toBe(true);
      expect(await s.videos.addTextTrack(track('000000ee', {}, w.id), 2)).toBe(true);
      expect((await s.videos.textTracks(v.id)).map((t) => t.id)).toEqual(['000000dd', '000000aa', '000000bb']);
      expect((await s.videos.textTracks(v.id))[1]).toEqual(track('000000aa', { createdAt: 2 }));

      await s.videos.setSourceTextTracks(v.id, [track('000000f1', { origin: 'source', forced: true, createdAt: 5 }), track('000000f2', { origin: 'source', createdAt: 6 })]);
      await s.videos.setSourceTextTracks(v.id, [track('000000f3', { origin: 'source', forced: true, createdAt: 7 })]);
      expect((await s.videos.textTracks(v.id)).map((t) => [t.id, t.origin, t.forced])).toEqual([
        ['000000dd', 'api', false],
        ['000000aa', 'api', false],
        ['000000bb', 'api', false],
        ['000000f3', 'source', true],
      ]);

      expect(await s.videos.removeTextTrack(v.id, '000000aa')).toEqual(track('000000aa', { createdAt: 2 }));
      expect(await s.videos.removeTextTrack(v.id, '000000aa')).toBeUndefined();
      expect(await s.videos.removeTextTrack(v.id, '000000ee')).toBeUndefined(); // another video's
      expect((await s.videos.textTracks(v.id)).map((t) => t.id)).toEqual(['000000dd', '000000bb', '000000f3']);
      expect((await s.videos.textTracks(w.id)).map((t) => t.id)).toEqual(['000000ee']);
    });

    it('counts videos per status and finds ids by status, oldest first', async () => {
      const [a, b] = [await newApp(), await newApp()];
      expect(await s.videos.countByStatus()).toEqual({});
      const vs = [
        videoRecord(a.appId, { id: 'v2', status: 5, createdAt: 2 }),
        videoRecord(b.appId, { id: 'v1', status: 5, createdAt: 2 }),
        videoRecord(a.appId, { id: 'v0', status: 6, createdAt: 3 }),
        videoRecord(a.appId, { id: 'v9', status: 1, createdAt: 1 }),
      ];
      for (const v of vs) await s.videos.insert(v);
      expect(await s.videos.countByStatus()).toEqual({ 5: 2, 6: 1, 1: 1 });
      expect(await s.videos.idsByStatus([5, 6])).toEqual(['v1', 'v2', 'v0']);
      expect(await s.videos.idsByStatus([])).toEqual([]);
      await s.videos.setStatus('v0', 1);
      expect(await s.videos.countByStatus()).toEqual({ 5: 2, 1: 2 });
    });

    it('keeps every total exact through inserts, moves (racing ones too) and media writes', async () => {
      const [a, b] = [await newApp(), await newApp()];
      const users = ['', 'ann', 'bob'];
      const made: VideoRecord[] = [];
      // Inserted at once: in PostgreSQL they go over several connections, each its own session.
      await Promise.all(
        Array.from({ length: 30 }, (_, i) => {
          const v = videoRecord(i % 3 === 0 ? b.appId : a.appId, { createUser: users[i % users.length], status: [2, 5, 8][i % 3], createdAt: 100 + i });
          made.push(v);
          return s.videos.insert(v);
        }),
      );
      const status = new Map(made.map((v) => [v.id, v.status]));
      // Moves at once, guarded and not: some to the same status, some refused by their guard.
      await Promise.all(
        made.map(async (v, i) => {
          const to = [1, 4, 0, v.status][i % 4]!;
          const from = i % 5 === 0 ? [99] : i % 5 === 1 ? [v.status] : undefined;
          if (await s.videos.setStatus(v.id, to, { from })) status.set(v.id, to);
        }),
      );
      // Two racing guarded moves of one video: one wins, the video is counted once.
      const raced = made[1]!;
      const wins = await Promise.all([3, 6].map((to) => s.videos.setStatus(raced.id, to, { from: [status.get(raced.id)!] })));
      expect(wins.filter(Boolean)).toHaveLength(1);
      status.set(raced.id, wins[0] ? 3 : 6);
      await s.videos.updateMedia(made[2]!.id, { coverFile: 'c.jpg', duration: 3 });
      await s.videos.claimSource(made[3]!.id, 'sources/x.mp4');

      const of = (f: (v: VideoRecord) => boolean) => made.filter(f).length;
      for (const app of [a, b]) {
        expect((await s.videos.listByApp(app.appId, { offset: 0, limit: 1 })).total).toBe(of((v) => v.appId === app.appId));
        for (const u of users) {
          expect((await s.videos.listByAppAndUser(app.appId, u, { offset: 0, limit: 1 })).total).toBe(of((v) => v.appId === app.appId && v.createUser === u));
          expect((await s.videos.search({ appId: app.appId, createUser: u }, { offset: 0, limit: 1 })).total).toBe(of((v) => v.appId === app.appId && v.createUser === u));
        }
        const live = [1, 2, 3, 4, 5, 6, 7, 8];
        expect((await s.videos.search({ appId: app.appId, statuses: live }, { offset: 0, limit: 1 })).total).toBe(
          of((v) => v.appId === app.appId && status.get(v.id) !== 0),
        );
      }
      expect((await s.videos.search({}, { offset: 0, limit: 1 })).total).toBe(made.length);
      expect((await s.videos.search({ statuses: [0, 1] }, { offset: 0, limit: 1 })).total).toBe(of((v) => [0, 1].includes(status.get(v.id)!)));
      const byStatus: Record<number, number> = {};
      for (const st of status.values()) byStatus[st] = (byStatus[st] ?? 0) + 1;
      expect(await s.videos.countByStatus()).toEqual(byStatus);
      for (const st of [0, 1, 4, 8]) expect((await s.videos.oldestInStatus(st, 1)).total).toBe(byStatus[st] ?? 0);
      // And as a new process finds them.
      const again = await reopen();
      expect(await again.videos.countByStatus()).toEqual(byStatus);
      expect((await again.videos.listByApp(a.appId, { offset: 0, limit: 1 })).total).toBe(of((v) => v.appId === a.appId));
    });

    it('reads the oldest videos in one status (createdAt, then id), with how many are in it', async () => {
      const a = await newApp();
      for (const v of [
        videoRecord(a.appId, { id: 'o3', status: 8, createdAt: 30 }),
        videoRecord(a.appId, { id: 'o1', status: 8, createdAt: 10 }),
        videoRecord(a.appId, { id: 'o2', status: 8, createdAt: 10 }),
        videoRecord(a.appId, { id: 'o0', status: 1, createdAt: 1 }),
      ])
        await s.videos.insert(v);
      const got = await s.videos.oldestInStatus(8, 2);
      expect(got.total).toBe(3);
      expect(got.items.map((v) => v.id)).toEqual(['o1', 'o2']);
      expect(await s.videos.oldestInStatus(6, 5)).toEqual({ total: 0, items: [] });
    });

    it('searches by title text (as typed, ASCII case ignored), statuses, uploader and application', async () => {
      const [a, b] = [await newApp(), await newApp()];
      const vs = [
        videoRecord(a.appId, { id: 'v1', title: 'Holiday at the Sea', status: 1, createUser: 'ann', createdAt: 1 }),
        videoRecord(a.appId, { id: 'v2', title: 'SEA lions', status: 5, createUser: 'bob', createdAt: 2 }),
        videoRecord(b.appId, { id: 'v3', title: '100% sea_side', status: 1, createUser: 'ann', createdAt: 3 }),
        videoRecord(b.appId, { id: 'v4', title: '100 seaXside', status: 4, createUser: 'ann', createdAt: 4 }),
      ];
      for (const v of vs) await s.videos.insert(v);
      const ids = async (f: Parameters<Stores['videos']['search']>[0], page = { offset: 0, limit: 10 }) => {
        const r = await s.videos.search(f, page);
        return { total: r.total, ids: r.items.map((v) => v.id) };
      };
      expect(await ids({})).toEqual({ total: 4, ids: ['v4', 'v3', 'v2', 'v1'] });
      expect(await ids({ text: 'sea' })).toEqual({ total: 4, ids: ['v4', 'v3', 'v2', 'v1'] });
      expect(await ids({ text: 'Sea L' })).toEqual({ total: 1, ids: ['v2'] });
      // Wildcards in the text are matched as they are.
      expect(await ids({ text: '0%' })).toEqual({ total: 1, ids: ['v3'] });
      expect(await ids({ text: 'sea_' })).toEqual({ total: 1, ids: ['v3'] });
      expect(await ids({ text: '\\' })).toEqual({ total: 0, ids: [] });
      expect(await ids({ statuses: [1, 4] })).toEqual({ total: 3, ids: ['v4', 'v3', 'v1'] });
      expect(await ids({ statuses: [] })).toEqual({ total: 4, ids: ['v4', 'v3', 'v2', 'v1'] });
      expect(await ids({ createUser: 'ann', appId: a.appId })).toEqual({ total: 1, ids: ['v1'] });
      expect(await ids({ text: 'sea', statuses: [1], createUser: 'ann' })).toEqual({ total: 2, ids: ['v3', 'v1'] });
      expect(await ids({ text: 'sea' }, { offset: 1, limit: 2 })).toEqual({ total: 4, ids: ['v3', 'v2'] });
      expect((await s.videos.search({ appId: b.appId }, { offset: 0, limit: 1 })).items).toEqual([vs[3]]);
    });

    it('searches the text in title, uploader, tags and description, any of them, wildcards as typed (issue 13, item 4)', async () => {
      const a = await newApp();
      const vs = [
        videoRecord(a.appId, { id: 'w1', title: 'Lecture one', createUser: 'Zhang_Wei', tags: 'math,algebra', description: '', createdAt: 1 }),
        videoRecord(a.appId, { id: 'w2', title: 'Lecture two', createUser: 'li.na', tags: 'physics', description: 'Covers 100% of OPTICS', createdAt: 2 }),
        videoRecord(a.appId, { id: 'w3', title: 'Algebra recap', createUser: 'zhangwei', tags: '', description: 'short', createdAt: 3 }),
      ];
      for (const v of vs) await s.videos.insert(v);
      const ids = async (text: string, extra: Partial<Parameters<Stores['videos']['search']>[0]> = {}) =>
        (await s.videos.search({ text, ...extra }, { offset: 0, limit: 10 })).items.map((v) => v.id);
      // Uploader, partly and ignoring ASCII case; `_` only as itself.
      expect(await ids('zhang')).toEqual(['w3', 'w1']);
      expect(await ids('ZHANG_')).toEqual(['w1']);
      // Tags and title alike.
      expect(await ids('algebra')).toEqual(['w3', 'w1']);
      expect(await ids('physics')).toEqual(['w2']);
      // Description, `%` only as itself.
      expect(await ids('optics')).toEqual(['w2']);
      expect(await ids('0% of')).toEqual(['w2']);
      expect(await ids('%')).toEqual(['w2']);
      expect(await ids('lecture', { createUser: 'li.na' })).toEqual(['w2']);
      expect((await s.videos.search({ text: 'e' }, { offset: 0, limit: 1 })).total).toBe(3);
    });
  });
}
