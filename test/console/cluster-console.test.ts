/**
 * The console's sessions and the admin token's failure limit across the nodes of a cluster
 * (issue 11, item 5; issue 12, item 4): both live in the shared PostgreSQL database
 * (storage/postgres/postgresConsoleSessions.ts, `rate_windows`), so a browser logged in through
 * one node stays logged in when a proxy sends it to another, a logout through any node ends the
 * session on all, and N nodes do not give a guesser N times the limit. Two real servers on one
 * real PostgreSQL, over real HTTP.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CookieClient } from '../helpers/console.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { clearOfMinuteTurn } from '../helpers/wait.js';

let postgres: TestPostgres;
let a: TestServer;
let b: TestServer;
let databaseUrl: string;
beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = await postgres.createDatabase();
  // On one machine the nodes' media folders are one; what is tested here is the database.
  a = await startServer({ databaseUrl, sharedMedia: true });
  b = await startServer({ databaseUrl, sharedMedia: true });
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  postgres?.stop();
});

/** The same browser (its cookie) sent to another node, as a proxy without sticky sessions does. */
function via(s: TestServer, c: CookieClient): CookieClient {
  const other = new CookieClient(s.baseUrl);
  other.cookie = c.cookie;
  other.secret = c.secret;
  return other;
}

describe('console sessions across nodes', () => {
  it('a login through one node is a login on every node', async () => {
    const onA = new CookieClient(a.baseUrl);
    expect((await onA.login(ADMIN_TOKEN)).status).toBe(200);
    const onB = via(b, onA);
    expect((await onB.json('GET', '/session')).body.loggedIn).toBe(true);
    expect((await onB.json('GET', '/apps')).status).toBe(200);
    // A change through the other node too: the session's secret checks on every node.
    expect((await onB.json('POST', '/apps', { name: 'made through b' })).status).toBe(201);
    expect((await onA.json('GET', '/apps')).body.apps.some((x: { name: string }) => x.name === 'made through b')).toBe(true);
  });

  it('a logout through one node ends the session on every node', async () => {
    const onA = new CookieClient(a.baseUrl);
    await onA.login(ADMIN_TOKEN);
    expect((await onA.json('GET', '/apps')).status).toBe(200);
    expect((await via(b, onA).raw('DELETE', '/admin/api/session')).status).toBe(204);
    expect((await onA.json('GET', '/session')).body).toEqual({ loggedIn: false, expiresAt: null });
    expect((await onA.json('GET', '/apps')).status).toBe(401);
    expect((await via(b, onA).json('GET', '/apps')).status).toBe(401);
  });

  it('keeps the SHA-256 of a session id in the database, never the id', async () => {
    const c = new CookieClient(a.baseUrl);
    await c.login(ADMIN_TOKEN);
    const id = c.cookie.split('=')[1]!;
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ id_hash: string }>('SELECT id_hash FROM console_sessions');
      expect(rows.map((r) => r.id_hash)).toContain(createHash('sha256').update(id).digest('hex'));
      expect(rows.map((r) => r.id_hash)).not.toContain(id);
    } finally {
      await client.end();
    }
  });
});

describe("the admin token's failure limit across nodes", () => {
  it('counts wrong tokens on every node together, and never locks out the right token', async () => {
    await clearOfMinuteTurn(5_000);
    const wrongLogin = (s: TestServer) => new CookieClient(s.baseUrl).login('wrong-token-wrong-token');
    const wrongBearer = (s: TestServer) => fetch(`${s.baseUrl}/admin/api/apps`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } });
    // Ten a minute per address (the default), split over both nodes and both ways: each node
    // alone sees five.
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const node = i % 2 === 0 ? a : b;
      statuses.push((await (i < 5 ? wrongLogin(node) : wrongBearer(node))).status);
    }
    expect(statuses).toEqual(Array(10).fill(401));
    // The eleventh, on either node and either way, is refused as too many.
    for (const node of [a, b]) {
      expect((await wrongBearer(node)).status).toBe(429);
      const limited = await wrongLogin(node);
      expect(limited.status).toBe(429);
      expect((await limited.json()).error.message).toMatch(/wait a minute/);
    }
    // The right token from the same address still gets in, on both nodes, both ways.
    for (const node of [a, b]) {
      const c = new CookieClient(node.baseUrl);
      expect((await c.login(ADMIN_TOKEN)).status).toBe(200);
      expect((await c.json('GET', '/apps')).status).toBe(200);
      expect((await fetch(`${node.baseUrl}/admin/api/apps`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(200);
      const health = await (await fetch(`${node.baseUrl}/healthz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json();
      expect(health.version).toBeDefined();
    }
  });
});
