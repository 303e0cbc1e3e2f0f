import { describe, expect, it } from 'vitest';
import type { Stores } from '../../server/storage/types.js';
import { freshStoresPerTest, type StoreFactory } from './storesHarness.js';

/**
 * The contract of the signing keys (server/storage/types.ts SigningKeyStore), written once and run
 * against every engine (test/storage/store-contract-embedded.test.ts: sql.js;
 * test/storage/store-contract-postgres.test.ts: PostgreSQL), the way tus-node-server runs one suite
 * against every store. An engine passes it by what its methods answer, never by how it stores
 * them.
 */
export function signingKeyStoreContract(engine: string, factory: StoreFactory): void {
  describe(`SigningKeyStore contract: ${engine}`, () => {
    let s: Stores;
    const { reopen } = freshStoresPerTest(factory, (fresh) => (s = fresh));

    const key = (id: string, createdAt: number, purpose: 'media' | 'uploads' = 'media') => ({ purpose, id, secret: id.repeat(64 / id.length), createdAt });

    it('stores a first key once; a second first key finds the first', async () => {
      expect(await s.signingKeys.list('media', 1000)).toEqual([]);
      expect(await s.signingKeys.addFirst(key('aa', 1000), 1000)).toEqual([key('aa', 1000)]);
      expect(await s.signingKeys.addFirst(key('bb', 1001), 1001)).toEqual([key('aa', 1000)]);
      // Each purpose has its own.
      expect(await s.signingKeys.addFirst(key('cc', 1002, 'uploads'), 1002)).toEqual([key('cc', 1002, 'uploads')]);
      expect(await (await reopen()).signingKeys.list('media', 1003)).toEqual([key('aa', 1000)]);
    });

    it('rotates: the new key first, the others ended at the time given, the ended ones gone', async () => {
      await s.signingKeys.addFirst(key('aa', 1000), 1000);
      expect(await s.signingKeys.rotate(key('bb', 2000), 5000, 2000)).toEqual([key('bb', 2000), { ...key('aa', 1000), expiresAt: 5000 }]);
      // A later end does not lengthen an earlier one; an earlier one shortens it.
      expect(await s.signingKeys.rotate(key('cc', 3000), 9000, 3000)).toEqual([key('cc', 3000), { ...key('bb', 2000), expiresAt: 9000 }, { ...key('aa', 1000), expiresAt: 5000 }]);
      expect(await s.signingKeys.list('media', 5000)).toEqual([key('cc', 3000), { ...key('bb', 2000), expiresAt: 9000 }]);
      // Revoked: the others end now, and are gone from the list at once.
      expect(await s.signingKeys.rotate(key('dd', 6000), 6000, 6000)).toEqual([key('dd', 6000)]);
      const again = await reopen();
      expect(await again.signingKeys.list('media', 6000)).toEqual([key('dd', 6000)]);
      // Another purpose is left alone.
      expect(await again.signingKeys.list('uploads', 6000)).toEqual([]);
    });
  });
}
