import initSqlJs from 'sql.js';
import { MIGRATIONS } from './migrations.js';

/** What {@link checkSqliteImage} found. */
export interface SqliteImageCheck {
  /** Undefined when SQLite finds the file sound and this vop can open it. */
  problem?: string;
  schemaVersion?: number;
}

/**
 * SQLite's own full check of a database file held in memory (a backup's copy): PRAGMA
 * integrity_check, which reads every page and index, and a schema this vop can open.
 */
export async function checkSqliteImage(image: Uint8Array): Promise<SqliteImageCheck> {
  const SQL = await initSqlJs();
  let db;
  try {
    db = new SQL.Database(image);
    const verdict = db.exec('PRAGMA integrity_check').map((r) => r.values.map((v) => String(v[0])).join('; ')).join('; ');
    if (verdict !== 'ok') return { problem: `SQLite's integrity check of the database found: ${verdict.slice(0, 500)}` };
    const schemaVersion = Number(db.exec('PRAGMA user_version')[0]?.values[0]?.[0] ?? 0);
    if (schemaVersion > MIGRATIONS.length) {
      return { schemaVersion, problem: `the database has schema version ${schemaVersion}, newer than this vop understands (${MIGRATIONS.length}): use a newer vop` };
    }
    return { schemaVersion };
  } catch (err) {
    return { problem: `the database is not a readable SQLite file (${(err as Error).message})` };
  } finally {
    db?.close();
  }
}
