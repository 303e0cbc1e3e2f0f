/**
 * Cluster reads that other nodes' writes show on (docs/cluster.md, "How reads scale"): each node
 * keeps copies of applications, dropped when the event relay hears of a change, and of list
 * pages, used only while the database's kept counts say the application's videos are unchanged.
 * Two real servers on one real PostgreSQL: what one node changes, the other shows on its next
 * read (lists and details), or within the relay's delivery (applications: bounded, polled waits).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESULT_CODES } from '../../server/core/errors.js';
import { SpecClient } from '../helpers/client.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';

let pgServer: TestPostgres;
const servers: TestServer[] = [];
beforeAll(async () => {
  pgServer = await startPostgres();
});
afterAll(async () => {
  for (const s of servers) await s.close().catch(() => undefined);
  pgServer?.stop();
});

/** Two nodes on one new database (one machine: their media folders are one). */
async function twoNodes(): Promise<{ url: string; a: TestServer; b: TestServer }> {
  const url = await pgServer.createDatabase();
  const [a, b] = await Promise.all([startServer({ databaseUrl: url, sharedMedia: true }), startServer({ databaseUrl: url, sharedMedia: true })]);
  servers.push(a, b);
  return { url, a, b };
}

const via = (s: TestServer, c: SpecClient, secret = c.secret) => new SpecClient(s.baseUrl, c.appId, secret);

/** What the relay may take to bring a change from one node to another: far less in practice. */
const RELAY_BOUND_MS = 1_000;

/** Polls `call` until its ResultCode is `code`, for at most {@link RELAY_BOUND_MS}; resolves with how long it took. */
async function soonAnswers(call: () => Promise<{ body: { AuthMsg?: { ResultCode?: string } } }>, code: string): Promise<number> {
  const started = Date.now();
  return waitUntil(`ResultCode ${code} within ${RELAY_BOUND_MS} ms`, async () => {
    const last = (await call()).body.AuthMsg?.ResultCode;
    return last === code ? Date.now() - started : notYet(last);
  }, { timeoutMs: RELAY_BOUND_MS, pollMs: 10 });
}

async function list(c: SpecClient, params: Record<string, string | number> = {}): Promise<{ total: number; ids: string[]; statuses: number[] }> {
  const r = await c.get('/Api/Video/GetList', { PageSize: 50, ...params });
  expect(r.body.AuthMsg?.ResultCode, r.text).toBe('1');
  return { total: r.body.Total, ids: r.body.VideoList.map((v: { Id: string }) => v.Id), statuses: r.body.VideoList.map((v: { Status: number }) => v.Status) };
}

