/**
 * `vop restore --database-url …` (cluster mode): a backup of a cluster into an EMPTY PostgreSQL
 * database and, with its media, an EMPTY bucket. Nothing is written until the target is checked
 * (a database that holds vop's rows, a bucket that holds objects, are refused as they are) and the
 * whole backup verifies. Then the database is marked (storage/postgres/restoreMark.ts: no node
 * starts on it while the mark is there), migrated the way a node does it, filled table by table,
 * its sequences moved past the rows, the media put back under their keys; the mark goes last.
 * A restore cut off leaves the mark; the next restore into that database clears it and starts over.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type pg from 'pg';
import type { RetryConfig } from '../core/retry.js';
import { mediaContentType } from '../storage/media/contentTypes.js';
import type { MediaObjectInfo } from '../storage/media/mediaStore.js';
import { S3MediaStore } from '../storage/media/s3MediaStore.js';
import type { S3MediaStoreOptions } from '../storage/media/s3Options.js';
import { PG_MIGRATIONS } from '../storage/postgres/migrations.js';
import { writeFileSynced } from '../storage/fsync.js';
import { databaseAddress, PostgresDatabase } from '../storage/postgres/postgresDatabase.js';
import { PG_BACKUP_TABLES, PG_TRANSIENT_TABLES, tablePartName } from '../storage/postgres/postgresExport.js';
import { markPostgresRestoreFinished, markPostgresRestoreStarted, unfinishedPostgresRestore, type PostgresRestoreMark } from '../storage/postgres/restoreMark.js';
import { RestoreRefusedError, type RestoreOptions } from './restoreBackup.js';
import { verifyBackup } from './verifyBackup.js';
import { BACKED_UP_AREAS, DATA_DIR_FILES, MEDIA_LIST_PART, MEDIA_PREFIX, mediaPartsOutsideAreas, SETTINGS_PREFIX, type BackupManifest } from './writeBackup.js';

/** Where a cluster backup is restored to. */
export interface ClusterRestoreTarget {
  /** The PostgreSQL database, empty (or holding an unfinished restore). */
  databaseUrl: string;
  /** The bucket: needed for a backup that holds its media (which must go into an empty one); with a list only, checked against it. */
  objectStorage?: Partial<S3MediaStoreOptions> & { endpoint: string };
  /** A node's data folder, new or empty, for the backup's settings files (the admin token); none: they are not written. */
  dataDir?: string;
  /** How long to wait for the database to answer (default: a few tries). */
  connectRetry?: RetryConfig;
}

export interface ClusterRestoreResult {
  manifest: BackupManifest;
  /** Rows written, all tables together. */
  rows: number;
  /** Media objects put into the bucket, and their bytes. */
  objects: number;
  bytes: number;
  /** The database held an unfinished restore, which was cleared first. */
  clearedUnfinished: boolean;
  /** The settings files written into `dataDir`, by name. */
  settingsFiles: string[];
  /**
   * A backup with the media list only, restored with a bucket named: the listed objects the bucket
   * lacks (or holds with another size), the first few by key, and how many. Undefined when not checked.
   */
  missingMedia?: { count: number; keys: string[] };
}

const DEFAULT_RETRY: RetryConfig = { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 2_000, jitter: false };
/** Missing objects named in the result; the rest are counted. */
const MISSING_SHOWN = 20;

/** Restores the cluster backup `file` into `target`. */
export async function restoreIntoCluster(file: string, target: ClusterRestoreTarget, options: RestoreOptions = {}): Promise<ClusterRestoreResult> {
  const { progress, sealKey } = options;
  const where = databaseAddress(target.databaseUrl);
  // 1. The database, read only: empty, or holding an unfinished restore.
  const { default: pgModule } = await import('pg');
  const unfinished = await withClient(pgModule, target.databaseUrl, async (client) => {
    const mark = await unfinishedPostgresRestore(client);
    if (mark) return mark;
    const held = await tablesWithRows(client);
    if (held.length > 0) {
      throw new RestoreRefusedError(
        `The database at ${where} holds vop's data (rows in ${held.join(', ')}). vop restores only into an empty database; nothing was changed there.`,
      );
    }
    return undefined;
  });
  if (target.dataDir) checkSettingsFolder(target.dataDir);

  // 2. The whole backup, before anything is written.
  progress?.(`Checking ${file} ...`);
  const checked = await verifyBackup(file, { sealKey });
  if (checked.problems.length > 0) {
    throw new RestoreRefusedError(`${file} is not a sound backup, so nothing was restored:\n  ${checked.problems.join('\n  ')}`);
  }
  const manifest = checked.manifest as BackupManifest;
  checkBackupFits(file, manifest);

  // 3. The bucket, read only: empty when the media are to go into it.
  const store = target.objectStorage ? new S3MediaStore({ ...target.objectStorage, log: progress ?? (() => undefined) }) : undefined;
  try {
    if (manifest.media === 'include') {
      if (!store) {
        throw new RestoreRefusedError(`${file} holds its media objects: name the bucket they go into (--config, or the VOP_S3_* variables); nothing was changed.`);
      }
      const some = await store.anyObject().catch((err: Error) => (err.name === 'NoSuchBucket' ? undefined : Promise.reject(err)));
      if (some !== undefined && !unfinished) {
        throw new RestoreRefusedError(
          `The bucket ${store.options.bucket} at ${store.options.endpoint} holds objects (${some}, …). vop restores media only into an empty bucket; nothing was changed.`,
        );
      }
    }

    // 4. Write: the mark first, in its own commit; then the schema, the rows, the media; the mark last.
    await withClient(pgModule, target.databaseUrl, (client) => markPostgresRestoreStarted(client, { from: path.resolve(file), startedAt: new Date().toISOString() }));
    if (unfinished) progress?.(describeUnfinished(where, unfinished));
    if (manifest.media === 'include') await store!.ensureBucket();
    const db = await PostgresDatabase.open({
      url: target.databaseUrl,
      connectRetry: target.connectRetry ?? DEFAULT_RETRY,
      maxConnections: 2,
      restoring: true,
      log: progress ?? (() => undefined),
    });
    try {
      return await write(file, manifest, db, store, target, unfinished !== undefined, options);
    } finally {
      await db.close();
    }
  } finally {
    store?.close();
  }
}

