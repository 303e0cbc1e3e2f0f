import { SqlJsViewCounts } from './sqljsViewCounts.js';
import { FileSharedSettings } from '../fileSharedSettings.js';
import { MemoryApiCallerStore } from '../memory/memoryApiCallers.js';
import { MemoryUploadReservations } from '../memory/memoryUploadReservations.js';
import { MemoryWindowCounters } from '../memory/memoryWindowCounters.js';
import type { Stores } from '../types.js';
import { SqlJsCallbackStore } from './sqljsCallbackStore.js';
import { SqlJsJobStore } from './sqljsJobStore.js';
import { SqlJsConsoleSessionStore } from './sqljsConsoleSessions.js';
import { SqlJsSigningKeys } from './sqljsSigningKeys.js';
import { DurableDatabase } from './durableDatabase.js';
import { SqlJsAppStore } from './sqljsAppStore.js';
import { SqlJsVideoStore } from './sqljsVideoStore.js';

/** The embedded database's file in a backup. */
export const SQLITE_BACKUP_PART = 'database/vop.db';

/** Options of {@link openSqlJsStores}. */
export interface SqlJsStoreOptions {
  /** The data directory; the database lives in it as `vop.db` plus `journal/`. */
  dir: string;
  /** Where storage warnings go. */
  log?: (message: string) => void;
}

/** Opens the embedded sql.js storage (durable: see durableDatabase.ts). */
export async function openSqlJsStores(options: SqlJsStoreOptions): Promise<Stores & { db: DurableDatabase }> {
  const db = await DurableDatabase.open({ dir: options.dir, log: options.log });
  return {
    db,
    jobs: new SqlJsJobStore(db),
    callbacks: new SqlJsCallbackStore(db),
    apps: new SqlJsAppStore(db),
    videos: new SqlJsVideoStore(db),
    signingKeys: new SqlJsSigningKeys(db),
    consoleSessions: new SqlJsConsoleSessionStore(db),
    views: new SqlJsViewCounts(db),
    // One process counts and sees every call: these need no table (memory/ says why for each).
    counters: new MemoryWindowCounters(),
    apiCallers: new MemoryApiCallerStore(),
    uploadReservations: new MemoryUploadReservations(),
    // Where embedded users have always had them, the data folder's settings.json.
    sharedSettings: new FileSharedSettings(options.dir),
    // One process makes every change, and drops its own copies as it does (SqlJsAppStore).
    followChanges: () => undefined,
    exportDatabase: async () => {
      const { image, read: counts, schemaVersion } = await db.copySoon(() => {
        const row = db.get<{ apps: number; videos: number; deliveries: number }>(
          'SELECT (SELECT COUNT(*) FROM apps) AS apps, (SELECT COUNT(*) FROM videos) AS videos, (SELECT COUNT(*) FROM callback_deliveries) AS deliveries',
        )!;
        return { apps: Number(row.apps), videos: Number(row.videos), callbackDeliveries: Number(row.deliveries) };
      });
      return { engine: 'sqlite', schemaVersion, counts, parts: [{ name: SQLITE_BACKUP_PART, data: image }], release: async () => undefined };
    },
    close: () => db.close(),
    warnings: () => [...db.warnings],
  };
}
