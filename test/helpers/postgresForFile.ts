// Apart from postgres.ts, which the benches import too: this one needs vitest's hooks.
import { afterAll, beforeAll } from 'vitest';
import { PostgresDatabase } from '../../server/storage/postgres/postgresDatabase.js';
import { startPostgres, type TestPostgres } from './postgres.js';

/**
 * PostgreSQL for the test file that calls this at its top (the run's server, see startPostgres;
 * the file's databases are dropped after its tests): `createDatabase`, the address of a new empty
 * database, and `twoHandles`, two pools on a new empty database, as two nodes have, closed after
 * the file's tests.
 */
export function postgresForFile(): { createDatabase(): Promise<string>; twoHandles(): Promise<[PostgresDatabase, PostgresDatabase]> } {
  let postgres: TestPostgres | undefined;
  const databases: PostgresDatabase[] = [];
  beforeAll(async () => {
    postgres = await startPostgres();
  }, 60_000);
  // Dropping takes a while per database, and a file may make one per test
  // (store-contract-postgres: some seventy): more than the default minute on a loaded machine.
  afterAll(async () => {
    for (const db of databases) await db.close().catch(() => undefined);
    await postgres?.stop();
  }, 180_000);
  const open = async (url: string) => {
    const db = await PostgresDatabase.open({ url, connectRetry: { maxRetries: 0, baseDelayMs: 0, maxDelayMs: 0, jitter: false }, log: () => undefined });
    databases.push(db);
    return db;
  };
  return {
    createDatabase: () => postgres!.createDatabase(),
    async twoHandles() {
      const url = await postgres!.createDatabase();
      return Promise.all([open(url), open(url)]);
    },
  };
}