/** Everything but the checks: rows, sequences, media, settings files, then the mark removed. */
async function write(
  file: string,
  manifest: BackupManifest,
  db: PostgresDatabase,
  store: S3MediaStore | undefined,
  target: ClusterRestoreTarget,
  clearedUnfinished: boolean,
  { progress, sealKey }: RestoreOptions,
): Promise<ClusterRestoreResult> {
  // Empty every table the restore fills (an unfinished restore's rows; the settings' first row, which the migrations make).
  const all = [...PG_BACKUP_TABLES.map((t) => t.table), ...PG_TRANSIENT_TABLES];
  await db.query(`TRUNCATE ${all.join(', ')}`);
  const tableOfPart = new Map(PG_BACKUP_TABLES.map((t) => [tablePartName(t.table), t.table]));
  const columnsOf = await tableColumns(db);
  const keyOf = new Map(manifest.parts.filter((p) => p.key !== undefined).map((p) => [p.name, p.key!]));
  let rows = 0;
  let objects = 0;
  let bytes = 0;
  const settingsFiles: string[] = [];
  const listed: Array<Pick<MediaObjectInfo, 'key' | 'size'>> = [];
  progress?.(`Restoring into the database at ${databaseAddress(target.databaseUrl)}${store && manifest.media === 'include' ? ` and the bucket ${store.options.bucket}` : ''} ...`);
  const again = await verifyBackup(file, {
    sealKey,
    onTableRows: async (name, lines) => {
      const table = tableOfPart.get(name)!;
      // The columns the backup has: a column it lacks (an older backup) takes its default.
      const columns = Object.keys(JSON.parse(lines[0]!) as object);
      const unknown = columns.filter((c) => !columnsOf.get(table)?.has(c));
      if (unknown.length > 0) throw new Error(`${name} has columns this vop's ${table} lacks (${unknown.join(', ')})`);
      const list = columns.map((c) => `"${c}"`).join(', ');
      await db.query(`INSERT INTO ${table} (${list}) SELECT ${list} FROM json_populate_recordset(NULL::${table}, $1::json)`, [`[${lines.join(',')}]`]);
      rows += lines.length;
    },
    onPart: async (part, stream) => {
      if (part.name.startsWith(MEDIA_PREFIX) && store) {
        const key = keyOf.get(part.name) ?? part.name.slice(MEDIA_PREFIX.length);
        await store.put(key, { stream }, { contentType: mediaContentType(key) });
        objects++;
        bytes += part.size;
        return;
      }
      if (part.name.startsWith(SETTINGS_PREFIX) && target.dataDir) {
        const name = part.name.slice(SETTINGS_PREFIX.length);
        if ((DATA_DIR_FILES as readonly string[]).includes(name)) {
          await writeSettingsFile(path.join(target.dataDir, name), stream);
          settingsFiles.push(name);
          return;
        }
      }
      if (part.name === MEDIA_LIST_PART && manifest.media === 'list' && store) {
        for await (const line of lines(stream)) if (line) listed.push(JSON.parse(line) as MediaObjectInfo);
        return;
      }
      for await (const _ of stream); // a part this restore does not write
    },
  });
  if (again.problems.length > 0) {
    throw new Error(`${file} changed while it was restored (${again.problems[0]}); the database is marked unfinished: restore again from a sound copy.`);
  }
  await moveSequences(db);
  const missingMedia = manifest.media === 'list' && store ? await missingFrom(store, listed) : undefined;
  await markPostgresRestoreFinished(db);
  return { manifest, rows, objects, bytes, clearedUnfinished, settingsFiles, ...(missingMedia ? { missingMedia } : {}) };
}

