/**
 * The read calls answered ahead of Express (server/routes/fastReadPath.ts, one of the hot paths of
 * server/http/hotPaths.ts) must answer exactly as the Express routes of the same server do: same
 * status, headers and bytes, for good and bad calls alike. The listening server takes the fast path; `vop.app` alone is the Express one.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { videoRecord } from '../helpers/fixtures.js';
import type { SpecClient } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { isUnexpectedErrorLine } from '../../server/core/logLines.js';

interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One request with the Host header fixed, so that both servers build the same addresses. */
function request(port: number, method: string, path: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: { host: 'vop.example:8080' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** What must be the same on both paths (Date and the connection headers are the transport's). */
function comparable(a: RawAnswer) {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...headers } = a.headers;
  return { status: a.status, headers, body: a.body.toString('utf8') };
}

describe('read calls ahead of Express', () => {
  let s: TestServer;
  let c: SpecClient;
  let other: SpecClient;
  let expressOnly: http.Server;
  let expressPort: number;
  let fastPort: number;
  let id: string;
  let publishedId: string;

  beforeAll(async () => {
    s = await startServer();
    c = await s.newApp('reader');
    other = await s.newApp('other');
    id = await c.register({ VideoTitle: 'Fast', CreateUser: 'carol' });
    const published = videoRecord(c.appId, { status: 1, duration: 61, coverFile: 'covers/x.jpg', createUser: 'carol' });
    await s.vop.stores.videos.insert(published);
    publishedId = published.id;
    await s.vop.stores.videos.setRenditions(published.id, [{ videoId: published.id, label: '720p', width: 1280, height: 720, bitrateKbps: 2500, file: '20260101/a.mp4', bytes: 1 }]);
    expressOnly = http.createServer(s.vop.app);
    await new Promise<void>((resolve) => expressOnly.listen(0, '127.0.0.1', resolve));
    expressPort = (expressOnly.address() as AddressInfo).port;
    fastPort = Number(new URL(s.baseUrl).port);
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => expressOnly.close(() => resolve()));
    await s.close();
  });

  const calls: Array<[string, string, () => string]> = [
    ['detail', 'GET', () => `/Api/Video/Get?${c.query({ Id: id })}`],
    ['detail of a published video', 'GET', () => `/Api/Video?${c.query({ id: publishedId })}`],
    ['/Api/Video with an empty Id (the list)', 'GET', () => `/Api/Video?${c.query({ id: ' ' })}`],
    ['detail, path in another case with a trailing slash', 'GET', () => `/api/VIDEO/get/?${c.query({ ID: id.toUpperCase() })}`],
    ['/Api/Video with Id', 'GET', () => `/Api/Video?${c.query({ Id: id })}`],
    ['/Api/Video without Id', 'GET', () => `/Api/Video?${c.query()}`],
    ['list', 'GET', () => `/Api/Video/GetList?${c.query({ PageIndex: 0, PageSize: 1 })}`],
    ['list, second page', 'GET', () => `/Api/Video/GetList?${c.query({ PageIndex: 1, PageSize: 1 })}`],
    ['uploader list', 'GET', () => `/Api/Video/GetUserVideoListByAId?${c.query({ createUser: 'carol', aId: c.appId })}`],
    ['HEAD of a list', 'HEAD', () => `/Api/Video/GetList?${c.query()}`],
    ['an unknown video (301)', 'GET', () => `/Api/Video/Get?${c.query({ Id: '00000000-0000-4000-8000-000000000000' })}`],
    ['a malformed Id (201)', 'GET', () => `/Api/Video/Get?${c.query({ Id: 'nope' })}`],
    ['nonsense paging (202)', 'GET', () => `/Api/Video/GetList?${c.query({ PageSize: 'x' })}`],
    ["another application's list without a grant (302)", 'GET', () => `/Api/Video/GetUserVideoListByAId?${other.query({ createUser: 'carol', aId: c.appId })}`],
    ['no credentials (100)', 'GET', () => '/Api/Video/GetList'],
    ['a wrong token (104)', 'GET', () => `/Api/Video/GetList?${c.query({}, c.auth({ Token: '0'.repeat(32) }))}`],
    ['POST to a read path (405, to Express)', 'POST', () => `/Api/Video/Get?${c.query({ Id: id })}`],
    ['an encoded path (404, to Express)', 'GET', () => `/Api/Video/G%65t?${c.query({ Id: id })}`],
  ];

  it.each(calls)('answers %s as Express does', async (_what, method, path) => {
    const p = path();
    const [fast, viaExpress] = await Promise.all([request(fastPort, method, p), request(expressPort, method, p)]);
    expect(comparable(fast)).toEqual(comparable(viaExpress));
    expect(fast.headers['content-type']).toBe('application/json; charset=utf-8');
    if (method === 'HEAD') {
      expect(fast.body).toHaveLength(0);
      const get = await request(fastPort, 'GET', p);
      expect(fast.headers['content-length']).toBe(String(get.body.length));
    }
  });

  it('leaves Express out of the hot paths only: the read calls, /healthz, media and the widget files', async () => {
    const app = s.vop.app as unknown as { handle: (...args: unknown[]) => unknown };
    const handle = app.handle;
    let calls = 0;
    app.handle = (...args: unknown[]) => (calls++, handle.apply(app, args));
    try {
      expect((await request(fastPort, 'GET', `/Api/Video/GetList?${c.query()}`)).status).toBe(200);
      expect((await request(fastPort, 'HEAD', `/api/video/get/?${c.query({ Id: id })}`)).status).toBe(200);
      expect((await request(fastPort, 'GET', '/healthz')).status).toBe(200);
      expect((await request(fastPort, 'GET', '/widget/initUploadWidget.js')).status).toBe(200);
      expect((await request(fastPort, 'GET', `/media/cover/${publishedId}.jpg`)).status).toBe(404); // its file is not there
      expect((await request(fastPort, 'POST', `/media/cover/${publishedId}.jpg`)).status).toBe(405);
      expect(calls).toBe(0);
      expect((await request(fastPort, 'POST', `/Api/Video/GetList?${c.query()}`)).status).toBe(405);
      expect((await request(fastPort, 'POST', '/healthz')).status).toBe(404);
      expect((await request(fastPort, 'GET', '/widget/')).status).toBe(200);
      expect(calls).toBe(3);
    } finally {
      app.handle = handle;
    }
  });

  it('answers a list page again after a video of its application changes', async () => {
    const before = JSON.parse((await request(fastPort, 'GET', `/Api/Video/GetList?${c.query()}`)).body.toString('utf8'));
    const added = await c.register({ VideoTitle: 'Newest' });
    const afterAdd = JSON.parse((await request(fastPort, 'GET', `/Api/Video/GetList?${c.query()}`)).body.toString('utf8'));
    expect(afterAdd.Total).toBe(before.Total + 1);
    expect(afterAdd.VideoList[0].Id).toBe(added);
    await s.vop.services.lifecycle.move(added, 5);
    const afterMove = JSON.parse((await request(fastPort, 'GET', `/Api/Video/GetList?${c.query()}`)).body.toString('utf8'));
    expect(afterMove.VideoList[0]).toMatchObject({ Id: added, Status: 5 });
    await s.vop.stores.videos.updateMedia(added, { coverFile: 'covers/y.jpg' });
    const afterCover = JSON.parse((await request(fastPort, 'GET', `/Api/Video/GetList?${c.query()}`)).body.toString('utf8'));
    expect(afterCover.VideoList[0].PicSavePath).toBe(`http://vop.example:8080/media/cover/${added}.jpg`);
  });

  it('answers many calls in flight at once, each with its own answer, though some callers leave first', async () => {
    // Answers made in one turn of the event loop are written together (hotPaths.ts, turns): each
    // must still reach its own connection, and a connection closed meanwhile harms none.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 40 });
    const ask = (videoId: string) =>
      new Promise<{ status: number; id: string }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port: fastPort, agent, path: `/Api/Video/Get?${c.query({ Id: videoId })}` }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => resolve({ status: res.statusCode!, id: JSON.parse(Buffer.concat(chunks).toString('utf8')).VideoModel?.Id }));
        });
        req.on('error', reject);
      });
    const leaving = Array.from({ length: 20 }, () => {
      const req = http.get({ host: '127.0.0.1', port: fastPort, path: `/Api/Video/Get?${c.query({ Id: id })}` });
      req.on('error', () => undefined);
      req.on('socket', (socket) => socket.on('connect', () => setImmediate(() => req.destroy())));
      return req;
    });
    const ids = Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? id : publishedId));
    try {
      const answers = await Promise.all(ids.map(ask));
      expect(answers.map((a) => a.status)).toEqual(ids.map(() => 200));
      expect(answers.map((a) => a.id)).toEqual(ids);
    } finally {
      agent.destroy();
      for (const req of leaving) req.destroy();
    }
    expect(s.logs.filter(isUnexpectedErrorLine)).toEqual([]);
  });
});
