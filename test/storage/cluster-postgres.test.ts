/**
 * Cluster mode, the database part (issue 11): with `databaseUrl`, the metadata lives in
 * PostgreSQL. Real servers on a real PostgreSQL (test/helpers/postgres.ts) registering and
 * listing through the spec API: what one registered is there after a restart, and two servers on
 * one database see each other's writes at once (no per-process copy goes stale).
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from '../../server/app.js';
import { resolveOptions } from '../../server/config.js';
import { openPostgresStores } from '../../server/storage/postgres/openPostgresStores.js';
import { IDLE_IN_TRANSACTION_MS } from '../../server/storage/postgres/postgresDatabase.js';
import { SpecClient } from '../helpers/client.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { notYet, waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, startServer, tempDataDir, type TestServer } from '../helpers/server.js';

let pg: TestPostgres;
const servers: TestServer[] = [];
beforeAll(async () => {
  pg = await startPostgres();
});
afterAll(async () => {
  for (const s of servers) await s.close().catch(() => undefined);
  pg?.stop();
});

async function boot(databaseUrl: string): Promise<TestServer> {
  // These nodes run on one machine: their media folders are one (the media store part is tested with S3).
  const s = await startServer({ databaseUrl, sharedMedia: true });
  servers.push(s);
  return s;
}

/** The same application, seen through another server. */
const via = (s: TestServer, c: SpecClient) => new SpecClient(s.baseUrl, c.appId, c.secret);

async function listIds(c: SpecClient, params: Record<string, string | number> = {}): Promise<{ total: number; ids: string[] }> {
  const r = await c.get('/Api/Video/GetList', { PageSize: 100, ...params });
  expect(r.body.AuthMsg?.ResultCode, r.text).toBe('1');
  return { total: r.body.Total, ids: r.body.VideoList.map((v: { Id: string }) => v.Id) };
}

