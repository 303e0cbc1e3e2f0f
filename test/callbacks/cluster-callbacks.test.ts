/**
 * The status callback across the nodes of a cluster (issue 11 item 5): a status change and its
 * delivery row are one transaction (an outbox, storage/outbox.ts), so exactly one delivery is
 * made per change whatever node stops, and each attempt is sent by one job, carrying the
 * delivery's `webhook-id` on every retry. On one real PostgreSQL (test/helpers/postgres.ts):
 *
 * - two nodes starting at once, on a database holding pending deliveries that no job sends (their
 *   node stopped before queueing them), send each once;
 * - a node killed (SIGKILL of its process group) while its status change waits to write: the
 *   change is stored with its delivery or not at all, never without it;
 * - a node killed after sending a callback and before recording it: another node sends it again,
 *   with the same `webhook-id`, and that is the delivery's only recorded attempt.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../../server/app.js';
import type { DeliveryRecord } from '../../server/storage/callbackRecords.js';
import { openPostgresStores } from '../../server/storage/postgres/openPostgresStores.js';
import { SpecClient } from '../helpers/client.js';
import { videoRecord } from '../helpers/fixtures.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { notYet, waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, signalGroup, startNodeGroup, tempDataDir, type GroupNode } from '../helpers/server.js';

let pgServer: TestPostgres;
beforeAll(async () => {
  pgServer = await startPostgres();
}, 60_000);
afterAll(() => pgServer?.stop());

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!().catch(() => undefined);
});

/** A callback receiver: every request, by webhook-id; `hold` keeps answers back until released. */
async function startReceiver() {
  const received: Array<{ id: string; videoId: string; status: string }> = [];
  let holding: Array<() => void> | undefined;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const form = new URLSearchParams(raw);
      received.push({ id: String(req.headers['webhook-id']), videoId: form.get('VideoId') ?? '', status: form.get('VideoStatus') ?? '' });
      const answer = () => res.writeHead(204).end();
      if (holding) holding.push(answer);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))));
  return {
    received,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/vop/callback`,
    hold: () => (holding = []),
    release: () => {
      const waiting = holding ?? [];
      holding = undefined;
      for (const answer of waiting) answer();
    },
    /** How many requests each webhook-id got. */
    perId: () => received.reduce((m, r) => m.set(r.id, (m.get(r.id) ?? 0) + 1), new Map<string, number>()),
  };
}

const connectRetry = { maxRetries: 0, baseDelayMs: 0, maxDelayMs: 0, jitter: false };

describe('status callbacks across nodes', () => {
  it('two nodes starting at once send each pending delivery that no job holds once', async () => {
    const databaseUrl = await pgServer.createDatabase();
    const rx = await startReceiver();
    // The state a node leaves when it stops between writing deliveries and queueing their
    // attempts: pending rows, no job. Written with the stores alone, no node running.
    const stores = await openPostgresStores({ url: databaseUrl, connectRetry, log: () => undefined });
    const appId = crypto.randomBytes(12).toString('hex');
    await stores.apps.insert({ appId, name: 'a', secret: 's'.repeat(40), callbackUrl: rx.url, disabled: false, apiNetworks: [], createdAt: 1, updatedAt: 1 });
    const now = Date.now();
    const ds: DeliveryRecord[] = [];
    for (let i = 0; i < 30; i++) {
      const v = videoRecord(appId, { status: 1, createdAt: now });
      await stores.videos.insert(v);
      ds.push({
        id: crypto.randomUUID(), seq: 0, appId, kind: 'status', videoId: v.id, videoStatus: 1, statusAt: now, state: 'pending', series: 1,
        seriesAttempts: 0, firstAttemptAt: null, nextAttemptAt: now, deliveredAt: null, lastError: '', attemptJob: '', createdAt: now - 60_000, updatedAt: now - 60_000,
      });
    }
    expect((await stores.callbacks.insertMany(ds)).every(Boolean)).toBe(true);
    await stores.close();

    // Both nodes made (each reconciles what it finds at start) before either listens and sends.
    const options = { adminToken: ADMIN_TOKEN, databaseUrl, sharedMedia: true, log: () => undefined };
    const nodes = await Promise.all([createServer({ ...options, dataDir: tempDataDir() }), createServer({ ...options, dataDir: tempDataDir() })]);
    for (const n of nodes) closers.push(() => n.close(500));
    await Promise.all(nodes.map((n) => n.listen(0, '127.0.0.1')));
    await waitUntil('every delivery delivered', async () => {
      const rows = await nodes[0]!.stores.callbacks.listByApp(appId, { limit: 100 });
      return rows.length === 30 && rows.every((d) => d.state === 'delivered') ? true : undefined;
    }, { timeoutMs: 30_000, pollMs: 100 });
    await Promise.all(nodes.map((n) => n.jobs.idle(['callback'])));
    // No callback job queued or running on any node: a duplicate delivery, if any node sent one, has arrived.
    await waitUntil('no callback job queued or running', async () => {
      const live = await nodes[0]!.stores.jobs.list({ types: ['callback'], states: ['queued', 'running'] });
      return live.length === 0 || notYet(live.map((j) => [j.id, j.state]));
    }, { timeoutMs: 30_000, pollMs: 100 });
    expect([...rx.perId().keys()].sort()).toEqual(ds.map((d) => d.id).sort());
    expect([...rx.perId().values()].filter((n) => n !== 1)).toEqual([]);
    // And each delivery shows one attempt.
    for (const d of await nodes[1]!.stores.callbacks.listByApp(appId, { limit: 100 })) expect(d.seriesAttempts).toBe(1);
  }, 60_000);
});

type Node = GroupNode;

/** `server/main.ts` as a supervisor starts it: a process group of its own, its own data folder. */
async function startNode(name: string, role: 'all' | 'api', env: NodeJS.ProcessEnv): Promise<Node> {
  const node = await startNodeGroup(name, ['--port', '0', '--host', '127.0.0.1', '--data-dir', tempDataDir(`vop-cb-${name}-`), '--role', role], env);
  closers.push(async () => {
    killGroup(node);
    await node.exited;
  });
  return node;
}

function killGroup(node: Node): void {
  signalGroup(node.pid, 'SIGKILL');
}

describe('status callbacks across node processes killed with -9', () => {
  let databaseUrl: string;
  let db: pg.Client;
  let env: NodeJS.ProcessEnv;
  // A database per test: what one test's killed nodes left (their turns, their jobs) stays there.
  beforeEach(async () => {
    databaseUrl = await pgServer.createDatabase();
    const client = (db = new pg.Client({ connectionString: databaseUrl }));
    await client.connect();
    closers.unshift(() => client.end());
    env = { VOP_DATABASE_URL: databaseUrl, VOP_SHARED_MEDIA: '1', VOP_ADMIN_TOKEN: ADMIN_TOKEN, VOP_JOB_LEASE_MS: '3000' };
  });

  /**
   * Leaves what a node that stopped before queueing would: a finished video of `appId` whose
   * delivery is pending, held by no job, written a minute ago. Resolves once `rx` got it: a sweep
   * of a running node found it and sent it, so that node's sweeps run and succeed.
   */
  async function sweptOnce(appId: string, rx: Awaited<ReturnType<typeof startReceiver>>): Promise<string> {
    const stores = await openPostgresStores({ url: databaseUrl, connectRetry, log: () => undefined });
    const now = Date.now();
    const v = videoRecord(appId, { status: 1, createdAt: now - 60_000 });
    const id = crypto.randomUUID();
    try {
      await stores.videos.insert(v);
      expect(await stores.callbacks.insertMany([{
        id, seq: 0, appId, kind: 'status', videoId: v.id, videoStatus: 1, statusAt: now - 60_000, state: 'pending', series: 1,
        seriesAttempts: 0, firstAttemptAt: null, nextAttemptAt: now - 60_000, deliveredAt: null, lastError: '', attemptJob: '', createdAt: now - 60_000, updatedAt: now - 60_000,
      }])).toEqual([true]);
    } finally {
      await stores.close();
    }
    await waitUntil('a sweep to send the delivery left pending', () => rx.received.some((r) => r.id === id) || undefined, { timeoutMs: 30_000, pollMs: 100 });
    return v.id;
  }

  /** End-state videos of `appId` and how many status deliveries each has. */
  async function deliveriesPerEndState(appId: string): Promise<Array<{ id: string; status: number; n: number }>> {
    const { rows } = await db.query<{ id: string; status: number; n: string }>(
      `SELECT v.id, v.status, (SELECT COUNT(*) FROM callback_deliveries d WHERE d.kind = 'status' AND d.video_id = v.id) AS n
       FROM videos v WHERE v.app_id = $1 AND v.status IN (1, 4, 7) ORDER BY v.id`,
      [appId],
    );
    return rows.map((r) => ({ id: r.id, status: r.status, n: Number(r.n) }));
  }

  it('never stores a status change without its delivery, even when its node is killed in between', async () => {
    const rx = await startReceiver();
    const a = await startNode('a', 'all', env);
    // An API node runs no pull: only node A changes the video's status; B stays up throughout.
    const b = await startNode('b', 'api', env);
    const admin = (await (await fetch(`${b.baseUrl}/admin/api/apps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ name: 'crash', callbackUrl: rx.url }),
    })).json()) as { appId: string; appSecret: string };
    const app = new SpecClient(b.baseUrl, admin.appId, admin.appSecret);

    // Deliveries cannot be written while this transaction holds the table: node A's change to
    // status 4 (a pull from a loopback address, refused) waits on it, and A is killed then.
    const locker = new pg.Client({ connectionString: databaseUrl });
    await locker.connect();
    closers.push(() => locker.end());
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE callback_deliveries IN EXCLUSIVE MODE');
    const videoId = await app.register({ SourceFileGetType: 2, SourceFilePath: 'http://127.0.0.1:9/clip.mp4' });
    await waitUntil('node A waiting to write a delivery', async () => {
      const { rows } = await db.query(
        `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%callback_deliveries%' AND pid <> pg_backend_pid()`,
      );
      return rows.length > 0 || undefined;
    }, { timeoutMs: 30_000, pollMs: 50 });
    killGroup(a);
    await a.exited;
    await locker.query('COMMIT');

    // Whatever status the video is in now, an end state has its delivery: none is missing while
    // node B runs on, across two of its sweeps (each seen sending what a stopped node left), nor after.
    const swept: string[] = [];
    expect((await deliveriesPerEndState(admin.appId)).filter((r) => r.n !== 1)).toEqual([]);
    for (let i = 0; i < 2; i++) {
      swept.push(await sweptOnce(admin.appId, rx));
      expect((await deliveriesPerEndState(admin.appId)).filter((r) => r.n !== 1)).toEqual([]);
    }
    const ended = (await deliveriesPerEndState(admin.appId)).filter((r) => !swept.includes(r.id));
    const fromTest = () => rx.received.filter((r) => !swept.includes(r.videoId));
    if (ended.length > 0) {
      // Stored before the kill (with its delivery, then): B sends it, once.
      await waitUntil('the callback', () => fromTest().length > 0 || undefined, { timeoutMs: 30_000, pollMs: 100 });
      expect(fromTest().map((r) => r.videoId)).toEqual([videoId]);
    }
    // Nothing left unsent: B's sweeps queue what is pending (each delivery delivered once), and no
    // callback job is left queued or running.
    await waitUntil('every delivery delivered, no callback job live', async () => {
      const { rows } = await db.query<{ state: string; n: string }>(`SELECT state, COUNT(*) AS n FROM callback_deliveries GROUP BY state ORDER BY state`);
      const { rows: live } = await db.query(`SELECT id FROM jobs WHERE type = 'callback' AND state IN ('queued', 'running')`);
      return (rows.every((r) => r.state === 'delivered') && live.length === 0) || notYet({ rows, live: live.length });
    }, { timeoutMs: 30_000, pollMs: 100 });
    expect([...rx.perId().values()].filter((n) => n !== 1)).toEqual([]);
  }, 120_000);

  it('sends again, with the same webhook-id, what a node killed after sending had not recorded', async () => {
    const rx = await startReceiver();
    const a = await startNode('c', 'all', env);
    const res = await fetch(`${a.baseUrl}/admin/api/apps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ name: 'resend', callbackUrl: rx.url }),
    });
    const created = (await res.json()) as { appId: string; appSecret: string };
    const app = new SpecClient(a.baseUrl, created.appId, created.appSecret);
    // The receiver takes the callback and does not answer: node A is killed then, the attempt
    // sent and not recorded.
    rx.hold();
    const videoId = await app.register({ SourceFileGetType: 2, SourceFilePath: 'http://127.0.0.1:9/clip.mp4' });
    await waitUntil('the first callback', () => rx.received.length > 0 || undefined, { timeoutMs: 30_000, pollMs: 50 }).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${a.output().slice(-3000)}\n${JSON.stringify((await db.query('SELECT id, type, state, video_id, lease, error, run_after FROM jobs ORDER BY seq')).rows)}\n${JSON.stringify((await db.query('SELECT id, video_id, state, attempt_job, last_error FROM callback_deliveries')).rows)}\n${JSON.stringify((await db.query('SELECT id, status FROM videos')).rows)}`);
    });
    killGroup(a);
    await a.exited;
    rx.release();
    const first = rx.received[0]!;
    expect(first).toMatchObject({ videoId, status: '4' });

    // Another node takes the attempt's job over once A's lease runs out, and sends it again.
    await startNode('d', 'all', env);
    await waitUntil('the callback sent again', () => rx.received.length > 1 || undefined, { timeoutMs: 60_000, pollMs: 100 });
    const { rows } = await db.query<{ id: string; state: string; series_attempts: number }>(
      `SELECT id, state, series_attempts FROM callback_deliveries WHERE video_id = $1`,
      [videoId],
    );
    await waitUntil('the delivery recorded', async () => {
      const r = await db.query<{ state: string }>(`SELECT state FROM callback_deliveries WHERE video_id = $1`, [videoId]);
      return r.rows[0]?.state === 'delivered' || undefined;
    }, { timeoutMs: 30_000, pollMs: 100 });
    expect(rows).toHaveLength(1);
    expect(rx.received.map((r) => r.id)).toEqual([rows[0]!.id, rows[0]!.id]);
    const attempts = await db.query(`SELECT series, attempt, ok FROM callback_attempts WHERE delivery_id = $1`, [rows[0]!.id]);
    expect(attempts.rows).toEqual([{ series: 1, attempt: 1, ok: true }]);
    // Nothing left to send: no other delivery, and no callback job queued or running.
    expect((await db.query(`SELECT COUNT(*)::int AS n FROM callback_deliveries`)).rows).toEqual([{ n: 1 }]);
    await waitUntil('no callback job live', async () => {
      const { rows: live } = await db.query(`SELECT id, state FROM jobs WHERE type = 'callback' AND state IN ('queued', 'running')`);
      return live.length === 0 || notYet(live);
    }, { timeoutMs: 30_000, pollMs: 100 });
    // And B's sweeps, after the take-over, send what a stopped node leaves pending.
    await sweptOnce(created.appId, rx);
  }, 120_000);
});