/** A connection of its own (no pool, no migrations), for the checks and the mark. */
async function withClient<T>(pgModule: typeof pg, url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pgModule.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
  } catch (err) {
    throw new RestoreRefusedError(`Cannot reach the database at ${databaseAddress(url)}: ${(err as Error).message}; nothing was changed.`);
  }
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** vop's tables that hold rows (the settings' first row, which the migrations make, does not count). */
async function tablesWithRows(client: pg.Client): Promise<string[]> {
  const held: string[] = [];
  for (const table of [...PG_BACKUP_TABLES.map((t) => t.table), ...PG_TRANSIENT_TABLES]) {
    const { rows } = await client.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [`public.${table}`]);
    if (!rows[0]?.present) continue;
    const where = table === 'console_settings' ? ' WHERE version > 0' : '';
    const r = await client.query<{ held: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${table}${where}) AS held`);
    if (r.rows[0]?.held) held.push(table);
  }
  return held;
}

/** What this vop can restore: a cluster's backup, of a schema it knows, of tables it knows. */
function checkBackupFits(file: string, manifest: BackupManifest): void {
  if (manifest.database.engine !== 'postgresql') {
    throw new RestoreRefusedError(
      `${file} is a backup of the embedded mode (its database is SQLite's): restore it with --data-dir into a new folder; a cluster starts from a backup of a cluster. Nothing was changed.`,
    );
  }
  if (manifest.database.schemaVersion > PG_MIGRATIONS.length) {
    throw new RestoreRefusedError(
      `${file} was made by a newer vop (its database schema is version ${manifest.database.schemaVersion}, this vop knows ${PG_MIGRATIONS.length}): restore it with that vop or a newer one. Nothing was changed.`,
    );
  }
  const known = new Set(PG_BACKUP_TABLES.map((t) => tablePartName(t.table)));
  const strange = manifest.parts.filter((p) => p.name.startsWith('database/') && !known.has(p.name)).map((p) => p.name);
  if (strange.length > 0) throw new RestoreRefusedError(`${file} holds tables this vop does not know (${strange.join(', ')}): restore it with a newer vop. Nothing was changed.`);
  const outside = mediaPartsOutsideAreas(manifest.parts);
  if (outside.length > 0) throw new RestoreRefusedError(`${file} holds media outside the areas a backup holds (${outside.slice(0, 5).map((n) => JSON.stringify(n)).join(', ')}). Nothing was changed.`);
}

/** The settings files go into a node's data folder that is new or empty (or holds only such files, from a restore cut off). */
function checkSettingsFolder(dir: string): void {
  let present: string[];
  try {
    present = fs.readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const other = present.filter((n) => !(DATA_DIR_FILES as readonly string[]).includes(n));
  if (other.length > 0) {
    throw new RestoreRefusedError(`${path.resolve(dir)} holds files (${other.slice(0, 5).join(', ')}): the settings files go only into a new or empty folder; nothing was changed.`);
  }
}

async function writeSettingsFile(file: string, stream: Readable): Promise<void> {
  await fs.promises.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const chunks: Buffer[] = [];
  for await (const c of stream as AsyncIterable<Buffer>) chunks.push(c);
  await writeFileSynced(file, Buffer.concat(chunks));
}

/** Every column of the tables a restore fills, by table. */
async function tableColumns(db: PostgresDatabase): Promise<Map<string, Set<string>>> {
  const { rows } = await db.query<{ table_name: string; column_name: string }>(
    "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'",
  );
  const out = new Map<string, Set<string>>();
  for (const r of rows) {
    if (!out.has(r.table_name)) out.set(r.table_name, new Set());
    out.get(r.table_name)!.add(r.column_name);
  }
  return out;
}

/**
 * The sequences behind the tables' serial columns (the order of jobs, deliveries, status changes)
 * moved past the restored rows, so that the next number is one no row has.
 */
async function moveSequences(db: PostgresDatabase): Promise<void> {
  const tables = PG_BACKUP_TABLES.map((t) => t.table);
  const { rows } = await db.query<{ table_name: string; column_name: string }>(
    "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' AND column_default LIKE 'nextval(%' AND table_name = ANY($1::text[])",
    [tables],
  );
  for (const r of rows) {
    await db.query(
      `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT MAX(${r.column_name}) FROM ${r.table_name}), 0) + 1, false)`,
      [r.table_name, r.column_name],
    );
  }
}

/** The listed objects the bucket lacks or holds with another size. */
async function missingFrom(store: S3MediaStore, listed: Array<Pick<MediaObjectInfo, 'key' | 'size'>>): Promise<{ count: number; keys: string[] }> {
  const present = new Map<string, number>();
  for (const area of BACKED_UP_AREAS) for (const o of await store.list(area)) present.set(o.key, o.size);
  const missing = listed.filter((o) => present.get(o.key) !== o.size);
  return { count: missing.length, keys: missing.slice(0, MISSING_SHOWN).map((o) => o.key) };
}

function lines(stream: Readable): AsyncIterable<string> {
  return createInterface({ input: stream, crlfDelay: Infinity });
}

function describeUnfinished(where: string, mark: PostgresRestoreMark): string {
  return `The database at ${where} holds an unfinished restore (of ${mark.from}, started ${mark.startedAt}); clearing it.`;
}
