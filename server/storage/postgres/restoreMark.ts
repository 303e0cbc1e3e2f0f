/**
 * The mark a cluster restore (backup/restoreCluster.ts) leaves in the database while it works: a
 * table `vop_restore` of one row, committed before the first row of the backup is written and
 * dropped, in its own commit, only once every row and object is in place. A database that still
 * has it holds half a restore: no node starts on it (PostgresDatabase.open asks), and a second
 * restore into it clears it and starts over. The embedded mode's twin is storage/restoreMarker.ts.
 */
import type { QueryResult, QueryResultRow } from 'pg';

/** A connection or a pool (postgresDatabase.ts's Queryable, named here so that it can ask before it migrates). */
interface Queryable {
  query<R extends QueryResultRow>(sql: string, params?: string[]): Promise<QueryResult<R>>;
}

export const RESTORE_MARK_TABLE = 'vop_restore';

/** What the mark says: the backup being restored and when. */
export interface PostgresRestoreMark {
  from: string;
  startedAt: string;
}

/** The unfinished restore the database holds, if any. */
export async function unfinishedPostgresRestore(db: Queryable): Promise<PostgresRestoreMark | undefined> {
  const { rows } = await db.query<{ present: boolean }>(`SELECT to_regclass('public.${RESTORE_MARK_TABLE}') IS NOT NULL AS present`);
  if (!rows[0]?.present) return undefined;
  const mark = await db.query<{ source: string; started_at: string }>(`SELECT source, started_at FROM ${RESTORE_MARK_TABLE} LIMIT 1`);
  // A table without its row was cut off between the two statements of markStarted: still unfinished.
  return { from: mark.rows[0]?.source ?? '(unknown)', startedAt: mark.rows[0]?.started_at ?? '(unknown)' };
}

/** Refuses a database that holds an unfinished restore, saying what to do. */
export async function assertNoUnfinishedPostgresRestore(db: Queryable, where: string): Promise<void> {
  const mark = await unfinishedPostgresRestore(db);
  if (!mark) return;
  throw new Error(
    `The database at ${where} holds a restore that did not finish (of ${mark.from}, started ${mark.startedAt}): ` +
      'vop does not start on half a backup. Run the restore again (npm run vop -- restore --in <file> --database-url <url>); it starts over.',
  );
}

/** Marks the database as being restored, committed before anything of the backup is written. */
export async function markPostgresRestoreStarted(db: Queryable, mark: PostgresRestoreMark): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS ${RESTORE_MARK_TABLE} (source TEXT NOT NULL, started_at TEXT NOT NULL)`);
  await db.query(`DELETE FROM ${RESTORE_MARK_TABLE}`);
  await db.query(`INSERT INTO ${RESTORE_MARK_TABLE} (source, started_at) VALUES ($1, $2)`, [mark.from, mark.startedAt]);
}

/** Removes the mark once every row and object of the restore is in place. */
export async function markPostgresRestoreFinished(db: Queryable): Promise<void> {
  await db.query(`DROP TABLE IF EXISTS ${RESTORE_MARK_TABLE}`);
}
