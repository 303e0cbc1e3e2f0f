import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from './helpers/server.js';

describe('smoke', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(() => s.close());

  it('registers a video and reads it back', async () => {
    const c = await s.newApp();
    const id = await c.register({ VideoTitle: 'Hello', CreateUser: 'alice' });
    const r = await c.get('/Api/Video/Get', { Id: id });
    expect(r.status).toBe(200);
    expect(r.contentType).toBe('application/json; charset=utf-8');
    expect(r.body.AuthMsg).toEqual({ ResultCode: '1', ResultMessage: 'OK' });
    expect(r.body.VideoModel).toMatchObject({ Id: id, VideoTitle: 'Hello', Status: 8, CreateUser: 'alice', Duration: 0 });
    expect(r.body.VideoModel.CreateDate).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
  });
});
