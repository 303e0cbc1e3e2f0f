/**
 * One contract for the console's session stores (storage/types.ts ConsoleSessionStore), run
 * against each: this process's memory, the embedded sql.js database, and PostgreSQL (cluster mode, where
 * two nodes are two pools on one database). A store passes by what it answers, never by how it
 * keeps sessions. Plus ConsoleSessions over a store: the cookie's id is hashed before it is kept.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ConsoleSessions, SESSION_COOKIE, sessionIdHash } from '../server/console/consoleSessions.js';
import { MemoryConsoleSessionStore } from '../server/storage/memoryConsoleSessions.js';
import { DurableDatabase } from '../server/storage/sqljs/durableDatabase.js';
import { SqlJsConsoleSessionStore } from '../server/storage/sqljs/sqljsConsoleSessions.js';
import { PostgresConsoleSessionStore } from '../server/storage/postgres/postgresConsoleSessions.js';
import type { ConsoleSessionStore } from '../server/storage/types.js';
import { postgresForFile } from './helpers/postgresForFile.js';
import { tempDataDir } from './helpers/server.js';

const postgres = postgresForFile();

/** Two handles on one empty storage, as two nodes (or, in memory, the one process twice). */
type StorePair = () => Promise<[ConsoleSessionStore, ConsoleSessionStore]>;

const T0 = 1_800_000_000_000;
const hash = (n: number) => createHash('sha256').update(`session ${n}`).digest('hex');

function sessionStoreContract(engine: string, pair: StorePair): void {
  describe(`console session store contract: ${engine}`, () => {
    it('answers a live session with its expiry, and nothing for an unknown one', async () => {
      const [s] = await pair();
      await s.add(hash(1), T0 + 1000, 10, T0);
      expect(await s.expiryOf(hash(1), T0)).toBe(T0 + 1000);
      expect(await s.expiryOf(hash(2), T0)).toBeUndefined();
    });

    it('answers nothing for a session at or past its expiry', async () => {
      const [s] = await pair();
      await s.add(hash(1), T0 + 1000, 10, T0);
      expect(await s.expiryOf(hash(1), T0 + 999)).toBe(T0 + 1000);
      expect(await s.expiryOf(hash(1), T0 + 1000)).toBeUndefined();
      expect(await s.expiryOf(hash(1), T0 + 5000)).toBeUndefined();
    });

    it('ends a session for every handle, and removing an unknown one is no error', async () => {
      const [s, other] = await pair();
      await s.add(hash(1), T0 + 1000, 10, T0);
      await s.add(hash(2), T0 + 1000, 10, T0);
      expect(await other.expiryOf(hash(1), T0)).toBe(T0 + 1000);
      await other.remove(hash(1));
      expect(await s.expiryOf(hash(1), T0)).toBeUndefined();
      expect(await s.expiryOf(hash(2), T0)).toBe(T0 + 1000);
      await s.remove(hash(99));
    });

    it('keeps at most maxSessions live sessions: expired ones go first, then those closest to expiry', async () => {
      const [s] = await pair();
      await s.add(hash(1), T0 + 100, 3, T0); // expired by the fourth login
      await s.add(hash(2), T0 + 2000, 3, T0);
      await s.add(hash(3), T0 + 3000, 3, T0);
      await s.add(hash(4), T0 + 4000, 3, T0 + 500);
      // The expired one made room: the three live ones stay.
      for (const n of [2, 3, 4]) expect(await s.expiryOf(hash(n), T0 + 500)).toBeDefined();
      await s.add(hash(5), T0 + 5000, 3, T0 + 600);
      // Four live ones: the one closest to expiry ends; the new one is kept.
      expect(await s.expiryOf(hash(2), T0 + 600)).toBeUndefined();
      for (const n of [3, 4, 5]) expect(await s.expiryOf(hash(n), T0 + 600)).toBeDefined();
    });

    it('holds the cap when logins come through both handles at once', async () => {
      const [s, other] = await pair();
      await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? s : other).add(hash(i), T0 + 10_000 + i, 5, T0)));
      let live = 0;
      for (let i = 0; i < 20; i++) if ((await s.expiryOf(hash(i), T0)) !== undefined) live++;
      expect(live).toBeLessThanOrEqual(5);
      // The newest (latest to expire) is never the one dropped.
      expect(await other.expiryOf(hash(19), T0)).toBe(T0 + 10_019);
    });
  });
}

sessionStoreContract('memory', async () => {
  const s = new MemoryConsoleSessionStore();
  return [s, s];
});

sessionStoreContract('sql.js (embedded)', async () => {
  const db = await DurableDatabase.open({ dir: tempDataDir('vop-sessions-') });
  const s = new SqlJsConsoleSessionStore(db);
  return [s, s];
});

sessionStoreContract('PostgreSQL', async () => {
  const [one, two] = await postgres.twoHandles();
  return [new PostgresConsoleSessionStore(one), new PostgresConsoleSessionStore(two)];
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
