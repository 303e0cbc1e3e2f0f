import type { S3MediaStoreOptions } from './media/s3Options.js';

/** Where this node keeps metadata and media, for the admin's /healthz . */
export interface StorageSummary {
  database: { engine: 'sql.js' } | { engine: 'postgresql'; address: string };
  media: { engine: 'local' } | { engine: 's3'; endpoint: string; bucket: string };
}

/**
 * The summary of `options`. The database is named by host and port only, as the start-up log
 * names it: its address may carry a password.
 */
export function storageSummary(options: { databaseUrl?: string; objectStorage?: { endpoint: string; bucket?: S3MediaStoreOptions['bucket'] } }): StorageSummary {
  let database: StorageSummary['database'] = { engine: 'sql.js' };
  if (options.databaseUrl) {
    const url = new URL(options.databaseUrl);
    database = { engine: 'postgresql', address: `${url.hostname}:${url.port || '5432'}` };
  }
  const s3 = options.objectStorage;
  return { database, media: s3 ? { engine: 's3', endpoint: s3.endpoint, bucket: s3.bucket ?? '' } : { engine: 'local' } };
}
