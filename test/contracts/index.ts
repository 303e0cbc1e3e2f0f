/**
 * The storage contracts: one suite per store interface (`<interface>.contract.ts`), each a
 * function that declares its tests against the store an engine's file hands it. The engines'
 * files run them: test/storage/store-contract-embedded.test.ts (sql.js, and memory where the embedded
 * mode keeps a store in memory; the quick tier) and test/storage/store-contract-postgres.test.ts
 * (PostgreSQL; the full tier). The media store's is mediaStore.contract.ts.
 */
import { apiCallerStoreContract } from './apiCallerStore.contract.js';
import { appStoreContract } from './appStore.contract.js';
import { callbackStoreContract } from './callbackStore.contract.js';
import { jobStoreContract } from './jobStore.contract.js';
import { sharedSettingsStoreContract } from './sharedSettingsStore.contract.js';
import { signingKeyStoreContract } from './signingKeyStore.contract.js';
import { storesContract } from './stores.contract.js';
import type { StoreFactory } from './storesHarness.js';
import { videoStoreContract } from './videoStore.contract.js';
import { viewCountStoreContract } from './viewCountStore.contract.js';
import { windowCountersContract } from './windowCounters.contract.js';

export { consoleSessionStoreContract, type ConsoleSessionStorePair } from './consoleSessionStore.contract.js';
export { uploadReservationStoreContract, type UploadReservationStorePair } from './uploadReservationStore.contract.js';
export type { OpenedStores, StoreFactory } from './storesHarness.js';

/**
 * Every contract of the stores an engine opens together (`Stores`): each engine runs this one
 * list, so a contract added to it runs on every engine.
 */
export function storesContracts(engine: string, factory: StoreFactory): void {
  appStoreContract(engine, factory);
  videoStoreContract(engine, factory);
  jobStoreContract(engine, factory);
  callbackStoreContract(engine, factory);
  signingKeyStoreContract(engine, factory);
  viewCountStoreContract(engine, factory);
  windowCountersContract(engine, factory);
  apiCallerStoreContract(engine, factory);
  sharedSettingsStoreContract(engine, factory);
  storesContract(engine, factory);
}
