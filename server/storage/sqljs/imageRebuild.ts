/**
 * A backup's database read as data into a fresh one (a restore; backup/restoreBackup.ts).
 *
 * Why not write the backup's file as it is: a SQLite file carries code as well as rows (triggers,
 * views, a table's defaults and checks), and code in a backup would run inside the restored server
 * with every write it makes. A backup re-sealed by someone who added a trigger copying every new
 * application secret into a public video's title kept its access after every rotation. So the
 * restore makes a new database with vop's own migrations, up to the backup's schema version, and
 * copies into it the rows of vop's tables, each column a value: nothing else of the file is kept.
 * The server brings the schema forward on its first start, as it does for any older folder.
 */
import initSqlJs, { type Database, type SqlValue } from 'sql.js';
import { foreignObjects, referenceDatabase, userVersion } from './imageCheck.js';
import { MIGRATIONS } from './migrations.js';

/** What {@link rebuildSqliteImage} made. */
export interface RebuiltImage {
  image: Uint8Array;
  schemaVersion: number;
  /** Rows copied, all tables together. */
  rows: number;
}

/**
 * A new database file holding the rows of `image`'s vop tables. Refuses (throws, naming them) an
 * image whose schema holds anything vop's migrations do not make. SQLite's integrity check is the
 * caller's (checkSqliteImage: a restore's first pass runs it).
 */
export async function rebuildSqliteImage(image: Uint8Array): Promise<RebuiltImage> {
  const SQL = await initSqlJs();
  const from = new SQL.Database(image);
  let to: Database | undefined;
  try {
    const schemaVersion = userVersion(from);
    if (schemaVersion > MIGRATIONS.length) throw new Error(`the database has schema version ${schemaVersion}, newer than this vop understands (${MIGRATIONS.length})`);
    const foreign = foreignObjects(SQL, from, schemaVersion);
    if (foreign.length > 0) throw new Error(`the database holds what vop's schema ${schemaVersion} does not: ${foreign.join('; ')}`);
    to = referenceDatabase(SQL, schemaVersion);
    // Foreign keys stay off while rows are copied: the backup's rows were consistent in the server
    // that wrote them (which checks them), and tables are filled one after the other.
    to.run('PRAGMA foreign_keys = OFF');
    to.run('BEGIN');
    let rows = 0;
    for (const table of tablesOf(to)) rows += copyRows(from, to, table);
    to.run('COMMIT');
    return { image: to.export(), schemaVersion, rows };
  } finally {
    from.close();
    to?.close();
  }
}

/** vop's tables in the fresh database, in the order its migrations made them. */
function tablesOf(db: Database): string[] {
  const rows = db.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")[0]?.values ?? [];
  return rows.map((r) => String(r[0]));
}

/**
 * Copies every row of `table` with its rowid (a status change's rowid is its order: migration 3
 * reads it) and each of the fresh table's columns. Integers are read as BigInt, so a value past
 * 2^53 is copied exactly; the column's type in the fresh table stores each as the original did.
 */
function copyRows(from: Database, to: Database, table: string): number {
  const columns = (to.exec(`PRAGMA table_info(${quote(table)})`)[0]?.values ?? []).map((r) => String(r[1]));
  const list = ['rowid', ...columns.map(quote)].join(', ');
  const read = from.prepare(`SELECT ${list} FROM ${quote(table)}`);
  const write = to.prepare(`INSERT INTO ${quote(table)} (${list}) VALUES (${['?', ...columns.map(() => '?')].join(', ')})`);
  let n = 0;
  try {
    while (read.step()) {
      // sql.js's types omit get()'s options; `useBigInt` is in its API since 1.9.
      write.run((read as unknown as BigIntRows).get(null, { useBigInt: true }));
      n++;
    }
  } finally {
    read.free();
    write.free();
  }
  return n;
}

/** sql.js's types omit get()'s options; `useBigInt` is in its API since 1.9. */
interface BigIntRows {
  get(params: null, config: { useBigInt: boolean }): SqlValue[];
}

function quote(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
