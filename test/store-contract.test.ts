import crypto from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AttemptRecord, DeliveryRecord } from '../server/storage/callbackRecords.js';
import { NO_RETRY } from '../server/core/retry.js';
import type { JobRecord } from '../server/storage/jobRecords.js';
import pg from 'pg';
import { PG_MIGRATIONS } from '../server/storage/postgres/migrations.js';
import { openPostgresStores } from '../server/storage/postgres/openPostgresStores.js';
import { openSqlJsStores } from '../server/storage/sqljs/sqljsStore.js';
import type { AppRecord, RenditionRecord, Stores, TextTrackRecord, VideoRecord } from '../server/storage/types.js';
import { videoRecord } from './helpers/fixtures.js';
import { startPostgres, type TestPostgres } from './helpers/postgres.js';
import { tempDataDir } from './helpers/server.js';

/**
 * One contract suite for the storage interfaces (server/storage/types.ts, server/storage/jobRecords.ts,
 * server/storage/callbackRecords.ts), written once and run against every engine, the way
 * tus-node-server runs one suite against every store. An engine passes it by what its methods
 * answer, never by how it stores them.
 */

/** Storage of one engine, empty, and a way to open the same storage again as a new process would. */
interface OpenedStores {
  stores: Stores;
  /** Closes `stores` (if still open) and opens the same storage afresh. */
  reopen(): Promise<Stores>;
}

/** Makes an empty storage of one engine per call. */
type StoreFactory = () => Promise<OpenedStores>;

