import type { ViewCount, ViewCountStore } from '../types.js';
import type { DurableDatabase } from './durableDatabase.js';

/** Views and watch time in the embedded database: one transaction per flush, whatever its size. */
export class SqlJsViewCounts implements ViewCountStore {
  constructor(private readonly db: DurableDatabase) {}

  async add(counts: readonly ViewCount[]): Promise<void> {
    if (counts.length === 0) return;
    await this.db.write(
      counts.map((c) => [
        'INSERT INTO video_views (video_id, day, views, watch_seconds) VALUES (?, ?, ?, ?) ON CONFLICT (video_id, day) DO UPDATE SET views = views + excluded.views, watch_seconds = watch_seconds + excluded.watch_seconds',
        [c.videoId, c.day, c.views, c.watchSeconds],
      ]),
    );
  }

  async ofVideo(videoId: string): Promise<ViewCount[]> {
    return this.db
      .all<{ video_id: string; day: string; views: number; watch_seconds: number }>('SELECT video_id, day, views, watch_seconds FROM video_views WHERE video_id = ? ORDER BY day', [videoId])
      .map((r) => ({ videoId: r.video_id, day: r.day, views: Number(r.views), watchSeconds: Number(r.watch_seconds) }));
  }

  async byDay(fromDay: string, toDay: string): Promise<Array<Omit<ViewCount, 'videoId'>>> {
    return this.db
      .all<{ day: string; views: number; watch_seconds: number }>(
        'SELECT day, SUM(views) AS views, SUM(watch_seconds) AS watch_seconds FROM video_views WHERE day >= ? AND day <= ? GROUP BY day ORDER BY day',
        [fromDay, toDay],
      )
      .map((r) => ({ day: r.day, views: Number(r.views), watchSeconds: Number(r.watch_seconds) }));
  }
}