describe('cluster reads: copies on each node that other nodes’ changes reach', () => {
  it('drops a copy of an application on every node when one node changes it: secret, disabled, grants, API networks', async () => {
    const { a, b } = await twoNodes();
    const onA = await a.newApp('changed');
    const other = await a.newApp('other');
    const onB = via(b, onA);
    // B reads (and keeps) the application before each change.
    expect((await onB.get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('1');

    const rotated = await a.admin.request('POST', `/apps/${onA.appId}/secret`);
    expect(rotated.status).toBe(200);
    const newSecret: string = rotated.body.appSecret;
    expect(newSecret).toBeTruthy();
    await soonAnswers(() => onB.get('/Api/Video/GetList'), RESULT_CODES.SECRET_KEY_ERROR.code);
    const renewed = via(b, onA, newSecret);
    expect((await renewed.get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('1');
    // The node that made the change refuses the old secret on its very next call.
    expect((await onA.get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe(RESULT_CODES.SECRET_KEY_ERROR.code);

    expect((await a.admin.request('PATCH', `/apps/${onA.appId}`, { disabled: true })).status).toBe(200);
    await soonAnswers(() => renewed.get('/Api/Video/GetList'), RESULT_CODES.APP_DISABLED.code);
    // And back, through the other node.
    expect((await b.admin.request('PATCH', `/apps/${onA.appId}`, { disabled: false })).status).toBe(200);
    await soonAnswers(() => via(a, onA, newSecret).get('/Api/Video/GetList'), '1');

    // Grants: B lets the application list the other's uploader once A granted it, and no longer once A took it back.
    const userList = () => renewed.get('/Api/Video/GetUserVideoListByAId', { aId: other.appId, createUser: 'u' });
    expect((await userList()).body.AuthMsg.ResultCode).toBe(RESULT_CODES.ACCESS_DENIED.code);
    expect((await a.admin.request('PATCH', `/apps/${onA.appId}`, { grants: [other.appId] })).status).toBe(200);
    await soonAnswers(userList, '1');
    expect((await a.admin.request('PATCH', `/apps/${onA.appId}`, { grants: [] })).status).toBe(200);
    await soonAnswers(userList, RESULT_CODES.ACCESS_DENIED.code);

    // API networks that leave out the loopback the tests call from: refused on B too.
    expect((await a.admin.request('PATCH', `/apps/${onA.appId}`, { apiNetworks: ['10.0.0.0/8'] })).status).toBe(200);
    await soonAnswers(() => renewed.get('/Api/Video/GetList'), RESULT_CODES.ACCESS_DENIED.code);
  });

  it('drops every copy when the node listens again after losing its listening connection', async () => {
    const { url, a, b } = await twoNodes();
    const onA = await a.newApp('relisten');
    const onB = via(b, onA);
    expect((await onB.get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('1');
    // Every node's listening connection is cut; the change made meanwhile is announced to nobody.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const listeners = async () =>
      Number((await admin.query("SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'")).rows[0].n);
    try {
      const before = await listeners();
      const cut = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'");
      expect(cut.rowCount).toBeGreaterThanOrEqual(2);
      expect((await a.admin.request('PATCH', `/apps/${onA.appId}`, { disabled: true })).status).toBe(200);
      // Both nodes listen again (the relay tries after a quarter of a second), and B has not read meanwhile.
      await waitUntil('the nodes to listen again', async () => {
        const n = await listeners();
        return n >= before || notYet({ listening: n, before });
      }, { timeoutMs: 10_000, pollMs: 20 });
    } finally {
      await admin.end();
    }
    // B's copy, kept from before the cut, is gone: its very next call is refused.
    expect((await onB.get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe(RESULT_CODES.APP_DISABLED.code);
  });

  it('shows a registration or a status change made on one node on the other node’s next list and detail', async () => {
    const { a, b } = await twoNodes();
    const onA = await a.newApp('lists');
    const onB = via(b, onA);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await onA.register({ VideoTitle: `clip ${i}`, CreateUser: 'u' }));
    // Each read is made twice on B, so that the second can come from what the first kept.
    for (let round = 0; round < 2; round++) expect(await list(onB)).toMatchObject({ total: 3, ids: [...ids].reverse() });
    const userList = async (c: SpecClient) => (await c.get('/Api/Video/GetUserVideoListByAId', { aId: onA.appId, createUser: 'u' })).body;
    expect((await userList(onB)).Total).toBe(3);

    // A registration on A: B's next list has it, at once.
    const fourth = await onA.register({ VideoTitle: 'clip 3', CreateUser: 'u' });
    expect(await list(onB)).toMatchObject({ total: 4, ids: [fourth, ...[...ids].reverse()] });
    expect((await userList(onB)).Total).toBe(4);
    // A page further on moves too.
    expect(await list(onB, { PageSize: 2, PageIndex: 1 })).toMatchObject({ total: 4, ids: [ids[1], ids[0]] });

    // A status change on A (the admin deletes a video: status 0): B's next list and detail show it.
    expect((await list(onB)).statuses).toEqual([8, 8, 8, 8]);
    expect((await onB.get('/Api/Video/Get', { Id: ids[0]! })).body.VideoModel.Status).toBe(8);
    expect((await a.admin.request('DELETE', `/videos/${ids[0]}`)).status).toBe(200);
    expect((await list(onB)).statuses).toEqual([8, 8, 8, 0]);
    expect((await onB.get('/Api/Video/Get', { Id: ids[0]! })).body.VideoModel.Status).toBe(0);
    expect(await list(onB, { PageSize: 2, PageIndex: 1 })).toMatchObject({ total: 4, ids: [ids[1], ids[0]], statuses: [8, 0] });

    // And the other way round: a registration on B shows on A at once.
    const fromB = await onB.register({ VideoTitle: 'from B', CreateUser: 'v' });
    expect(await list(onA, { PageSize: 1 })).toMatchObject({ total: 5, ids: [fromB] });
  });
});
