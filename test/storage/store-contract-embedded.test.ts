/**
 * The storage contracts (test/contracts/) on the embedded mode's stores, in the quick tier: sql.js
 * on real files, a data directory per test under the run's temporary folder, and the stores the
 * embedded mode keeps in this process's memory (the upload reservations' ledger, the console's
 * sessions of a store built without a database). test/storage/store-contract-postgres.test.ts runs the
 * same contracts on PostgreSQL.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ConsoleSessions, SESSION_COOKIE, sessionIdHash } from '../../server/console/consoleSessions.js';
import { MemoryUploadReservations } from '../../server/storage/memory/memoryUploadReservations.js';
import { UploadLedger } from '../../server/storage/memory/uploadLedger.js';
import { MemoryConsoleSessionStore } from '../../server/storage/memoryConsoleSessions.js';
import { DurableDatabase } from '../../server/storage/sqljs/durableDatabase.js';
import { SqlJsConsoleSessionStore } from '../../server/storage/sqljs/sqljsConsoleSessions.js';
import { openSqlJsStores } from '../../server/storage/sqljs/openSqlJsStores.js';
import { consoleSessionStoreContract, storesContracts, uploadReservationStoreContract } from '../contracts/index.js';
import { tempDataDir } from '../helpers/server.js';

/** sql.js: a data directory per test, opened again from its files by `reopen`. */
storesContracts('sql.js', async () => {
  const dir = tempDataDir('vop-contract-');
  let current = await openSqlJsStores({ dir });
  return {
    stores: current,
    async reopen() {
      await current.close();
      current = await openSqlJsStores({ dir });
      return current;
    },
  };
});

consoleSessionStoreContract('memory', async () => {
  const s = new MemoryConsoleSessionStore();
  return [s, s];
});

/** The embedded database's sessions: one process, so both handles are the one store. */
const databases: DurableDatabase[] = [];
afterEach(async () => {
  // A quick file leaves nothing open (the database's idle timer, its journal).
  while (databases.length) await databases.pop()!.close();
});
consoleSessionStoreContract('sql.js (embedded)', async () => {
  const db = await DurableDatabase.open({ dir: tempDataDir('vop-sessions-') });
  databases.push(db);
  const s = new SqlJsConsoleSessionStore(db);
  return [s, s];
});

const T0 = 1_800_000_000_000;

uploadReservationStoreContract('memory (the embedded ledger)', async () => {
  const s = new MemoryUploadReservations(new UploadLedger(() => T0));
  return [s, s];
});

/** A request carrying `cookie`. */
const withCookie = (cookie: string) => ({ headers: { cookie } }) as IncomingMessage;

describe('ConsoleSessions over a store', () => {
  it('gives the store the SHA-256 of the id, never the id, and finds the session by its cookie', async () => {
    const store = new MemoryConsoleSessionStore();
    let now = T0;
    const sessions = new ConsoleSessions({ ttlMs: 1000 }, { store, now: () => now });
    const { id, expiresAt } = await sessions.create();
    expect(sessionIdHash(id)).toBe(createHash('sha256').update(id).digest('hex'));
    expect(await store.expiryOf(sessionIdHash(id), now)).toBe(T0 + 1000);
    expect(await store.expiryOf(id, now)).toBeUndefined();
    expect(store.size).toBe(1);
    expect(expiresAt).toBe(T0 + 1000);
    const req = withCookie(`other=1; ${SESSION_COOKIE}=${id}`);
    expect(await sessions.isLoggedIn(req)).toBe(true);
    expect(await sessions.isLoggedIn(withCookie(`${SESSION_COOKIE}=${sessionIdHash(id)}`))).toBe(false);
    now = T0 + 1000;
    expect(await sessions.expiryOf(req)).toBeUndefined();
  });

  it('caps the sessions of the embedded mode too', async () => {
    const store = new MemoryConsoleSessionStore();
    let now = T0;
    const sessions = new ConsoleSessions({ maxSessions: 2 }, { store, now: () => now++ });
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push((await sessions.create()).id);
    expect(store.size).toBe(2);
    expect(await sessions.isLoggedIn(withCookie(`${SESSION_COOKIE}=${ids[0]}`))).toBe(false);
    expect(await sessions.isLoggedIn(withCookie(`${SESSION_COOKIE}=${ids[3]}`))).toBe(true);
  });
});
