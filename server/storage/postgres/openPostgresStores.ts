import { PostgresViewCounts } from './postgresViewCounts.js';
import { PostgresApiCallers } from './postgresApiCallers.js';
import { PostgresWindowCounters } from './postgresCounters.js';
import type { RetryConfig } from '../../core/retry.js';
import type { Stores } from '../types.js';
import { PostgresCallbackStore } from './postgresCallbackStore.js';
import { PostgresConsoleSessionStore } from './postgresConsoleSessions.js';
import { databaseAddress, PostgresDatabase } from './postgresDatabase.js';
import { PostgresJobStore } from './postgresJobStore.js';
import { PostgresSharedSettings } from './postgresSharedSettings.js';
import { PostgresSigningKeys } from './postgresSigningKeys.js';
import { PostgresAppStore } from './postgresAppStore.js';
import { PostgresUploadReservations } from './postgresUploadReservations.js';
import { PostgresVideoStore } from './postgresVideoStore.js';
import { defaultExportDir, exportPostgresDatabase } from './postgresExport.js';

/** Options of {@link openPostgresStores}. */
export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database`. */
  url: string;
  /** How long to wait for a database that does not answer yet (createServer's default: config.ts). */
  connectRetry: RetryConfig;
  /** Connections the stores share at most (default: PostgresDatabase's). */
  maxConnections?: number;
  /** Where a backup's copy of the tables is written until it is sent (the node's scratch; default: the system's temporary folder). */
  exportDir?: string;
  /** Where the waiting and storage lines go. */
  log?: (line: string) => void;
}

/**
 * Opens vop's metadata in PostgreSQL (cluster mode): waits for the database, applies the schema
 * migrations once under an advisory lock, and returns the same interfaces as the sql.js opener.
 */
export async function openPostgresStores(options: PostgresStoreOptions): Promise<Stores & { db: PostgresDatabase }> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const db = await PostgresDatabase.open({ url: options.url, connectRetry: options.connectRetry, maxConnections: options.maxConnections, log });
  // Says which database this node shares (the address without its password).
  log(`Metadata in PostgreSQL at ${databaseAddress(options.url)}.`);
  const apps = new PostgresAppStore(db);
  return {
    db,
    apps,
    videos: new PostgresVideoStore(db),
    jobs: new PostgresJobStore(db),
    callbacks: new PostgresCallbackStore(db),
    counters: new PostgresWindowCounters(db),
    apiCallers: new PostgresApiCallers(db),
    // Every node counts the uploads under way of all (issue 12, item 7).
    uploadReservations: new PostgresUploadReservations(db),
    consoleSessions: new PostgresConsoleSessionStore(db),
    sharedSettings: new PostgresSharedSettings(db, options.url),
    signingKeys: new PostgresSigningKeys(db),
    views: new PostgresViewCounts(db),
    exportDatabase: () => exportPostgresDatabase(db, options.exportDir ?? defaultExportDir()),
    close: () => db.close(),
    warnings: () => [],
    followChanges: (feed) => void apps.follow(feed),
  };
}
