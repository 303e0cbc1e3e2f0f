/**
 * Isolation (issue 2, item 7): an application reads only its own videos; aId lists another's
 * only with the admin's grant.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpecClient } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';

const code = (r: { body: any }) => r.body?.AuthMsg?.ResultCode as string;

describe('isolation between applications', () => {
  let s: TestServer;
  let a: SpecClient;
  let b: SpecClient;
  let aVideo: string;
  let bVideo: string;
  beforeAll(async () => {
    s = await startServer();
    a = await s.newApp('A');
    b = await s.newApp('B');
    aVideo = await a.register({ VideoTitle: 'A1', CreateUser: 'shared-name' });
    await a.register({ VideoTitle: 'A2', CreateUser: 'shared-name' });
    bVideo = await b.register({ VideoTitle: 'B1', CreateUser: 'shared-name' });
  });
  afterAll(() => s.close());

  it("does not show one application's video to another (301, as for an unknown id)", async () => {
    for (const path of ['/Api/Video/Get', '/Api/Video']) {
      const r = await b.get(path, { Id: aVideo });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ AuthMsg: { ResultCode: '301', ResultMessage: 'Video Not Found' } });
    }
    expect(code(await a.get('/Api/Video/Get', { Id: aVideo }))).toBe('1');
  });

  it('lists only the caller’s own videos, with its own Total', async () => {
    const la = await a.get('/Api/Video/GetList');
    const lb = await b.get('/Api/Video');
    expect(la.body.Total).toBe(2);
    expect(lb.body.Total).toBe(1);
    expect(lb.body.VideoList.map((v: any) => v.Id)).toEqual([bVideo]);
    expect(la.body.VideoList.map((v: any) => v.Id)).not.toContain(bVideo);
  });

  it('lists the caller’s own uploader list with aId set to its own AppId', async () => {
    const r = await b.get('/Api/Video/GetUserVideoListByAId', { createUser: 'shared-name', aId: b.appId });
    expect(r.body).toMatchObject({ Total: 1 });
    expect(r.body.VideoList[0].Id).toBe(bVideo);
  });

  it('refuses aId of another application without a grant with 302, and an unknown aId the same way', async () => {
    const other = await b.get('/Api/Video/GetUserVideoListByAId', { createUser: 'shared-name', aId: a.appId });
    expect(other.status).toBe(200);
    expect(other.body.AuthMsg.ResultCode).toBe('302');
    expect(other.body.AuthMsg.ResultMessage).toMatch(/^Access Denied/);
    expect(other.body).not.toHaveProperty('VideoList');
    const unknown = await b.get('/Api/Video/GetUserVideoListByAId', { createUser: 'shared-name', aId: 'f'.repeat(24) });
    expect(unknown.body.AuthMsg.ResultCode).toBe('302');
  });

  it('lists another application’s uploader once the admin granted it, and stops when the grant is taken back', async () => {
    const granted = await s.admin.request('PATCH', `/apps/${b.appId}`, { grants: [a.appId] });
    expect(granted.status).toBe(200);
    expect(granted.body.grants).toEqual([a.appId]);
    expect((await s.admin.request('GET', `/apps/${b.appId}`)).body.grants).toEqual([a.appId]);

    const r = await b.get('/Api/Video/GetUserVideoListByAId', { createUser: 'shared-name', aId: a.appId });
    expect(code(r)).toBe('1');
    expect(r.body.Total).toBe(2);
    expect(r.body.VideoList.map((v: any) => v.VideoTitle).sort()).toEqual(['A1', 'A2']);

    // The grant is for that list only: details and the full list stay the owner's.
    expect(code(await b.get('/Api/Video/Get', { Id: aVideo }))).toBe('301');
    expect((await b.get('/Api/Video/GetList')).body.Total).toBe(1);
    // And it goes one way.
    expect(code(await a.get('/Api/Video/GetUserVideoListByAId', { createUser: 'shared-name', aId: b.appId }))).toBe('302');

    const revoked = await s.admin.request('PATCH', `/apps/${b.appId}`, { grants: [] });
    expect(revoked.body.grants).toEqual([]);
    expect(code(await b.get('/Api/Video/GetUserVideoListByAId', { createUser: 'shared-name', aId: a.appId }))).toBe('302');
  });

  it('refuses a grant to an application that does not exist, and ignores a grant to itself', async () => {
    const bad = await s.admin.request('PATCH', `/apps/${b.appId}`, { grants: ['nope'] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('201');
    const self = await s.admin.request('PATCH', `/apps/${b.appId}`, { grants: [b.appId, a.appId, a.appId] });
    expect(self.body.grants).toEqual([a.appId]);
    await s.admin.request('PATCH', `/apps/${b.appId}`, { grants: [] });
  });
});
