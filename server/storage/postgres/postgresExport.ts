/**
 * A cluster database's copy for a backup (Stores.exportDatabase): every table vop keeps, as it is
 * at one instant, one JSON-lines part per table, `database/<table>.jsonl`.
 *
 * One instant: the tables are read in one `REPEATABLE READ READ ONLY` transaction on one
 * connection, so they are one snapshot while every node goes on writing. Bounded memory: each
 * table is read through a cursor in key order, a batch at a time, into a temporary file in the
 * node's scratch (a backup's part needs its size before its bytes); the transaction ends once the
 * files are written, and the files go when the backup has read them (release()).
 *
 * Faithful values: PostgreSQL writes each row itself (`row_to_json`), so nothing passes through
 * JavaScript's numbers: a BIGINT is its exact digits, a DOUBLE PRECISION its shortest exact form,
 * a NULL a null, a JSON column its document, a BYTEA its `\\x…` hex; `json_populate_recordset`
 * reads every one of these forms back to the same value (backup/restoreCluster.ts).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PoolClient } from 'pg';
import type { DatabaseExport } from '../types.js';
import type { PostgresDatabase } from './postgresDatabase.js';

/** A table a backup keeps, and the key it is read (and restored) in. */
export interface BackupTable {
  table: string;
  key: readonly string[];
}

/**
 * The tables a backup keeps, in the order they are restored (an application before its grants
 * and its videos, which name it). Console sessions are kept: whoever was logged in stays so.
 */
export const PG_BACKUP_TABLES: readonly BackupTable[] = [
  { table: 'apps', key: ['app_id'] },
  { table: 'app_grants', key: ['app_id', 'target_app_id'] },
  { table: 'videos', key: ['id'] },
  { table: 'video_status_history', key: ['id'] },
  { table: 'renditions', key: ['video_id', 'label'] },
  { table: 'text_tracks', key: ['video_id', 'id'] },
  { table: 'video_views', key: ['video_id', 'day'] },
  { table: 'jobs', key: ['id'] },
  { table: 'callback_deliveries', key: ['id'] },
  { table: 'callback_attempts', key: ['delivery_id', 'series', 'attempt'] },
  { table: 'console_settings', key: ['id'] },
  { table: 'signing_keys', key: ['purpose', 'id'] },
  { table: 'console_sessions', key: ['id_hash'] },
];

/**
 * Tables a backup leaves out, because what they hold is about the moment and the nodes of the
 * cluster that made it: counts in rate-limit windows, the addresses API calls came from lately
 * (suggestions, gathered again as calls come in), the disk promised to uploads under way (whose
 * bytes a backup never holds: `incoming` is not backed up); or because the videos' rows make them
 * again: the kept counts of videos (migration 15), which its trigger rebuilds as a restore inserts
 * the videos. `vop_schema` is the migrations' own, made again by them; BullMQ's tables (schema
 * `bullmq`) are the queue engine's, not vop's.
 */
export const PG_TRANSIENT_TABLES: readonly string[] = ['rate_windows', 'api_callers', 'upload_reservations', 'video_counts', 'video_user_counts'];

/** A table's part in a backup. */
export const tablePartName = (table: string): string => `database/${table}.jsonl`;

/** Rows read per FETCH: a few hundred KB of text at most, whatever the table's size. */
const BATCH_ROWS = 1000;

/**
 * Copies every kept table at one instant into temporary files under `scratchDir` and returns them
 * as a backup's parts; `release()` removes the files.
 */
export async function exportPostgresDatabase(db: PostgresDatabase, scratchDir: string): Promise<DatabaseExport> {
  await fs.promises.mkdir(scratchDir, { recursive: true, mode: 0o700 });
  const dir = await fs.promises.mkdtemp(path.join(scratchDir, `export-${crypto.randomBytes(3).toString('hex')}-`));
  const release = () => fs.promises.rm(dir, { recursive: true, force: true });
  try {
    const client = await db.pool.connect();
    let snapshot;
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        snapshot = await readSnapshot(client, dir);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    } finally {
      client.release();
    }
    return {
      engine: 'postgresql',
      schemaVersion: snapshot.schemaVersion,
      counts: snapshot.counts,
      parts: snapshot.files.map((f) => ({ name: tablePartName(f.table), size: f.size, open: () => fs.createReadStream(f.file, { highWaterMark: 1 << 20 }) })),
      release,
    };
  } catch (err) {
    await release();
    throw err;
  }
}

/** Inside the snapshot's transaction: the schema's version, the counts, and every kept table into its file. */
async function readSnapshot(client: PoolClient, dir: string) {
  // The first statement fixes the snapshot: the version and the counts are of the same instant as the rows.
  const version = await client.query<{ version: number }>('SELECT version FROM vop_schema');
  const c = await client.query<{ apps: string; videos: string; deliveries: string }>(
    'SELECT (SELECT COUNT(*) FROM apps) AS apps, (SELECT COUNT(*) FROM videos) AS videos, (SELECT COUNT(*) FROM callback_deliveries) AS deliveries',
  );
  const files: Array<{ table: string; file: string; size: number }> = [];
  for (const t of PG_BACKUP_TABLES) {
    const file = path.join(dir, `${t.table}.jsonl`);
    files.push({ table: t.table, file, size: await copyTable(client, t, file) });
  }
  return {
    schemaVersion: Number(version.rows[0]?.version ?? 0),
    counts: { apps: Number(c.rows[0]!.apps), videos: Number(c.rows[0]!.videos), callbackDeliveries: Number(c.rows[0]!.deliveries) },
    files,
  };
}

/** One table, in key order, a batch at a time through a cursor, into `file`; resolves with its size. */
async function copyTable(client: PoolClient, t: BackupTable, file: string): Promise<number> {
  const cursor = `vop_backup_${t.table}`;
  await client.query(`DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT row_to_json(t)::text AS line FROM ${t.table} t ORDER BY ${t.key.map((k) => `t.${k}`).join(', ')}`);
  const fh = await fs.promises.open(file, 'wx', 0o600);
  let size = 0;
  try {
    for (;;) {
      const { rows } = await client.query<{ line: string }>(`FETCH ${BATCH_ROWS} FROM ${cursor}`);
      if (rows.length === 0) break;
      // A JSON column is written as it was stored, line breaks included; outside a string (where
      // JSON has them escaped) a line break is only white space, so a space keeps the row's meaning.
      const chunk = Buffer.from(`${rows.map((r) => r.line.replace(/[\r\n]/g, ' ')).join('\n')}\n`);
      await fh.write(chunk);
      size += chunk.length;
      if (rows.length < BATCH_ROWS) break;
    }
  } finally {
    await fh.close();
  }
  await client.query(`CLOSE ${cursor}`);
  return size;
}

/** Where a node's exports go when it is given no scratch: the system's temporary folder. */
export const defaultExportDir = (): string => path.join(os.tmpdir(), 'vop-backup');
