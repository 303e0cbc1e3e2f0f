/**
 * Limits that hold across the nodes of a cluster (issue 11, item 5; issue 12, "every limit holds
 * across nodes too"): the registration rate of an application and the failure limits count in
 * the shared PostgreSQL database (storage/postgres/postgresCounters.ts), not in each process.
 * Two real servers on one real PostgreSQL; calls alternate between them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_VIDEO_OPTIONS } from '../../server/services/videoService.js';
import { PostgresDatabase } from '../../server/storage/postgres/postgresDatabase.js';
import { PostgresApiCallers } from '../../server/storage/postgres/postgresApiCallers.js';
import { PostgresWindowCounters } from '../../server/storage/postgres/postgresCounters.js';
import { getFrom, SpecClient } from '../helpers/client.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { clearOfMinuteTurn, waitUntil } from '../helpers/wait.js';

let pg: TestPostgres;
let a: TestServer;
let b: TestServer;
beforeAll(async () => {
  pg = await startPostgres();
  const databaseUrl = await pg.createDatabase();
  // On one machine the nodes' media folders are one; what is tested here is the database.
  const options = { databaseUrl, sharedMedia: true, videos: { ...DEFAULT_VIDEO_OPTIONS, registrationsPerMinute: 5 } };
  a = await startServer(options);
  b = await startServer(options);
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  pg?.stop();
});

/** The same application, through the other node. */
const via = (s: TestServer, c: SpecClient) => new SpecClient(s.baseUrl, c.appId, c.secret);

describe('limits across nodes', () => {
  it("counts an application's registrations on every node together", async () => {
    const onA = await a.newApp('busy');
    const onB = via(b, onA);
    // The six calls within one clock minute: one that turns between them starts the count again,
    // and all six could pass (it did, once in CI).
    await clearOfMinuteTurn(5_000);
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) {
      const c = i % 2 === 0 ? onA : onB;
      codes.push((await c.post('/Api/Video/Post', { VideoTitle: `v${i}`, SourceFileGetType: 1 })).body.AuthMsg.ResultCode);
    }
    // Five a minute in all, not five on each node.
    expect(codes.slice(0, 4)).toEqual(['1', '1', '1', '1']);
    expect(codes.filter((x) => x === '308').length).toBeGreaterThanOrEqual(1);
    expect((await onA.get('/Api/Video/GetList')).body.Total).toBe(codes.filter((x) => x === '1').length);
  });

  it('counts failed tokens from one address on every node together', async () => {
    const good = await a.newApp('guessed');
    const bad = (s: TestServer) => new SpecClient(s.baseUrl, good.appId, 'not-the-secret');
    // The failures count per clock minute (windowStart): 32 calls that straddle a minute's turn
    // would be counted in two windows. Start early enough in a minute for them all to fit.
    await clearOfMinuteTurn(20_000);
    // 30 failures a minute per address (the default), spread over both nodes: 15 each.
    const codes: string[] = [];
    for (let i = 0; i < 30; i++) codes.push((await bad(i % 2 === 0 ? a : b).get('/Api/Video/GetList')).body.AuthMsg.ResultCode);
    expect(codes.every((c) => c === '104')).toBe(true);
    // The 31st, on either node, is refused as too many: each node alone has seen 15.
    expect((await bad(a).get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('106');
    expect((await bad(b).get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('106');
    // Good credentials from that address still pass, on both.
    expect((await good.get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('1');
    expect((await via(b, good).get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('1');
  });

  it("shows an application's recent API callers from every node, on every node", async () => {
    const app = await a.newApp('seen');
    // Calls from two addresses (any of 127.0.0.0/8 reaches a loopback listener), one through each node.
    const call = (s: TestServer, from: string) => getFrom(from, `${s.baseUrl}/Api/Video/GetList?${app.query()}`);
    expect((await call(a, '127.0.0.21')).body.AuthMsg.ResultCode).toBe('1');
    expect((await call(b, '127.0.0.22')).body.AuthMsg.ResultCode).toBe('1');
    const callers = async (s: TestServer) => {
      const view = (await s.admin.request('GET', `/apps/${app.appId}`)).body;
      return (view.recentCallers as Array<{ address: string }>).map((c) => c.address).sort();
    };
    // Written in the background after the call: waited for, briefly.
    await waitUntil('both callers recorded', async () => ((await callers(a)).length >= 2 || undefined), { timeoutMs: 2_000 });
    expect(await callers(a)).toEqual(['127.0.0.21', '127.0.0.22']);
    expect(await callers(b)).toEqual(['127.0.0.21', '127.0.0.22']);
  });

  it('keeps at most eight recent callers per application, the newest, whichever node wrote them', async () => {
    const db = await PostgresDatabase.open({ url: await pg.createDatabase(), connectRetry: { maxRetries: 0, baseDelayMs: 0, maxDelayMs: 0, jitter: false }, log: () => undefined });
    try {
      const store = new PostgresApiCallers(db);
      for (let i = 1; i <= 10; i++) await store.record('app1', `10.0.0.${i}`, i % 2 === 0, 1_000 + i);
      await store.record('app2', '10.9.9.9', true, 5);
      // A later call from an address seen before moves it to the front; an older write does not win.
      await store.record('app1', '10.0.0.4', false, 2_000);
      await store.record('app1', '10.0.0.4', true, 1_500);
      const recent = await store.recent('app1');
      expect(recent.map((c) => c.address)).toEqual(['10.0.0.4', '10.0.0.10', '10.0.0.9', '10.0.0.8', '10.0.0.7', '10.0.0.6', '10.0.0.5', '10.0.0.3']);
      expect(recent[0]).toEqual({ address: '10.0.0.4', lastSeen: 2_000, allowed: false });
      expect(await store.recent('app2')).toEqual([{ address: '10.9.9.9', lastSeen: 5, allowed: true }]);
      expect(await store.recent('none')).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it('keeps counts in fixed windows: a new window starts from nothing', async () => {
    const db = await PostgresDatabase.open({ url: await pg.createDatabase(), connectRetry: { maxRetries: 0, baseDelayMs: 0, maxDelayMs: 0, jitter: false }, log: () => undefined });
    try {
      const counters = new PostgresWindowCounters(db);
      const t0 = 1_800_000_000_000; // a window's start
      expect(await counters.count('k', 60_000, t0)).toBe(0);
      // Hits racing from several callers are all counted.
      expect((await Promise.all([1, 2, 3].map(() => counters.hit('k', 60_000, t0 + 5)))).sort()).toEqual([1, 2, 3]);
      expect(await counters.count('k', 60_000, t0 + 59_999)).toBe(3);
      expect(await counters.count('k', 60_000, t0 + 60_000)).toBe(0);
      expect(await counters.hit('k', 60_000, t0 + 60_000)).toBe(1);
      expect(await counters.count('other', 60_000, t0)).toBe(0);
    } finally {
      await db.close();
    }
  });
});
