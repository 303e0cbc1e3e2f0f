import type { ViewCount, ViewCountStore } from '../types.js';
import type { PostgresDatabase } from './postgresDatabase.js';

/**
 * Views and watch time in PostgreSQL: a flush is one statement, its rows incremented in place, so
 * the nodes of a cluster add into the same rows without reading them (no lost update).
 */
export class PostgresViewCounts implements ViewCountStore {
  constructor(private readonly db: Pick<PostgresDatabase, 'query'>) {}

  async add(counts: readonly ViewCount[]): Promise<void> {
    if (counts.length === 0) return;
    // One row per video and day in a statement: ON CONFLICT cannot touch a row twice.
    const merged = new Map<string, ViewCount>();
    for (const c of counts) {
      const k = `${c.videoId}|${c.day}`;
      const m = merged.get(k);
      merged.set(k, m ? { ...m, views: m.views + c.views, watchSeconds: m.watchSeconds + c.watchSeconds } : { ...c });
    }
    const rows = [...merged.values()];
    await this.db.query(
      `INSERT INTO video_views AS v (video_id, day, views, watch_seconds)
       SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
       ON CONFLICT (video_id, day) DO UPDATE SET views = v.views + excluded.views, watch_seconds = v.watch_seconds + excluded.watch_seconds`,
      [rows.map((r) => r.videoId), rows.map((r) => r.day), rows.map((r) => r.views), rows.map((r) => r.watchSeconds)],
    );
  }

  async ofVideo(videoId: string): Promise<ViewCount[]> {
    const { rows } = await this.db.query<{ video_id: string; day: string; views: string; watch_seconds: string }>(
      'SELECT video_id, day, views, watch_seconds FROM video_views WHERE video_id = $1 ORDER BY day',
      [videoId],
    );
    return rows.map((r) => ({ videoId: r.video_id, day: r.day, views: Number(r.views), watchSeconds: Number(r.watch_seconds) }));
  }

  async byDay(fromDay: string, toDay: string): Promise<Array<Omit<ViewCount, 'videoId'>>> {
    const { rows } = await this.db.query<{ day: string; views: string; watch_seconds: string }>(
      'SELECT day, SUM(views) AS views, SUM(watch_seconds) AS watch_seconds FROM video_views WHERE day >= $1 AND day <= $2 GROUP BY day ORDER BY day',
      [fromDay, toDay],
    );
    return rows.map((r) => ({ day: r.day, views: Number(r.views), watchSeconds: Number(r.watch_seconds) }));
  }
}
