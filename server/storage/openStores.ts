import type { RetryConfig } from '../core/retry.js';
import { Scratch } from './scratch.js';
import { openSqlJsStores } from './sqljs/openSqlJsStores.js';
import type { Stores } from './types.js';

/** Options of {@link openStores}. */
export interface OpenStoresOptions {
  /** The data directory: where the embedded database lives when there is no `databaseUrl`. */
  dataDir: string;
  /** PostgreSQL's address: cluster mode, metadata shared by every node that names it. */
  databaseUrl?: string;
  /** How long to wait for PostgreSQL at start-up. */
  databaseConnectRetry: RetryConfig;
  /** Connections to PostgreSQL the stores share at most (default: PostgresDatabase's). */
  databaseMaxConnections?: number;
  log: (line: string) => void;
}

/**
 * The one place that knows the storage engines: PostgreSQL when a database address is given,
 * otherwise the embedded sql.js database in the data directory (the default, nothing to run).
 */
export async function openStores(options: OpenStoresOptions): Promise<Stores> {
  if (options.databaseUrl) {
    // Loaded only in cluster mode (postgresDatabase.ts loads the client itself, for the bundle).
    const { openPostgresStores } = await import('./postgres/openPostgresStores.js');
    return openPostgresStores({
      url: options.databaseUrl,
      connectRetry: options.databaseConnectRetry,
      maxConnections: options.databaseMaxConnections,
      exportDir: new Scratch(options.dataDir).kindPath('backup'),
      log: options.log,
    });
  }
  return openSqlJsStores({ dir: options.dataDir, log: options.log });
}
