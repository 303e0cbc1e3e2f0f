/**
 * The console's saved settings across the nodes of a cluster (issue 11): in cluster mode they
 * live in the shared PostgreSQL database (`console_settings`, settings/savedSettings.ts), not in
 * each node's data folder. A save through one node reaches the others' running servers at once
 * (their queues take the new transcodes at once; what waits for a restart is shown so on every
 * node), a node started afterwards starts from them, and a settings.json found by the first node
 * of an empty cluster is imported once. Real nodes on one real PostgreSQL, over real HTTP.
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapServer } from '../../server/bootstrap.js';
import { SETTINGS_FILE } from '../../server/settings/consoleSettings.js';
import { parseStartArgs } from '../../server/startArgs.js';
import type { VopServer } from '../../server/app.js';
import { AdminClient } from '../helpers/client.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { ADMIN_TOKEN, startServer, tempDataDir, type TestServer } from '../helpers/server.js';
import { passing, waitUntil } from '../helpers/wait.js';

const LADDER = [
  { label: '540p', shortSide: 540, videoBitrateKbps: 1200 },
  { label: '270p', shortSide: 270, videoBitrateKbps: 450 },
];

let postgres: TestPostgres;
let databaseUrl: string;
let a: TestServer;
let b: TestServer;
let worker: TestServer;
const others: VopServer[] = [];
/** A save reaches the other nodes by NOTIFY, within milliseconds. */
const EVENTUALLY = { timeoutMs: 5_000, pollMs: 50 };

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = await postgres.createDatabase();
  // On one machine the nodes' media folders are one; what is tested here is the database.
  [a, b, worker] = await Promise.all([
    startServer({ databaseUrl, sharedMedia: true }),
    startServer({ databaseUrl, sharedMedia: true }),
    startServer({ databaseUrl, sharedMedia: true, role: 'worker' }),
  ]);
}, 60_000);
afterAll(async () => {
  for (const s of [a, b, worker]) await s?.close();
  for (const v of others) await v.close(500);
  postgres?.stop();
});

/** Builds and starts a node as `npm start` does (bootstrap.ts: the saved settings under the flags). */
async function startWithBootstrap(url: string, dataDir = tempDataDir()) {
  const { vop, config } = await bootstrapServer(
    parseStartArgs(['--data-dir', dataDir, '--database-url', url, '--shared-media', '--port', '0', '--host', '127.0.0.1'], { VOP_ADMIN_TOKEN: ADMIN_TOKEN }),
  );
  others.push(vop);
  const { port } = await vop.listen(config.port, config.host);
  return { vop, admin: new AdminClient(`http://127.0.0.1:${port}`, ADMIN_TOKEN) };
}

