// Apart from postgres.ts, which the benches import too: this one needs vitest's hooks.
import { afterAll, beforeAll } from 'vitest';
import { PostgresDatabase } from '../../server/storage/postgres/postgresDatabase.js';
import { startPostgres, type TestPostgres } from './postgres.js';

/**
 * PostgreSQL for the test file that calls this at its top (the run's server, see startPostgres;
 * the file's databases are dropped after its tests), and `twoHandles`: two pools on a new empty
 * database, as two nodes have, closed after the file's tests.
 */
export function postgresForFile(): { twoHandles(): Promise<[PostgresDatabase, PostgresDatabase]> } {
  let postgres: TestPostgres | undefined;
  const databases: PostgresDatabase[] = [];
  beforeAll(async () => {
    postgres = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    for (const db of databases) await db.close().catch(() => undefined);
    await postgres?.stop();
  });
  const open = async (url: string) => {
    const db = await PostgresDatabase.open({ url, connectRetry: { maxRetries: 0, baseDelayMs: 0, maxDelayMs: 0, jitter: false }, log: () => undefined });
    databases.push(db);
    return db;
  };
  return {
    async twoHandles() {
      const url = await postgres!.createDatabase();
      return Promise.all([open(url), open(url)]);
    },
  };
}
