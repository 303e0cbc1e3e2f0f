import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Stores } from '../../server/storage/types.js';
import { freshStoresPerTest, type StoreFactory } from './storesHarness.js';

/**
 * The contract of views and watch time (server/storage/types.ts ViewCountStore), written once and
 * run against every engine (test/storage/store-contract-embedded.test.ts: sql.js;
 * test/storage/store-contract-postgres.test.ts: PostgreSQL), the way tus-node-server runs one suite
 * against every store. An engine passes it by what its methods answer, never by how it stores
 * them.
 */
export function viewCountStoreContract(engine: string, factory: StoreFactory): void {
  describe(`ViewCountStore contract: ${engine}`, () => {
    let s: Stores;
    const { reopen } = freshStoresPerTest(factory, (fresh) => (s = fresh));

    it('adds counts into each video and day, from several writers at once, and keeps them', async () => {
      const a = crypto.randomUUID();
      const b = crypto.randomUUID();
      expect(await s.views.ofVideo(a)).toEqual([]);
      await s.views.add([]);
      await s.views.add([{ videoId: a, day: '2026-11-28', views: 1, watchSeconds: 10 }]);
      // Two flushes at once into the same rows (on PostgreSQL, two connections of the pool).
      const second = s;
      await Promise.all([
        s.views.add([{ videoId: a, day: '2026-11-29', views: 2, watchSeconds: 20 }, { videoId: b, day: '2026-11-29', views: 1, watchSeconds: 5 }]),
        second.views.add([{ videoId: a, day: '2026-11-29', views: 3, watchSeconds: 30 }, { videoId: a, day: '2026-11-29', views: 1, watchSeconds: 1 }]),
      ]);
      expect(await second.views.ofVideo(a)).toEqual([
        { videoId: a, day: '2026-11-28', views: 1, watchSeconds: 10 },
        { videoId: a, day: '2026-11-29', views: 6, watchSeconds: 51 },
      ]);
      const again = await reopen();
      expect(await again.views.byDay('2026-11-29', '2026-11-30')).toEqual([{ day: '2026-11-29', views: 7, watchSeconds: 56 }]);
      expect(await again.views.byDay('2026-11-01', '2026-11-28')).toEqual([{ day: '2026-11-28', views: 1, watchSeconds: 10 }]);
    });
  });
}
