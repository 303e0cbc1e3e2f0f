import initSqlJs, { type Database, type SqlJsStatic } from 'sql.js';
import { MIGRATIONS } from './migrations.js';

/** What {@link checkSqliteImage} found. */
export interface SqliteImageCheck {
  /** Undefined when SQLite finds the file sound, this vop can open it, and it holds vop's objects only. */
  problem?: string;
  schemaVersion?: number;
  /** The objects of its schema that vop's migrations do not make, or make otherwise, named. */
  foreign?: string[];
}

/** Foreign objects named in a problem; the rest are counted. */
const FOREIGN_SHOWN = 10;

/**
 * SQLite's own full check of a database file held in memory (a backup's copy): PRAGMA
 * integrity_check, which reads every page and index; a schema this vop can open; and nothing in
 * it but what vop's own migrations make (see {@link foreignObjects}).
 */
export async function checkSqliteImage(image: Uint8Array): Promise<SqliteImageCheck> {
  const SQL = await initSqlJs();
  let db;
  try {
    db = new SQL.Database(image);
    const verdict = db.exec('PRAGMA integrity_check').map((r) => r.values.map((v) => String(v[0])).join('; ')).join('; ');
    if (verdict !== 'ok') return { problem: `SQLite's integrity check of the database found: ${verdict.slice(0, 500)}` };
    const schemaVersion = userVersion(db);
    if (schemaVersion > MIGRATIONS.length) {
      return { schemaVersion, problem: `the database has schema version ${schemaVersion}, newer than this vop understands (${MIGRATIONS.length}): use a newer vop` };
    }
    const foreign = foreignObjects(SQL, db, schemaVersion);
    if (foreign.length > 0) {
      const shown = foreign.slice(0, FOREIGN_SHOWN).join('; ') + (foreign.length > FOREIGN_SHOWN ? `; and ${foreign.length - FOREIGN_SHOWN} more` : '');
      return { schemaVersion, foreign, problem: `the database holds what vop's schema ${schemaVersion} does not: ${shown}` };
    }
    return { schemaVersion };
  } catch (err) {
    return { problem: `the database is not a readable SQLite file (${(err as Error).message})` };
  } finally {
    db?.close();
  }
}

/** One object of a schema, as `sqlite_schema` lists it. */
interface SchemaObject {
  type: string;
  name: string;
  table: string;
  sql: string | null;
}

/**
 * The objects of `db`'s schema (tables, indexes, triggers, views, virtual tables) that a database
 * made by vop's migrations up to `version` does not hold exactly (same kind, name, table and SQL),
 * each named: "trigger x on apps", "table apps, defined otherwise". Why exactly: a trigger or a
 * view runs code when vop writes or reads, and a table defined otherwise (a default, a generated
 * column, a check) does too; vop's own migrations are never edited once shipped (migrations.ts),
 * so the same version always makes the same text.
 */
export function foreignObjects(SQL: SqlJsStatic, db: Database, version: number): string[] {
  const reference = referenceDatabase(SQL, version);
  let ours: Map<string, SchemaObject>;
  try {
    ours = new Map(schemaObjects(reference).map((o) => [o.name, o]));
  } finally {
    reference.close();
  }
  const out: string[] = [];
  for (const o of schemaObjects(db)) {
    const mine = ours.get(o.name);
    const where = o.type === 'table' || o.type === 'view' ? '' : ` on ${o.table}`;
    if (!mine) out.push(`${o.type} ${JSON.stringify(o.name)}${where}`);
    else if (mine.type !== o.type || mine.table !== o.table || mine.sql !== o.sql) out.push(`${o.type} ${JSON.stringify(o.name)}${where}, defined otherwise than vop defines it`);
  }
  return out;
}

/** A new, empty database made by vop's migrations up to `version` (its `user_version` set), as a data folder of that version was made. */
export function referenceDatabase(SQL: SqlJsStatic, version: number): Database {
  const db = new SQL.Database();
  try {
    for (let v = 0; v < version; v++) for (const sql of MIGRATIONS[v]!) db.run(sql);
    db.run(`PRAGMA user_version = ${version}`);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** Every object of `db`'s schema, in the order they were made. */
function schemaObjects(db: Database): SchemaObject[] {
  const rows = db.exec('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid')[0]?.values ?? [];
  return rows.map(([type, name, table, sql]) => ({ type: String(type), name: String(name), table: String(table), sql: sql === null ? null : String(sql) }));
}

export function userVersion(db: Database): number {
  return Number(db.exec('PRAGMA user_version')[0]?.values[0]?.[0] ?? 0);
}
