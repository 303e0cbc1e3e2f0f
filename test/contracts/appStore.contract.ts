import { describe, expect, it } from 'vitest';
import type { AppRecord, Stores } from '../../server/storage/types.js';
import { appRecord, freshStoresPerTest, insertApp, type StoreFactory } from './storesHarness.js';

/**
 * The contract of the applications (server/storage/types.ts AppStore), written once and run
 * against every engine (test/storage/store-contract-embedded.test.ts: sql.js;
 * test/storage/store-contract-postgres.test.ts: PostgreSQL), the way tus-node-server runs one suite
 * against every store. An engine passes it by what its methods answer, never by how it stores
 * them.
 */
export function appStoreContract(engine: string, factory: StoreFactory): void {
  describe(`AppStore contract: ${engine}`, () => {
    let s: Stores;
    const { reopen } = freshStoresPerTest(factory, (fresh) => (s = fresh));
    const app = appRecord;
    const newApp = (overrides: Partial<AppRecord> = {}) => insertApp(s, overrides);

    it('reads back what it stored, and undefined for an unknown AppId', async () => {
      const a = await newApp({ name: 'Ünïcode 名', callbackUrl: 'http://x/cb', disabled: true });
      expect(await s.apps.get(a.appId)).toEqual(a);
      expect(await s.apps.get('nobody')).toBeUndefined();
    });

    it('hands out copies: changing one does not change the store', async () => {
      const a = await newApp();
      const got = (await s.apps.get(a.appId))!;
      got.name = 'changed';
      expect((await s.apps.get(a.appId))!.name).toBe('app');
    });

    it('refuses a second application with the same AppId', async () => {
      const a = await newApp();
      await expect(s.apps.insert({ ...a, name: 'again' })).rejects.toThrow();
      expect((await s.apps.get(a.appId))!.name).toBe('app');
    });

    it('lists by creation time, then AppId', async () => {
      const b = await newApp({ appId: 'b', createdAt: 2000 });
      const a = await newApp({ appId: 'a', createdAt: 2000 });
      const c = await newApp({ appId: 'c', createdAt: 1000 });
      expect((await s.apps.list()).map((x) => x.appId)).toEqual([c.appId, a.appId, b.appId]);
    });

    it('updates only the given fields and updatedAt; undefined for an unknown AppId', async () => {
      const a = await newApp({ callbackUrl: 'http://x/cb' });
      const updated = await s.apps.update(a.appId, { name: 'new', disabled: true }, 5000);
      expect(updated).toEqual({ ...a, name: 'new', disabled: true, updatedAt: 5000 });
      expect(await s.apps.get(a.appId)).toEqual(updated);
      expect(await s.apps.update(a.appId, { secret: 'other', callbackUrl: '', disabled: false }, 6000)).toEqual({
        ...a, name: 'new', secret: 'other', callbackUrl: '', updatedAt: 6000,
      });
      expect(await s.apps.update('nobody', { name: 'x' }, 7000)).toBeUndefined();
      expect(await s.apps.get('nobody')).toBeUndefined();
    });

    it('keeps whether an application wants every rung before status 1, and changes it on update', async () => {
      const a = await newApp({ wholeLadderFirst: true });
      expect((await s.apps.get(a.appId))!.wholeLadderFirst).toBe(true);
      expect((await s.apps.update(a.appId, { name: 'renamed' }, 2000))!.wholeLadderFirst).toBe(true);
      expect((await s.apps.update(a.appId, { wholeLadderFirst: false }, 3000))!.wholeLadderFirst).toBe(false);
      expect((await newApp()).wholeLadderFirst).toBe(false);
    });

    it("keeps who may fetch an application's media and for how long, and changes them on update", async () => {
      const a = await newApp({ mediaAccess: 'signed', mediaTtlSeconds: 60 });
      expect(await s.apps.get(a.appId)).toMatchObject({ mediaAccess: 'signed', mediaTtlSeconds: 60 });
      expect(await s.apps.update(a.appId, { name: 'renamed' }, 2000)).toMatchObject({ mediaAccess: 'signed', mediaTtlSeconds: 60 });
      expect(await s.apps.update(a.appId, { mediaAccess: 'public', mediaTtlSeconds: 86_400 }, 3000)).toMatchObject({ mediaAccess: 'public', mediaTtlSeconds: 86_400 });
      // An application stored without them reads back public, an hour.
      const { mediaAccess: _a, mediaTtlSeconds: _t, ...bare } = app();
      await s.apps.insert(bare);
      expect(await s.apps.get(bare.appId)).toMatchObject({ mediaAccess: 'public', mediaTtlSeconds: 3600 });
    });

    it('keeps API networks in order, replaces them on update, and empties them (issue 12 item 1)', async () => {
      const a = await newApp({ apiNetworks: ['203.0.113.0/24', '2001:db8::/32'] });
      expect((await s.apps.get(a.appId))!.apiNetworks).toEqual(['203.0.113.0/24', '2001:db8::/32']);
      expect((await s.apps.list()).find((x) => x.appId === a.appId)!.apiNetworks).toEqual(['203.0.113.0/24', '2001:db8::/32']);
      const got = (await s.apps.get(a.appId))!;
      got.apiNetworks.push('10.0.0.0/8');
      expect((await s.apps.get(a.appId))!.apiNetworks).toHaveLength(2);
      expect((await s.apps.update(a.appId, { apiNetworks: ['10.0.0.1/32'] }, 2000))!.apiNetworks).toEqual(['10.0.0.1/32']);
      expect((await s.apps.update(a.appId, { name: 'other' }, 3000))!.apiNetworks).toEqual(['10.0.0.1/32']);
      expect((await s.apps.update(a.appId, { apiNetworks: [] }, 4000))!.apiNetworks).toEqual([]);
      expect((await newApp()).apiNetworks).toEqual([]);
      await s.apps.update(a.appId, { apiNetworks: ['192.0.2.0/24', '::ffff:0:0/96'] }, 5000);
      await s.close();
      expect((await (await reopen()).apps.get(a.appId))!.apiNetworks).toEqual(['192.0.2.0/24', '::ffff:0:0/96']);
    });

    it('replaces grants as a set and reads them sorted', async () => {
      const [a, b, c] = [await newApp({ appId: 'ga' }), await newApp({ appId: 'gc' }), await newApp({ appId: 'gb' })];
      expect(await s.apps.grants(a.appId)).toEqual([]);
      await s.apps.setGrants(a.appId, [b.appId, c.appId]);
      expect(await s.apps.grants(a.appId)).toEqual(['gb', 'gc']);
      expect(await s.apps.grants(b.appId)).toEqual([]);
      await s.apps.setGrants(a.appId, [c.appId]);
      expect(await s.apps.grants(a.appId)).toEqual(['gb']);
      await s.apps.setGrants(a.appId, []);
      expect(await s.apps.grants(a.appId)).toEqual([]);
      expect(await s.apps.grants('nobody')).toEqual([]);
    });
  });
}