describe('console settings across nodes', () => {
  it('a save through one node reaches the running servers of the others without a restart', async () => {
    const put = await a.admin.request('PUT', '/settings', { ladderRungs: LADDER, transcodeConcurrency: 3, pullAllow: ['127.0.0.0/8'] });
    expect(put.status).toBe(200);
    expect(put.body.applied).toEqual(['pullAllow', 'transcodeConcurrency']);
    expect(put.body.afterRestart).toEqual(['ladderRungs']);

    await waitUntil("A's save to reach B", passing(async () => {
      const view = (await b.admin.request('GET', '/settings')).body;
      expect(view.saved).toEqual({ ladderRungs: LADDER, transcodeConcurrency: 3, pullAllow: ['127.0.0.0/8'] });
      // B's queue runs 3 transcodes at once now, as A's does, and pulls with the new allow list.
      expect(view.running.transcodeConcurrency).toBe(3);
      expect(view.running.pullAllow).toEqual(['127.0.0.0/8']);
      // The ladder waits for a restart on every node, as the console says on the node that saved it.
      expect(view.pendingRestart).toEqual(['ladderRungs']);
    }), EVENTUALLY);
    expect(b.vop.jobs.concurrency('transcode')).toBe(3);
    // A worker serves no console, yet transcodes: its queue follows too.
    await waitUntil("A's save to reach the worker", passing(() => expect(worker.vop.jobs.concurrency('transcode')).toBe(3)), EVENTUALLY);
    expect(a.vop.jobs.concurrency('transcode')).toBe(3);
    // Saved in the database, which the console names; nothing in A's data folder.
    expect(put.body.settingsFile).toMatch(/PostgreSQL at 127\.0\.0\.1:\d+, table console_settings/);
    expect(fs.existsSync(path.join(a.dataDir, SETTINGS_FILE))).toBe(false);
  });

  it('saves through different nodes add up, and each reaches the other', async () => {
    const put = await b.admin.request('PUT', '/settings', { downloadConcurrency: 4 });
    expect(put.status).toBe(200);
    // B's save keeps what A saved before it: one document, not one per node.
    expect(put.body.saved).toEqual({ ladderRungs: LADDER, transcodeConcurrency: 3, pullAllow: ['127.0.0.0/8'], downloadConcurrency: 4 });
    await waitUntil("B's save to reach A", passing(async () => {
      expect(a.vop.jobs.concurrency('download')).toBe(4);
      expect((await a.admin.request('GET', '/settings')).body.saved).toEqual({ ladderRungs: LADDER, transcodeConcurrency: 3, pullAllow: ['127.0.0.0/8'], downloadConcurrency: 4 });
    }), EVENTUALLY);
    await waitUntil("B's save to reach the worker", passing(() => expect(worker.vop.jobs.concurrency('download')).toBe(4)), EVENTUALLY);
    // A refused value on one node saves nothing anywhere.
    expect((await a.admin.request('PUT', '/settings', { transcodeConcurrency: 0 })).status).toBe(400);
    expect((await b.admin.request('GET', '/settings')).body.saved.transcodeConcurrency).toBe(3);
  });

  it('a node started afterwards starts with the saved settings', async () => {
    const { vop, admin } = await startWithBootstrap(databaseUrl);
    expect(vop.options.processing.ladder.rungs).toEqual(LADDER);
    expect(vop.options.processing.concurrency).toBe(3);
    expect(vop.options.ingest.pull.concurrency).toBe(4);
    expect(vop.jobs.concurrency('transcode')).toBe(3);
    const view = (await admin.request('GET', '/settings')).body;
    expect(view.running.ladderRungs).toEqual(LADDER);
    expect(view.pendingRestart).toEqual([]);
  });
});

describe('the first node of an empty cluster', () => {
  it("imports its settings.json once; later nodes' files are not read", async () => {
    const url = await postgres.createDatabase();
    const first = tempDataDir();
    fs.writeFileSync(path.join(first, SETTINGS_FILE), JSON.stringify({ ladderRungs: [LADDER[1]], multipartMaxBytes: 7_000_000 }));
    const second = tempDataDir();
    fs.writeFileSync(path.join(second, SETTINGS_FILE), JSON.stringify({ multipartMaxBytes: 9_000_000 }));

    const one = await startWithBootstrap(url, first);
    expect(one.vop.options.ingest.multipartMaxBytes).toBe(7_000_000);
    const two = await startWithBootstrap(url, second);
    expect(two.vop.options.ingest.multipartMaxBytes).toBe(7_000_000);
    expect(two.vop.options.processing.ladder.rungs).toEqual([LADDER[1]]);
    expect((await two.admin.request('GET', '/settings')).body.saved).toEqual({ ladderRungs: [LADDER[1]], multipartMaxBytes: 7_000_000 });

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ version: string }>('SELECT version FROM console_settings');
      expect(rows.map((r) => Number(r.version))).toEqual([1]);
    } finally {
      await client.end();
    }
    // The files are left as they were (a node may go back to the embedded mode).
    expect(JSON.parse(fs.readFileSync(path.join(second, SETTINGS_FILE), 'utf8'))).toEqual({ multipartMaxBytes: 9_000_000 });
  });
});
