import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { API_CALLERS_PER_APP, type Stores } from '../../server/storage/types.js';
import { freshStoresPerTest, type StoreFactory } from './storesHarness.js';

/**
 * The contract of applications' recent API callers (server/storage/types.ts ApiCallerStore), run
 * against every engine. A store may skip the record of a caller it wrote less than a minute
 * before with the same verdict (PostgreSQL does), so the records of one caller here are either a
 * minute apart or of another verdict.
 */
export function apiCallerStoreContract(engine: string, factory: StoreFactory): void {
  describe(`ApiCallerStore contract: ${engine}`, () => {
    let s: Stores;
    freshStoresPerTest(factory, (fresh) => (s = fresh));
    const appId = () => crypto.randomUUID().replace(/-/g, '');

    it('keeps each application\'s distinct callers, newest first, the later call winning', async () => {
      const a = appId();
      const b = appId();
      expect(await s.apiCallers.recent(a)).toEqual([]);
      await s.apiCallers.record(a, '192.0.2.1', true, 1_000);
      await s.apiCallers.record(a, '192.0.2.2', false, 2_000);
      await s.apiCallers.record(b, '192.0.2.9', true, 3_000);
      expect(await s.apiCallers.recent(a)).toEqual([
        { address: '192.0.2.2', lastSeen: 2_000, allowed: false },
        { address: '192.0.2.1', lastSeen: 1_000, allowed: true },
      ]);
      // The same caller again, with another verdict: one entry, now the newest.
      await s.apiCallers.record(a, '192.0.2.1', false, 4_000);
      expect(await s.apiCallers.recent(a)).toEqual([
        { address: '192.0.2.1', lastSeen: 4_000, allowed: false },
        { address: '192.0.2.2', lastSeen: 2_000, allowed: false },
      ]);
      // A call older than the one kept (reports of two nodes crossing) changes nothing.
      await s.apiCallers.record(a, '192.0.2.2', true, 1_500);
      expect((await s.apiCallers.recent(a))[1]).toEqual({ address: '192.0.2.2', lastSeen: 2_000, allowed: false });
      expect(await s.apiCallers.recent(b)).toEqual([{ address: '192.0.2.9', lastSeen: 3_000, allowed: true }]);
    });

    it(`keeps the newest ${API_CALLERS_PER_APP} callers of an application`, async () => {
      const a = appId();
      for (let i = 1; i <= API_CALLERS_PER_APP + 3; i++) await s.apiCallers.record(a, `198.51.100.${i}`, true, i * 1_000);
      const kept = await s.apiCallers.recent(a);
      expect(kept.map((c) => c.address)).toEqual(Array.from({ length: API_CALLERS_PER_APP }, (_, i) => `198.51.100.${API_CALLERS_PER_APP + 3 - i}`));
      // A caller a minute on is recorded again.
      await s.apiCallers.record(a, '198.51.100.5', true, 100_000);
      expect((await s.apiCallers.recent(a))[0]).toEqual({ address: '198.51.100.5', lastSeen: 100_000, allowed: true });
    });
  });
}
