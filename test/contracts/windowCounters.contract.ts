import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Stores } from '../../server/storage/types.js';
import { freshStoresPerTest, type StoreFactory } from './storesHarness.js';

/** A whole number of minutes since the epoch: a window's start on every engine (PostgreSQL's count from the epoch, the embedded mode's from a key's first hit). */
const T0 = 1_800_000_000_000;
const MINUTE = 60_000;

/**
 * The contract of the counters (server/storage/types.ts WindowCounters), run against every engine.
 * It asks only what the interface promises on both: hits within one window add up, and a window
 * ends `windowMs` after it began. The hits here begin at a window's start on either engine.
 */
export function windowCountersContract(engine: string, factory: StoreFactory): void {
  describe(`WindowCounters contract: ${engine}`, () => {
    let s: Stores;
    freshStoresPerTest(factory, (fresh) => (s = fresh));
    const key = () => `contract:${crypto.randomUUID()}`;

    it('counts hits of a key within its window, each hit answering the count after it', async () => {
      const k = key();
      expect(await s.counters.count(k, MINUTE, T0)).toBe(0);
      expect(await s.counters.hit(k, MINUTE, T0)).toBe(1);
      expect(await s.counters.hit(k, MINUTE, T0 + 1)).toBe(2);
      expect(await s.counters.hit(k, MINUTE, T0 + MINUTE / 2)).toBe(3);
      expect(await s.counters.count(k, MINUTE, T0 + MINUTE - 1)).toBe(3);
      // Another key is counted apart.
      expect(await s.counters.count(key(), MINUTE, T0 + 1)).toBe(0);
    });

    it('ends a window windowMs after it began: the next one counts from zero', async () => {
      const k = key();
      await s.counters.hit(k, MINUTE, T0);
      await s.counters.hit(k, MINUTE, T0 + 10);
      expect(await s.counters.windowEnd(k, MINUTE, T0 + 10)).toBe(T0 + MINUTE);
      expect(await s.counters.count(k, MINUTE, T0 + MINUTE)).toBe(0);
      expect(await s.counters.hit(k, MINUTE, T0 + MINUTE)).toBe(1);
      expect(await s.counters.windowEnd(k, MINUTE, T0 + MINUTE + 5)).toBe(T0 + 2 * MINUTE);
    });

    it('gives each of many hits at once its own count', async () => {
      const k = key();
      const counts = await Promise.all(Array.from({ length: 10 }, () => s.counters.hit(k, MINUTE, T0 + 5)));
      expect([...counts].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(await s.counters.count(k, MINUTE, T0 + 6)).toBe(10);
    });
  });
}
