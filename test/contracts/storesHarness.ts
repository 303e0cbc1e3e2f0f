import crypto from 'node:crypto';
import { afterEach, beforeEach } from 'vitest';
import type { AppRecord, Stores } from '../../server/storage/types.js';

/**
 * What the contracts of the metadata stores (the members of `Stores`: server/storage/types.ts,
 * jobRecords.ts, callbackRecords.ts) share: a new empty storage of one engine for each test, and
 * the application record they insert.
 */

/** Storage of one engine, empty, and a way to open the same storage again as a new process would. */
export interface OpenedStores {
  stores: Stores;
  /** Closes `stores` (if still open) and opens the same storage afresh. */
  reopen(): Promise<Stores>;
}

/**
 * Makes an empty storage of one engine per call. Called before each test (not when the suite is
 * declared), so it may use a service a `beforeAll` of the engine's file started.
 */
export type StoreFactory = () => Promise<OpenedStores>;

/**
 * Gives each test of the calling `describe` a new empty storage from `factory` (handed to `use`
 * before the test), and closes every storage the test opened after it. Returns `reopen`: the same
 * storage as a new process finds it (closed with the rest after the test).
 */
export function freshStoresPerTest(factory: StoreFactory, use: (stores: Stores) => void): { reopen(): Promise<Stores> } {
  let opened: OpenedStores | undefined;
  const open: Stores[] = [];
  beforeEach(async () => {
    opened = await factory();
    open.push(opened.stores);
    use(opened.stores);
  });
  afterEach(async () => {
    while (open.length) await open.pop()!.close().catch(() => undefined);
  });
  return {
    async reopen() {
      const again = await opened!.reopen();
      open.push(again);
      return again;
    },
  };
}

/** An application with every field set, a random AppId unless given. */
export const appRecord = (overrides: Partial<AppRecord> = {}): AppRecord => ({
  appId: crypto.randomUUID().replace(/-/g, ''),
  name: 'app',
  secret: 's3cret',
  callbackUrl: '',
  disabled: false,
  apiNetworks: [],
  wholeLadderFirst: false,
  mediaAccess: 'public',
  mediaTtlSeconds: 3600,
  createdAt: 1000,
  updatedAt: 1000,
  ...overrides,
});

/** Inserts {@link appRecord}`(overrides)` into `s` and resolves with it. */
export async function insertApp(s: Stores, overrides: Partial<AppRecord> = {}): Promise<AppRecord> {
  const a = appRecord(overrides);
  await s.apps.insert(a);
  return a;
}
