/**
 * The storage contracts (test/contracts/) on PostgreSQL, the cluster mode's metadata: the run's one
 * server (test/helpers/postgres.ts), a database per test, and two pools on one database where a
 * contract takes two handles (two nodes). test/storage/store-contract-embedded.test.ts runs the same
 * contracts on the embedded mode's stores in the quick tier. Below them, what only PostgreSQL has.
 */
import type { IncomingMessage } from 'node:http';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ConsoleSessions, SESSION_COOKIE } from '../../server/console/consoleSessions.js';
import { NO_RETRY } from '../../server/core/retry.js';
import { PostgresConsoleSessionStore } from '../../server/storage/postgres/postgresConsoleSessions.js';
import { PG_MIGRATIONS } from '../../server/storage/postgres/migrations.js';
import { openPostgresStores } from '../../server/storage/postgres/openPostgresStores.js';
import { PostgresUploadReservations } from '../../server/storage/postgres/postgresUploadReservations.js';
import { consoleSessionStoreContract, storesContracts, uploadReservationStoreContract } from '../contracts/index.js';
import { postgresForFile } from '../helpers/postgresForFile.js';

const postgres = postgresForFile();

/** A database per test; `reopen` opens new pools on it, as a new process does. */
storesContracts('PostgreSQL', async () => {
  const url = await postgres.createDatabase();
  let current = await openPostgresStores({ url, connectRetry: NO_RETRY, log: () => undefined });
  return {
    stores: current,
    async reopen() {
      await current.close().catch(() => undefined);
      current = await openPostgresStores({ url, connectRetry: NO_RETRY, log: () => undefined });
      return current;
    },
  };
});

consoleSessionStoreContract('PostgreSQL', async () => {
  const [one, two] = await postgres.twoHandles();
  return [new PostgresConsoleSessionStore(one), new PostgresConsoleSessionStore(two)];
});

uploadReservationStoreContract('PostgreSQL', async () => {
  const [one, two] = await postgres.twoHandles();
  return [new PostgresUploadReservations(one), new PostgresUploadReservations(two)];
});

// Engine-specific: what only PostgreSQL does, or what only means something with two pools.

describe('PostgreSQL: counts kept beside the videos', () => {
  // Only PostgreSQL keeps its videos' counts in tables of their own (migration 15, kept by a
  // trigger), made from the rows an older database held: the embedded database counts with
  // COUNT(*) and has nothing of the kind to migrate.
  it('counts the videos a database held before its counts were kept, and a deleted video leaves its counts', async () => {
    const url = await postgres.createDatabase();
    // The schema as it was before the counts (version 14), with videos in it.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      for (const step of PG_MIGRATIONS.slice(0, 14)) for (const sql of step) await client.query(sql);
      await client.query('CREATE TABLE vop_schema (version INTEGER NOT NULL)');
      await client.query('INSERT INTO vop_schema (version) VALUES (14)');
      await client.query("INSERT INTO apps (app_id, name, secret, created_at, updated_at) VALUES ('a1', 'a', 's', 1, 1), ('a2', 'b', 's', 1, 1)");
      await client.query(
        `INSERT INTO videos (id, app_id, title, create_user, status, source_type, created_at, updated_at)
         SELECT 'v' || i, CASE WHEN i % 4 = 0 THEN 'a2' ELSE 'a1' END, 't', 'u' || (i % 3), i % 5, 1, i, i FROM generate_series(1, 50) AS i`,
      );
    } finally {
      await client.end();
    }
    const stores = await openPostgresStores({ url, connectRetry: NO_RETRY, log: () => undefined });
    try {
      const truth = async (where: string) => Number((await stores.db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM videos WHERE ${where}`)).rows[0]!.n);
      const check = async () => {
        expect((await stores.videos.listByApp('a1', { offset: 0, limit: 1 })).total).toBe(await truth("app_id = 'a1'"));
        expect((await stores.videos.listByAppAndUser('a1', 'u1', { offset: 0, limit: 1 })).total).toBe(await truth("app_id = 'a1' AND create_user = 'u1'"));
        const byStatus: Record<number, number> = {};
        for (const r of (await stores.db.query<{ status: number; n: number }>('SELECT status, COUNT(*) AS n FROM videos GROUP BY status')).rows) byStatus[r.status] = r.n;
        expect(await stores.videos.countByStatus()).toEqual(byStatus);
      };
      await check();
      expect((await stores.videos.listByApp('a1', { offset: 0, limit: 1 })).total).toBe(38);
      // No call of vop deletes a video's row; whatever does (by hand, a later purge) is counted too.
      await stores.db.query("DELETE FROM videos WHERE id IN ('v1', 'v2', 'v4')");
      await stores.db.query("UPDATE videos SET app_id = 'a2', create_user = 'u9' WHERE id = 'v5'");
      await check();
      expect((await stores.videos.listByApp('a1', { offset: 0, limit: 1 })).total).toBe(35);
    } finally {
      await stores.close();
    }
  });
});

/** A request carrying `cookie`. */
const withCookie = (cookie: string) => ({ headers: { cookie } }) as IncomingMessage;

describe('PostgreSQL: ConsoleSessions on two nodes', () => {
  // Two ConsoleSessions over two pools on one database: the embedded mode has one process, whose
  // one store the contract's "for every handle" case already covers.
  it('logs a session out through another ConsoleSessions on the same store (another node)', async () => {
    const [one, two] = await postgres.twoHandles();
    const nodeA = new ConsoleSessions({}, { store: new PostgresConsoleSessionStore(one) });
    const nodeB = new ConsoleSessions({}, { store: new PostgresConsoleSessionStore(two) });
    const { id } = await nodeA.create();
    const req = withCookie(`${SESSION_COOKIE}=${id}`);
    expect(await nodeB.isLoggedIn(req)).toBe(true);
    await nodeB.end(req);
    expect(await nodeA.isLoggedIn(req)).toBe(false);
  });
});