export function storeContract(engine: string, factory: () => StoreFactory): void {
  describe(`store contract: ${engine}`, () => {
    let opened: OpenedStores;
    let s: Stores;
    const open: Stores[] = [];
    beforeEach(async () => {
      opened = await factory()();
      s = opened.stores;
      open.push(s);
    });
    afterEach(async () => {
      while (open.length) await open.pop()!.close().catch(() => undefined);
    });
    const reopen = async () => {
      const again = await opened.reopen();
      open.push(again);
      return again;
    };

    const app = (overrides: Partial<AppRecord> = {}): AppRecord => ({
      appId: crypto.randomUUID().replace(/-/g, ''),
      name: 'app',
      secret: 's3cret',
      callbackUrl: '',
      disabled: false,
      apiNetworks: [],
      wholeLadderFirst: false,
      mediaAccess: 'public',
      mediaTtlSeconds: 3600,
      createdAt: 1000,
      updatedAt: 1000,
      ...overrides,
    });
    const newApp = async (overrides: Partial<AppRecord> = {}) => {
      const a = app(overrides);
      await s.apps.insert(a);
      return a;
    };

    describe('AppStore', () => {
      it('reads back what it stored, and undefined for an unknown AppId', async () => {
        const a = await newApp({ name: 'Ünïcode 名', callbackUrl: 'http://x/cb', disabled: true });
        expect(await s.apps.get(a.appId)).toEqual(a);
        expect(await s.apps.get('nobody')).toBeUndefined();
      });

      it('hands out copies: changing one does not change the store', async () => {
        const a = await newApp();
        const got = (await s.apps.get(a.appId))!;
        got.name = 'changed';
        expect((await s.apps.get(a.appId))!.name).toBe('app');
      });

      it('refuses a second application with the same AppId', async () => {
        const a = await newApp();
        await expect(s.apps.insert({ ...a, name: 'again' })).rejects.toThrow();
        expect((await s.apps.get(a.appId))!.name).toBe('app');
      });

      it('lists by creation time, then AppId', async () => {
        const b = await newApp({ appId: 'b', createdAt: 2000 });
        const a = await newApp({ appId: 'a', createdAt: 2000 });
        const c = await newApp({ appId: 'c', createdAt: 1000 });
        expect((await s.apps.list()).map((x) => x.appId)).toEqual([c.appId, a.appId, b.appId]);
      });

      it('updates only the given fields and updatedAt; undefined for an unknown AppId', async () => {
        const a = await newApp({ callbackUrl: 'http://x/cb' });
        const updated = await s.apps.update(a.appId, { name: 'new', disabled: true }, 5000);
        expect(updated).toEqual({ ...a, name: 'new', disabled: true, updatedAt: 5000 });
        expect(await s.apps.get(a.appId)).toEqual(updated);
        expect(await s.apps.update(a.appId, { secret: 'other', callbackUrl: '', disabled: false }, 6000)).toEqual({
          ...a, name: 'new', secret: 'other', callbackUrl: '', updatedAt: 6000,
        });
        expect(await s.apps.update('nobody', { name: 'x' }, 7000)).toBeUndefined();
        expect(await s.apps.get('nobody')).toBeUndefined();
      });

      it('keeps whether an application wants every rung before status 1, and changes it on update', async () => {
        const a = await newApp({ wholeLadderFirst: true });
        expect((await s.apps.get(a.appId))!.wholeLadderFirst).toBe(true);
        expect((await s.apps.update(a.appId, { name: 'renamed' }, 2000))!.wholeLadderFirst).toBe(true);
        expect((await s.apps.update(a.appId, { wholeLadderFirst: false }, 3000))!.wholeLadderFirst).toBe(false);
        expect((await newApp()).wholeLadderFirst).toBe(false);
      });

      it("keeps who may fetch an application's media and for how long, and changes them on update", async () => {
        const a = await newApp({ mediaAccess: 'signed', mediaTtlSeconds: 60 });
        expect(await s.apps.get(a.appId)).toMatchObject({ mediaAccess: 'signed', mediaTtlSeconds: 60 });
        expect(await s.apps.update(a.appId, { name: 'renamed' }, 2000)).toMatchObject({ mediaAccess: 'signed', mediaTtlSeconds: 60 });
        expect(await s.apps.update(a.appId, { mediaAccess: 'public', mediaTtlSeconds: 86_400 }, 3000)).toMatchObject({ mediaAccess: 'public', mediaTtlSeconds: 86_400 });
        // An application stored without them reads back public, an hour.
        const { mediaAccess: _a, mediaTtlSeconds: _t, ...bare } = app();
        await s.apps.insert(bare);
        expect(await s.apps.get(bare.appId)).toMatchObject({ mediaAccess: 'public', mediaTtlSeconds: 3600 });
      });

      it('keeps API networks in order, replaces them on update, and empties them (issue 12 item 1)', async () => {
        const a = await newApp({ apiNetworks: ['203.0.113.0/24', '2001:db8::/32'] });
        expect((await s.apps.get(a.appId))!.apiNetworks).toEqual(['203.0.113.0/24', '2001:db8::/32']);
        expect((await s.apps.list()).find((x) => x.appId === a.appId)!.apiNetworks).toEqual(['203.0.113.0/24', '2001:db8::/32']);
        const got = (await s.apps.get(a.appId))!;
        got.apiNetworks.push('10.0.0.0/8');
        expect((await s.apps.get(a.appId))!.apiNetworks).toHaveLength(2);
        expect((await s.apps.update(a.appId, { apiNetworks: ['10.0.0.1/32'] }, 2000))!.apiNetworks).toEqual(['10.0.0.1/32']);
        expect((await s.apps.update(a.appId, { name: 'other' }, 3000))!.apiNetworks).toEqual(['10.0.0.1/32']);
        expect((await s.apps.update(a.appId, { apiNetworks: [] }, 4000))!.apiNetworks).toEqual([]);
        expect((await newApp()).apiNetworks).toEqual([]);
        await s.apps.update(a.appId, { apiNetworks: ['192.0.2.0/24', '::ffff:0:0/96'] }, 5000);
        await s.close();
        expect((await (await reopen()).apps.get(a.appId))!.apiNetworks).toEqual(['192.0.2.0/24', '::ffff:0:0/96']);
      });

      it('replaces grants as a set and reads them sorted', async () => {
        const [a, b, c] = [await newApp({ appId: 'ga' }), await newApp({ appId: 'gc' }), await newApp({ appId: 'gb' })];
        expect(await s.apps.grants(a.appId)).toEqual([]);
        await s.apps.setGrants(a.appId, [b.appId, c.appId]);
        expect(await s.apps.grants(a.appId)).toEqual(['gb', 'gc']);
        expect(await s.apps.grants(b.appId)).toEqual([]);
        await s.apps.setGrants(a.appId, [c.appId]);
        expect(await s.apps.grants(a.appId)).toEqual(['gb']);
        await s.apps.setGrants(a.appId, []);
        expect(await s.apps.grants(a.appId)).toEqual([]);
        expect(await s.apps.grants('nobody')).toEqual([]);
      });
    });

    describe('VideoStore', () => {
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

    describe('JobStore', () => {
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

    describe('SigningKeyStore', () => {
      const key = (id: string, createdAt: number, purpose: 'media' | 'uploads' = 'media') => ({ purpose, id, secret: id.repeat(64 / id.length), createdAt });

      it('stores a first key once; a second first key finds the first', async () => {
        expect(await s.signingKeys.list('media', 1000)).toEqual([]);
        expect(await s.signingKeys.addFirst(key('aa', 1000), 1000)).toEqual([key('aa', 1000)]);
        expect(await s.signingKeys.addFirst(key('bb', 1001), 1001)).toEqual([key('aa', 1000)]);
        // Each purpose has its own.
        expect(await s.signingKeys.addFirst(key('cc', 1002, 'uploads'), 1002)).toEqual([key('cc', 1002, 'uploads')]);
        expect(await (await reopen()).signingKeys.list('media', 1003)).toEqual([key('aa', 1000)]);
      });

      it('rotates: the new key first, the others ended at the time given, the ended ones gone', async () => {
        await s.signingKeys.addFirst(key('aa', 1000), 1000);
        expect(await s.signingKeys.rotate(key('bb', 2000), 5000, 2000)).toEqual([key('bb', 2000), { ...key('aa', 1000), expiresAt: 5000 }]);
        // A later end does not lengthen an earlier one; an earlier one shortens it.
        expect(await s.signingKeys.rotate(key('cc', 3000), 9000, 3000)).toEqual([key('cc', 3000), { ...key('bb', 2000), expiresAt: 9000 }, { ...key('aa', 1000), expiresAt: 5000 }]);
        expect(await s.signingKeys.list('media', 5000)).toEqual([key('cc', 3000), { ...key('bb', 2000), expiresAt: 9000 }]);
        // Revoked: the others end now, and are gone from the list at once.
        expect(await s.signingKeys.rotate(key('dd', 6000), 6000, 6000)).toEqual([key('dd', 6000)]);
        const again = await reopen();
        expect(await again.signingKeys.list('media', 6000)).toEqual([key('dd', 6000)]);
        // Another purpose is left alone.
        expect(await again.signingKeys.list('uploads', 6000)).toEqual([]);
      });
    });

    describe('ViewCountStore', () => {
      it('adds counts into each video and day, from several writers at once, and keeps them', async () => {
        const a = crypto.randomUUID();
        const b = crypto.randomUUID();
        expect(await s.views.ofVideo(a)).toEqual([]);
        await s.views.add([]);
        await s.views.add([{ videoId: a, day: '2026-11-28', views: 1, watchSeconds: 10 }]);
        // Two flushes at once into the same rows (on PostgreSQL, two connections of the pool).
        const second = s;
        await Promise.all([
          s.views.add([{ videoId: a, day: '2026-11-29', views: 2, watchSeconds: 20 }, { videoId: b, day: '2026-11-29', views: 1, watchSeconds: 5 }]),
          second.views.add([{ videoId: a, day: '2026-11-29', views: 3, watchSeconds: 30 }, { videoId: a, day: '2026-11-29', views: 1, watchSeconds: 1 }]),
        ]);
        expect(await second.views.ofVideo(a)).toEqual([
          { videoId: a, day: '2026-11-28', views: 1, watchSeconds: 10 },
          { videoId: a, day: '2026-11-29', views: 6, watchSeconds: 51 },
        ]);
        const again = await reopen();
        expect(await again.views.byDay('2026-11-29', '2026-11-30')).toEqual([{ day: '2026-11-29', views: 7, watchSeconds: 56 }]);
        expect(await again.views.byDay('2026-11-01', '2026-11-28')).toEqual([{ day: '2026-11-28', views: 1, watchSeconds: 10 }]);
      });
    });

    describe('CallbackStore', () => {
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

/** sql.js: a data directory per test (under the run's temporary folder, removed at its end). */
storeContract('sql.js', () => async () => {
  const dir = tempDataDir('vop-contract-');
  let current = await openSqlJsStores({ dir });
  return {
    stores: current,
    async reopen() {
      await current.close();
      current = await openSqlJsStores({ dir });
      return current;
    },
  };
});

/** PostgreSQL: the run's one server (test/helpers/postgres.ts), a database per test. */
describe('PostgreSQL', () => {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
    console.log(`PostgreSQL started in ${server.startMs} ms`);
  });
  afterAll(() => server?.stop());
  it('counts the videos a database held before its counts were kept, and a deleted video leaves its counts', async () => {
    const url = await server!.createDatabase();
    // The schema as it was before the counts (version 14), with videos in it.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      for (const step of PG_MIGRATIONS.slice(0, 14)) for (const sql of step) await client.query(sql);
      await client.query('CREATE TABLE vop_schema (version INTEGER NOT NULL)');
      await client.query('INSERT INTO vop_schema (version) VALUES (14)');
      await client.query("INSERT INTO apps (app_id, name, secret, created_at, updated_at) VALUES ('a1', 'a', 's', 1, 1), ('a2', 'b', 's', 1, 1)");
      await client.query(
        `INSERT INTO videos (id, app_id, title, create_user, status, source_type, created_at, updated_at)
         SELECT 'v' || i, CASE WHEN i % 4 = 0 THEN 'a2' ELSE 'a1' END, 't', 'u' || (i % 3), i % 5, 1, i, i FROM generate_series(1, 50) AS i`,
      );
    } finally {
      await client.end();
    }
    const stores = await openPostgresStores({ url, connectRetry: NO_RETRY, log: () => undefined });
    try {
      const truth = async (where: string) => Number((await stores.db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM videos WHERE ${where}`)).rows[0]!.n);
      const check = async () => {
        expect((await stores.videos.listByApp('a1', { offset: 0, limit: 1 })).total).toBe(await truth("app_id = 'a1'"));
        expect((await stores.videos.listByAppAndUser('a1', 'u1', { offset: 0, limit: 1 })).total).toBe(await truth("app_id = 'a1' AND create_user = 'u1'"));
        const byStatus: Record<number, number> = {};
        for (const r of (await stores.db.query<{ status: number; n: number }>('SELECT status, COUNT(*) AS n FROM videos GROUP BY status')).rows) byStatus[r.status] = r.n;
        expect(await stores.videos.countByStatus()).toEqual(byStatus);
      };
      await check();
      expect((await stores.videos.listByApp('a1', { offset: 0, limit: 1 })).total).toBe(38);
      // No call of vop deletes a video's row; whatever does (by hand, a later purge) is counted too.
      await stores.db.query("DELETE FROM videos WHERE id IN ('v1', 'v2', 'v4')");
      await stores.db.query("UPDATE videos SET app_id = 'a2', create_user = 'u9' WHERE id = 'v5'");
      await check();
      expect((await stores.videos.listByApp('a1', { offset: 0, limit: 1 })).total).toBe(35);
    } finally {
      await stores.close();
    }
  });

  storeContract('PostgreSQL', () => async () => {
    const url = await server!.createDatabase();
    let current = await openPostgresStores({ url, connectRetry: NO_RETRY, log: () => undefined });
    return {
      stores: current,
      async reopen() {
        await current.close().catch(() => undefined);
        current = await openPostgresStores({ url, connectRetry: NO_RETRY, log: () => undefined });
        return current;
      },
    };
  });
});
