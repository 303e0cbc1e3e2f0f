import type { VideoSearch } from '../types.js';
import type { PgParam } from './postgresDatabase.js';

/**
 * Reads of the kept counts of videos (PostgreSQL migration 15): per application and status in
 * `video_counts`, per application and uploader in `video_user_counts`, each spread over a few
 * slots whose sum is the count. A trigger on `videos` keeps them in the same transaction as every
 * insert, update and delete, so a total read here is the one COUNT(*) would give in the same
 * snapshot, at the cost of a few rows rather than of every video of the application.
 */

/** A query and its parameters. */
export interface CountQuery {
  sql: string;
  params: PgParam[];
}

/** The number of an application's videos registered by one uploader (spec 4.3 createUser). */
export const uploaderTotal = (appId: string, createUser: string): CountQuery => ({
  sql: 'SELECT COALESCE(SUM(n), 0)::bigint AS n FROM video_user_counts WHERE app_id = $1 AND create_user = $2',
  params: [appId, createUser],
});

/** The number of videos in `status`, over every application. */
export const statusTotal = (status: number): CountQuery => ({
  sql: 'SELECT COALESCE(SUM(n), 0)::bigint AS n FROM video_counts WHERE status = $1',
  params: [status],
});

/** Counts per status over every application (statuses with none left out). */
export const BY_STATUS_SQL = 'SELECT status, SUM(n)::bigint AS n FROM video_counts GROUP BY status HAVING SUM(n) > 0';

/**
 * The kept count that answers a search's total, if one does: a search by application and
 * statuses, or by application and uploader alone. A search by text must count what it matches.
 */
export function searchTotal(filter: VideoSearch): CountQuery | undefined {
  if (filter.text) return undefined;
  const statuses = filter.statuses && filter.statuses.length > 0 ? filter.statuses : undefined;
  if (filter.createUser !== undefined) {
    return filter.appId !== undefined && !statuses ? uploaderTotal(filter.appId, filter.createUser) : undefined;
  }
  const where: string[] = [];
  const params: PgParam[] = [];
  if (filter.appId !== undefined) (params.push(filter.appId), where.push(`app_id = $${params.length}`));
  if (statuses) (params.push(statuses), where.push(`status = ANY($${params.length}::int[])`));
  return { sql: `SELECT COALESCE(SUM(n), 0)::bigint AS n FROM video_counts${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}`, params };
}