describe('cluster mode: metadata in PostgreSQL', () => {
  it('keeps what was registered across a restart of the server', async () => {
    const url = await pg.createDatabase();
    const first = await boot(url);
    const app = await first.newApp('restart');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await app.register({ VideoTitle: `clip ${i}`, CreateUser: i % 2 ? 'odd' : 'even' }));
    const before = await listIds(app);
    expect(before.total).toBe(5);
    expect([...before.ids].sort()).toEqual([...ids].sort());
    await first.close();
    servers.splice(servers.indexOf(first), 1);

    // A new server: new process state, a new data directory, the same database.
    const second = await boot(url);
    expect(second.dataDir).not.toBe(first.dataDir);
    const again = via(second, app);
    expect(await listIds(again)).toEqual(before);
    const detail = await again.get('/Api/Video/Get', { Id: ids[3]! });
    expect(detail.body.VideoModel).toMatchObject({ Id: ids[3], VideoTitle: 'clip 3', CreateUser: 'odd' });
    const odd = await again.get('/Api/Video/GetUserVideoListByAid', { aId: app.appId, createUser: 'odd' });
    expect(odd.body.Total).toBe(2);
    const health = await fetch(`${second.baseUrl}/healthz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then((r) => r.json());
    expect(health.videosByStatus).toEqual({ 8: 5 });
  });

  it('lets two servers on one database see each other’s registrations and application changes at once', async () => {
    const url = await pg.createDatabase();
    // Started together on an empty database: one of them migrates, under the lock.
    const [a, b] = await Promise.all([boot(url), boot(url)]);
    const onA = await a.newApp('shared');
    const onB = via(b, onA);
    // Lists are read before and after each write, on both: a copy kept from the earlier read
    // would show here.
    expect((await listIds(onB)).total).toBe(0);
    const fromA = await onA.register({ VideoTitle: 'from A' });
    expect(await listIds(onB)).toEqual({ total: 1, ids: [fromA] });
    const fromB = await onB.register({ VideoTitle: 'from B' });
    const both = await listIds(onA);
    expect(both.total).toBe(2);
    expect([...both.ids].sort()).toEqual([fromA, fromB].sort());
    expect(await listIds(onB)).toEqual(both);
    expect((await onA.get('/Api/Video/Get', { Id: fromB })).body.VideoModel?.VideoTitle).toBe('from B');

    // The application disabled through A's admin API is refused by B as soon as the change
    // reaches it (B keeps a copy of the application, which the relay drops: test/storage/cluster-reads.test.ts).
    expect((await a.admin.request('PATCH', `/apps/${onA.appId}`, { disabled: true })).status).toBe(200);
    await waitUntil('B refuses the disabled application', async () => ((await onB.get('/Api/Video/GetList')).body.AuthMsg?.ResultCode !== '1' ? true : undefined), { timeoutMs: 1_000, pollMs: 10 });
    expect((await b.admin.request('PATCH', `/apps/${onA.appId}`, { disabled: false })).status).toBe(200);
    expect((await listIds(onA)).total).toBe(2);
  });

  it('waits for a database that is not there yet, saying so, and gives up after its tries', async () => {
    // Nodes start in any order: this one starts before its database exists.
    const name = `late_${process.pid}`;
    const logs: string[] = [];
    const starting = createServer({
      dataDir: tempDataDir(),
      adminToken: ADMIN_TOKEN,
      databaseUrl: pg.url(name).replace('postgres@', 'postgres:s3cret-pw@'),
      sharedMedia: true,
      databaseConnectRetry: { maxRetries: 40, baseDelayMs: 50, maxDelayMs: 100, jitter: false },
      log: (l) => logs.push(l),
    });
    // The database is made only once the server has tried it and said it waits for it, naming
    // it by its address alone (what it tells the operator is this test's subject).
    const address = `127.0.0.1:${pg.port}`;
    await waitUntil('the server waiting for the database', () => logs.some((l) => l.includes(address)) || notYet(logs.slice(-2)), { timeoutMs: 10_000 });
    // Counted from before the database is made: the server's next try can succeed, and say so,
    // before createDatabase's own answer comes back (seen once in a whole run).
    const made = logs.length;
    await pg.createDatabase(name);
    const vop = await starting;
    await vop.close(100);
    // Once there, it says so and that it keeps its metadata there: lines naming the address without
    // the error of a try (each try's line carries PostgreSQL's words for the missing database, its name).
    expect(logs.slice(made).filter((l) => l.includes(address) && !l.includes(name)).length).toBeGreaterThanOrEqual(2);
    // The address's password never reaches the log.
    expect(logs.join('\n')).not.toContain('s3cret-pw');
    // Nor the admin's /healthz, which names the database by host and port.
    const { storageSummary } = await import('../../server/storage/storageSummary.js');
    expect(storageSummary(vop.options)).toEqual({ database: { engine: 'postgresql', address: `127.0.0.1:${pg.port}` }, media: { engine: 'local' } });

    const gone = createServer({
      dataDir: tempDataDir(),
      adminToken: ADMIN_TOKEN,
      databaseUrl: `postgres://postgres@127.0.0.1:1/vop`,
      sharedMedia: true,
      databaseConnectRetry: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 10, jitter: false },
      log: () => undefined,
    });
    await expect(gone).rejects.toThrow('Cannot reach the database at 127.0.0.1:1');
  });

  it('queues again a running job whose node is gone (its turn ended), found by the sweep every two leases', async () => {
    const s = await startServer({ databaseUrl: await pg.createDatabase(), sharedMedia: true, jobLeaseMs: 2_000 });
    servers.push(s);
    const now = Date.now();
    const id = crypto.randomUUID();
    // Inserted after the node started, so only its sweep can find it: left running by a node
    // that died, under a turn the shared queue no longer has.
    await s.vop.stores.jobs.insert({
      id, type: 'orphaned', videoId: '', appId: '', payload: {}, state: 'running', priority: 0, seq: 0, attempts: 1, maxAttempts: 3,
      runAfter: 0, progress: 40, error: '', createdAt: now, startedAt: now, finishedAt: null, updatedAt: now,
    });
    expect(await s.vop.stores.jobs.update(id, { lease: '987654/gone' })).toBe(true);
    const job = await waitUntil('the sweep', async () => {
      const j = await s.vop.stores.jobs.get(id);
      return j?.state === 'queued' ? j : undefined;
    }, { timeoutMs: 10_000, pollMs: 100 });
    // The cut-off attempt is not counted (a turn the shared queue gave up on would have counted
    // it: the sweep's requeue is the one that does not), and the job is no one's.
    expect(job).toMatchObject({ attempts: 0, progress: 0, lease: '' });
  });

  it('has PostgreSQL end its sessions left idle in a transaction, so a paused node cannot hold locks for good', async () => {
    const stores = await openPostgresStores({ url: await pg.createDatabase(), connectRetry: { maxRetries: 0, baseDelayMs: 0, maxDelayMs: 0, jitter: false }, log: () => undefined });
    try {
      const { rows } = await stores.db.query<{ idle_in_transaction_session_timeout: string }>('SHOW idle_in_transaction_session_timeout');
      expect(rows[0]!.idle_in_transaction_session_timeout).toBe(`${IDLE_IN_TRANSACTION_MS / 1000}s`);
    } finally {
      await stores.close();
    }
  });

  it('checks the database address it is given', () => {
    expect(() => resolveOptions({ dataDir: tempDataDir(), databaseUrl: 'mysql://x/y' })).toThrow(/databaseUrl/);
    expect(() => resolveOptions({ dataDir: tempDataDir(), databaseConnectRetry: { maxRetries: -1, baseDelayMs: 0, maxDelayMs: 0, jitter: false } })).toThrow(/databaseConnectRetry/);
    expect(resolveOptions({ dataDir: tempDataDir() }).databaseUrl).toBeUndefined();
    // A shared database with media on each node's own disk: refused, saying what to set.
    expect(() => resolveOptions({ dataDir: tempDataDir(), databaseUrl: 'postgres://a@h/db' })).toThrow(/VOP_S3_ENDPOINT.*VOP_SHARED_MEDIA=1/s);
    expect(resolveOptions({ dataDir: tempDataDir(), databaseUrl: 'postgres://a@h/db', sharedMedia: true }).sharedMedia).toBe(true);
    expect(() => resolveOptions({ dataDir: tempDataDir(), objectStorage: { endpoint: 'ftp://x', bucket: 'b' } })).toThrow(/object storage option/);
  });
});
