/**
 * Puts a library that bench/seedLibrary.ts seeded into an embedded data directory into a
 * PostgreSQL database as well, row for row (the application, its videos, their status history,
 * renditions and status deliveries): the cluster bench compares the two modes over the same
 * library. Bulk inserts of a few thousand rows each take seconds where the store layer's one
 * insert per video took minutes for 100,000.
 *
 * The rows are written at the schema version this copy was written for ({@link SEED_SCHEMA_VERSION});
 * a node started on the database afterwards applies any later migration over them, as it would
 * over a library that grew before that migration existed (a migration that fills a new table from
 * the videos fills it from these).
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import initSqlJs from 'sql.js';
import { PG_MIGRATIONS } from '../server/storage/postgres/migrations.js';

/** The schema version whose tables the copy fills: PostgreSQL's at the time of writing. */
const SEED_SCHEMA_VERSION = 14;

/** The tables copied, in an order their references allow. */
const TABLES = ['apps', 'videos', 'video_status_history', 'renditions', 'callback_deliveries'];

/** Rows per INSERT: one statement of arrays, a few MB. */
const BATCH = 5_000;

/** Copies the library of `dataDir` (no server may have it open) into the empty database at `url`. */
export async function copyLibraryToPostgres(dataDir: string, url: string): Promise<Record<string, number>> {
  const SQL = await initSqlJs();
  const source = new SQL.Database(fs.readFileSync(path.join(dataDir, 'vop.db')));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const copied: Record<string, number> = {};
  try {
    await client.query('BEGIN');
    await client.query('CREATE TABLE vop_schema (version INTEGER NOT NULL)');
    for (const step of PG_MIGRATIONS.slice(0, SEED_SCHEMA_VERSION)) for (const sql of step) await client.query(sql);
    await client.query('INSERT INTO vop_schema (version) VALUES ($1)', [SEED_SCHEMA_VERSION]);
    for (const table of TABLES) copied[table] = await copyTable(source, client, table);
    await client.query('COMMIT');
    // Statistics for the planner, as autovacuum would gather them on a library that grew.
    await client.query('VACUUM ANALYZE');
    return copied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    await client.end();
    source.close();
  }
}

type SqlJsDatabase = InstanceType<Awaited<ReturnType<typeof initSqlJs>>['Database']>;

/** Copies one table's rows: the columns both schemas have, converted to PostgreSQL's types. */
async function copyTable(source: SqlJsDatabase, client: pg.Client, table: string): Promise<number> {
  const sourceColumns = new Set(source.exec(`SELECT name FROM pragma_table_info('${table}')`)[0]!.values.map((r) => String(r[0])));
  const { rows: targetColumns } = await client.query<{ column_name: string; udt_name: string; column_default: string | null }>(
    `SELECT column_name, udt_name, column_default FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`,
    [table],
  );
  const columns = targetColumns.filter((c) => sourceColumns.has(c.column_name));
  const names = columns.map((c) => c.column_name);
  // unnest of one array per column: one statement per batch, whatever the batch's size.
  const insert = `INSERT INTO ${table} (${names.join(', ')}) SELECT * FROM unnest(${columns.map((c, i) => `$${i + 1}::${c.udt_name}[]`).join(', ')})`;
  const convert = columns.map((c) => (c.udt_name === 'bool' ? (v: unknown) => (v === null ? null : v !== 0) : (v: unknown) => v));
  const statement = source.prepare(`SELECT ${names.join(', ')} FROM ${table} ORDER BY rowid`);
  let count = 0;
  try {
    let batch: unknown[][] = columns.map(() => []);
    const flush = async () => {
      if (batch[0]!.length > 0) await client.query(insert, batch);
      batch = columns.map(() => []);
    };
    while (statement.step()) {
      const row = statement.get();
      for (let i = 0; i < row.length; i++) batch[i]!.push(convert[i]!(row[i]));
      if (++count % BATCH === 0) await flush();
    }
    await flush();
  } finally {
    statement.free();
  }
  // A sequence whose numbers were copied goes on after the last one (callback_deliveries.seq).
  for (const c of columns.filter((c) => c.column_default?.startsWith('nextval('))) {
    await client.query(`SELECT setval(pg_get_serial_sequence($1, $2), GREATEST(1, (SELECT MAX(${c.column_name}) FROM ${table})))`, [table, c.column_name]);
  }
  return count;
}
