import { describe, expect, it } from 'vitest';
import type { Stores } from '../../server/storage/types.js';
import { freshStoresPerTest, type StoreFactory } from './storesHarness.js';

/**
 * The contract of the console's saved settings (server/storage/types.ts SharedSettingsStore), run
 * against every engine: the embedded mode's `settings.json`, PostgreSQL's `console_settings`.
 * `watch` is not in it: only a store that another process writes tells of saves (PostgreSQL's is
 * tested in test/console/cluster-settings.test.ts).
 */
export function sharedSettingsStoreContract(engine: string, factory: StoreFactory): void {
  describe(`SharedSettingsStore contract: ${engine}`, () => {
    let s: Stores;
    const { reopen } = freshStoresPerTest(factory, (fresh) => (s = fresh));

    it('starts empty at version 0, saves what a change makes, one version a save, and keeps it', async () => {
      expect(await s.sharedSettings.read()).toEqual({ settings: {}, version: 0, updatedAt: 0 });
      const first = await s.sharedSettings.update((current) => ({ ...current, multipartMaxBytes: 7_000_000 }), 1_000);
      expect(first).toMatchObject({ settings: { multipartMaxBytes: 7_000_000 }, version: 1 });
      expect(first.updatedAt).toBeGreaterThan(0);
      const second = await s.sharedSettings.update((current) => ({ ...current, pullAllow: ['example.com'] }), 2_000);
      expect(second).toMatchObject({ settings: { multipartMaxBytes: 7_000_000, pullAllow: ['example.com'] }, version: 2 });
      // A throw from the change saves nothing.
      await expect(s.sharedSettings.update(() => { throw new Error('no'); }, 3_000)).rejects.toThrow('no');
      expect((await s.sharedSettings.read()).settings).toEqual(second.settings);
      const again = await reopen();
      expect((await again.sharedSettings.read()).settings).toEqual({ multipartMaxBytes: 7_000_000, pullAllow: ['example.com'] });
      expect((await again.sharedSettings.read()).version).toBeGreaterThan(0);
    });

    it('runs saves made at once one after the other: none is lost', async () => {
      await Promise.all(Array.from({ length: 5 }, (_, i) => s.sharedSettings.update((current) => ({ ...current, [`k${i}`]: i }), 1_000 + i)));
      const doc = await s.sharedSettings.read();
      expect(doc.settings).toEqual({ k0: 0, k1: 1, k2: 2, k3: 3, k4: 4 });
      expect(doc.version).toBe(5);
    });

    it('imports settings only while nothing was ever saved', async () => {
      expect(await s.sharedSettings.importOnce({ multipartMaxBytes: 1 }, 1_000)).toBe(true);
      expect(await s.sharedSettings.importOnce({ multipartMaxBytes: 2 }, 2_000)).toBe(false);
      expect(await s.sharedSettings.read()).toMatchObject({ settings: { multipartMaxBytes: 1 }, version: 1 });
    });

    it('names where the settings are kept', () => {
      expect(s.sharedSettings.where.length).toBeGreaterThan(0);
    });
  });
}
