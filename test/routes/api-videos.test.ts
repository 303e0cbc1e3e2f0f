/**
 * Endpoints 4.1, 4.3 and 4.4: path shapes, parameter names, JSON types, order and paging
 * (issue 2, item 5).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREATE_DATE_RE, VIDEO_FIELDS, videoRecord } from '../helpers/fixtures.js';
import type { SpecClient } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';

const code = (r: { body: any }) => r.body?.AuthMsg?.ResultCode as string;
const JSON_TYPE = 'application/json; charset=utf-8';

describe('spec API reads', () => {
  let s: TestServer;
  let c: SpecClient;
  let id: string;
  beforeAll(async () => {
    s = await startServer();
    c = await s.newApp('reader');
    id = await c.register({
      VideoTitle: 'Detail me',
      Description: 'about it',
      Tags: 'a,b',
      Actors: 'Ann, Bob',
      CreateUser: 'carol',
    });
  });
  afterAll(() => s.close());

  describe('4.1 detail', () => {
    it('answers /Api/Video/Get with the spec fields and JSON types', async () => {
      const r = await c.get('/Api/Video/Get', { Id: id });
      expect(r.status).toBe(200);
      expect(r.contentType).toBe(JSON_TYPE);
      expect(r.body.AuthMsg).toEqual({ ResultCode: '1', ResultMessage: 'OK' });
      const m = r.body.VideoModel;
      expect(Object.keys(m).sort()).toEqual([...VIDEO_FIELDS, 'Duration'].sort());
      expect(m).toMatchObject({ Id: id, VideoTitle: 'Detail me', Description: 'about it', Tags: 'a,b', Actors: 'Ann, Bob', CreateUser: 'carol', PicSavePath: '' });
      expect(m.Status).toBe(8);
      expect(Number.isInteger(m.Duration)).toBe(true);
      expect(m.Duration).toBe(0);
      expect(m.CreateDate).toMatch(CREATE_DATE_RE);
      // MediaSever, spelled as the spec spells it, with absolute base addresses.
      expect(r.body).not.toHaveProperty('MediaServer');
      expect(Object.keys(r.body.MediaSever).sort()).toEqual(['DownloadURL', 'MobilePlayURL', 'PlayURL']);
      for (const url of Object.values<string>(r.body.MediaSever)) {
        expect(new URL(url).origin).toBe(s.baseUrl);
      }
      expect(r.body.MediaSever.PlayURL).toBe(`${s.baseUrl}/media/play/`);
      expect(r.body.VideoPlayFile).toEqual([]);
    });

    it('answers /Api/Video with an Id the same way', async () => {
      const a = await c.get('/Api/Video/Get', { Id: id });
      const b = await c.get('/Api/Video', { Id: id });
      expect(b.body).toEqual(a.body);
    });

    it('reads the Id parameter in any case, and the id itself in either case', async () => {
      for (const name of ['id', 'Id', 'ID', 'iD']) {
        const r = await c.get('/Api/Video', { [name]: id });
        expect(r.body.VideoModel?.Id, name).toBe(id);
      }
      const upper = await c.get('/Api/Video/Get', { id: id.toUpperCase() });
      expect(upper.body.VideoModel.Id).toBe(id);
    });

    it('keeps the first value of a parameter named twice (in any case)', async () => {
      const r = await fetch(`${s.baseUrl}/Api/Video?${c.query()}&Id=${id}&ID=${crypto.randomUUID()}`);
      expect((await r.json()).VideoModel.Id).toBe(id);
    });

    it('matches paths without regard to case', async () => {
      for (const path of ['/api/video/get', '/API/VIDEO/GET', '/Api/Video/Get/', '/api/video']) {
        const r = await c.get(path, { id });
        expect(r.body.VideoModel?.Id, path).toBe(id);
      }
    });

    it('refuses a missing Id (100), a malformed one (201) and an unknown one (301)', async () => {
      const missing = await c.get('/Api/Video/Get');
      expect(missing.body.AuthMsg).toEqual({ ResultCode: '100', ResultMessage: 'Missing parameter: Id' });
      const malformed = await c.get('/Api/Video/Get', { Id: 'not-a-video-id' });
      expect(code(malformed)).toBe('201');
      const unknown = await c.get('/Api/Video/Get', { Id: crypto.randomUUID() });
      expect(unknown.status).toBe(200);
      expect(unknown.contentType).toBe(JSON_TYPE);
      expect(unknown.body).toEqual({ AuthMsg: { ResultCode: '301', ResultMessage: 'Video Not Found' } });
    });

    it('gives PicSavePath as an absolute address once there is a cover, and Duration in whole seconds', async () => {
      const v = videoRecord(c.appId, { status: 1, duration: 93, coverFile: 'covers/x.jpg' });
      await s.vop.stores.videos.insert(v);
      const r = await c.get('/Api/Video/Get', { Id: v.id });
      expect(r.body.VideoModel.Status).toBe(1);
      expect(r.body.VideoModel.Duration).toBe(93);
      expect(r.body.VideoModel.PicSavePath).toBe(`${s.baseUrl}/media/cover/${v.id}.jpg`);
      expect(Array.isArray(r.body.VideoPlayFile)).toBe(true);
    });

    it('writes CreateDate as the server zone local time, without offset or fraction', async () => {
      const z = await startServer({ timeZone: 'Asia/Shanghai' });
      try {
        const zc = await z.newApp();
        const v = videoRecord(zc.appId, { createdAt: Date.UTC(2024, 0, 1, 20, 30, 5, 999) });
        await z.vop.stores.videos.insert(v);
        const r = await zc.get('/Api/Video/Get', { Id: v.id });
        expect(r.body.VideoModel.CreateDate).toBe('2024-01-02T04:30:05');
        const list = await zc.get('/Api/Video/GetList');
        expect(list.body.VideoList[0].CreateDate).toBe('2024-01-02T04:30:05');
      } finally {
        await z.close();
      }
    });

    it('uses --public-url for the media addresses when it is set', async () => {
      const p = await startServer({ publicUrl: 'https://videos.example.org/vop/' });
      try {
        const pc = await p.newApp();
        const v = videoRecord(pc.appId, { coverFile: 'c.jpg' });
        await p.vop.stores.videos.insert(v);
        const r = await pc.get('/Api/Video', { Id: v.id });
        expect(r.body.MediaSever).toEqual({
          PlayURL: 'https://videos.example.org/vop/media/play/',
          MobilePlayURL: 'https://videos.example.org/vop/media/play/',
          DownloadURL: 'https://videos.example.org/vop/media/download/',
        });
        expect(r.body.VideoModel.PicSavePath).toBe(`https://videos.example.org/vop/media/cover/${v.id}.jpg`);
      } finally {
        await p.close();
      }
    });
  });

  describe('4.3 and 4.4 lists', () => {
    let l: SpecClient;
    const base = Date.UTC(2025, 5, 1, 12, 0, 0);
    let expectedOrder: string[];
    let doraOrder: string[];
    beforeAll(async () => {
      l = await s.newApp('lister');
      // 60 videos at known times, some sharing a CreateDate (the Id breaks ties), 12 by "dora".
      const records = Array.from({ length: 60 }, (_, i) =>
        videoRecord(l.appId, { title: `v${i}`, createdAt: base + Math.floor(i / 3) * 1000, createUser: i % 5 === 0 ? 'dora' : 'eve' }),
      );
      await Promise.all(records.map((v) => s.vop.stores.videos.insert(v)));
      const sorted = [...records].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1));
      expectedOrder = sorted.map((v) => v.id);
      doraOrder = sorted.filter((v) => v.createUser === 'dora').map((v) => v.id);
    });

    it('lists newest first (CreateDate, then Id), 50 by default, with Total counting every match', async () => {
      const r = await l.get('/Api/Video/GetList');
      expect(r.status).toBe(200);
      expect(r.contentType).toBe(JSON_TYPE);
      expect(r.body.AuthMsg).toEqual({ ResultCode: '1', ResultMessage: 'OK' });
      expect(Object.keys(r.body).sort()).toEqual(['AuthMsg', 'Total', 'VideoList']);
      expect(r.body.Total).toBe(60);
      expect(r.body.VideoList).toHaveLength(50);
      expect(r.body.VideoList.map((v: any) => v.Id)).toEqual(expectedOrder.slice(0, 50));
    });

    it('gives list items exactly the 9 fields of spec 2.2: no Duration, no media addresses', async () => {
      const r = await l.get('/Api/Video/GetList', { PageSize: 3 });
      for (const item of r.body.VideoList) {
        expect(Object.keys(item)).toEqual(VIDEO_FIELDS);
        expect(typeof item.Status).toBe('number');
        expect(item.CreateDate).toMatch(CREATE_DATE_RE);
      }
      expect(r.body).not.toHaveProperty('MediaSever');
    });

    it('answers /Api/Video without an Id (or with an empty one) as the full list', async () => {
      const a = await l.get('/Api/Video/GetList', { PageSize: 7, PageIndex: 2 });
      const b = await l.get('/Api/Video', { PageSize: 7, PageIndex: 2 });
      const c2 = await l.get('/Api/Video', { Id: '', PageSize: 7, PageIndex: 2 });
      expect(b.body).toEqual(a.body);
      expect(c2.body).toEqual(a.body);
      expect(a.body.VideoList.map((v: any) => v.Id)).toEqual(expectedOrder.slice(14, 21));
    });

    it('counts PageIndex from 0, pages without overlap to the end, and past it answers an empty page', async () => {
      const seen: string[] = [];
      for (let page = 0; page < 4; page++) {
        const r = await l.get('/api/video/getlist', { pageindex: page, PAGESIZE: 17 });
        expect(r.body.Total).toBe(60);
        seen.push(...r.body.VideoList.map((v: any) => v.Id));
      }
      expect(seen).toEqual(expectedOrder);
      const past = await l.get('/Api/Video/GetList', { PageIndex: 100, PageSize: 10 });
      expect(past.body).toMatchObject({ Total: 60, VideoList: [] });
    });

    it('accepts PageSize 200, the documented maximum', async () => {
      const r = await l.get('/Api/Video/GetList', { PageSize: 200 });
      expect(code(r)).toBe('1');
      expect(r.body.VideoList).toHaveLength(60);
    });

    it('lists one uploader of one system, 10 by default, newest first', async () => {
      const doraIds = doraOrder;
      expect(doraIds).toHaveLength(12);
      const r = await l.get('/Api/Video/GetUserVideoListByAId', { createUser: 'dora', aId: l.appId });
      expect(r.body.AuthMsg.ResultCode).toBe('1');
      expect(Object.keys(r.body).sort()).toEqual(['AuthMsg', 'Total', 'VideoList']);
      expect(r.body.Total).toBe(12);
      expect(r.body.VideoList.map((v: any) => v.Id)).toEqual(doraIds.slice(0, 10));
      for (const item of r.body.VideoList) expect(Object.keys(item)).toEqual(VIDEO_FIELDS);
      const page1 = await l.get('/Api/Video/GetUserVideoListByAId', { createUser: 'dora', aId: l.appId, PageIndex: 1 });
      expect(page1.body.VideoList.map((v: any) => v.Id)).toEqual(doraIds.slice(10));
    });

    it('reads createUser and aId in any case', async () => {
      for (const [u, a] of [['createuser', 'aid'], ['CREATEUSER', 'AID'], ['CreateUser', 'AId']] as const) {
        const r = await l.get('/api/video/GETUSERVIDEOLISTBYAID', { [u]: 'dora', [a]: l.appId, pagesize: 1 });
        expect(r.body.Total, `${u}/${a}`).toBe(12);
      }
    });

    it('matches createUser exactly, and as registration cut it', async () => {
      expect((await l.get('/Api/Video/GetUserVideoListByAId', { createUser: 'Dora', aId: l.appId })).body.Total).toBe(0);
      expect((await l.get('/Api/Video/GetUserVideoListByAId', { createUser: 'nobody', aId: l.appId })).body).toMatchObject({ Total: 0, VideoList: [] });
      const longName = 'u'.repeat(60);
      const vid = await l.register({ CreateUser: longName });
      const r = await l.get('/Api/Video/GetUserVideoListByAId', { createUser: longName, aId: l.appId });
      expect(r.body.VideoList.map((v: any) => v.Id)).toEqual([vid]);
      expect(r.body.VideoList[0].CreateUser).toBe('u'.repeat(50));
      // The newest registration heads the full list too.
      expect((await l.get('/Api/Video/GetList', { PageSize: 1 })).body.VideoList[0].Id).toBe(vid);
    });

    it('refuses the uploader list without createUser or aId with 100', async () => {
      const noUser = await l.get('/Api/Video/GetUserVideoListByAId', { aId: l.appId });
      expect(noUser.body.AuthMsg).toEqual({ ResultCode: '100', ResultMessage: 'Missing parameter: createUser' });
      const noAid = await l.get('/Api/Video/GetUserVideoListByAId', { createUser: 'dora' });
      expect(noAid.body.AuthMsg).toEqual({ ResultCode: '100', ResultMessage: 'Missing parameter: aId' });
    });

    const nonsense: Array<[string, Record<string, string>]> = [
      ['PageIndex -1', { PageIndex: '-1' }],
      ['PageIndex abc', { PageIndex: 'abc' }],
      ['PageIndex 1.5', { PageIndex: '1.5' }],
      ['PageIndex 1e3', { PageIndex: '1e3' }],
      ['PageIndex huge', { PageIndex: '99999999999999999999' }],
      ['PageSize 0', { PageSize: '0' }],
      ['PageSize -1', { PageSize: '-1' }],
      ['PageSize abc', { PageSize: 'abc' }],
      ['PageSize 201', { PageSize: '201' }],
      ['PageSize 1.5', { PageSize: '1.5' }],
      ['PageSize 0x10', { PageSize: '0x10' }],
    ];
    it.each(nonsense)('answers %s with 202 on every list, never a 500', async (_what, paging) => {
      const calls = [
        l.get('/Api/Video/GetList', paging),
        l.get('/Api/Video', paging),
        l.get('/Api/Video/GetUserVideoListByAId', { createUser: 'dora', aId: l.appId, ...paging }),
      ];
      for (const r of await Promise.all(calls)) {
        expect(r.status).toBe(200);
        expect(r.contentType).toBe(JSON_TYPE);
        expect(r.body.AuthMsg.ResultCode).toBe('202');
        expect(r.body.AuthMsg.ResultMessage).toMatch(/^Invalid Paging: Page(Index|Size) must be a whole number/);
        expect(r.body).not.toHaveProperty('VideoList');
      }
    });

    it('takes PageIndex up to 10,000,000 and no further', async () => {
      const last = await l.get('/Api/Video/GetList', { PageIndex: 10_000_000, PageSize: 200 });
      expect(last.body).toMatchObject({ AuthMsg: { ResultCode: '1' }, VideoList: [] });
      expect(code(await l.get('/Api/Video/GetList', { PageIndex: 10_000_001 }))).toBe('202');
    });

    it('treats empty paging values as absent (the defaults)', async () => {
      const r = await l.get('/Api/Video/GetList', { PageIndex: '', PageSize: '' });
      expect(r.body.VideoList).toHaveLength(50);
    });
  });
});
