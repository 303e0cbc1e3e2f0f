import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ConsoleSessionStore } from '../../server/storage/types.js';

/**
 * The contract of the console's session stores (server/storage/types.ts ConsoleSessionStore),
 * written once and run against each: this process's memory and the embedded sql.js database
 * (test/storage/store-contract-embedded.test.ts), and PostgreSQL, where two nodes are two pools on one
 * database (test/storage/store-contract-postgres.test.ts). A store passes by what it answers, never by
 * how it keeps sessions.
 */

/** Two handles on one empty storage, as two nodes (or, in one process, the same store twice). */
export type ConsoleSessionStorePair = () => Promise<[ConsoleSessionStore, ConsoleSessionStore]>;

const T0 = 1_800_000_000_000;
const hash = (n: number) => createHash('sha256').update(`session ${n}`).digest('hex');

export function consoleSessionStoreContract(engine: string, pair: ConsoleSessionStorePair): void {
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
