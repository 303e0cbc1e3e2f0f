import type { WindowCounters } from '../types.js';
import type { PostgresDatabase } from './postgresDatabase.js';

/** Windows older than this are deleted: no counter vop keeps has a window near as long. */
const KEEP_MS = 60 * 60_000;
/** One sweep of old windows per this many hits (one statement, an index range). */
const SWEEP_EVERY = 500;

/**
 * {@link WindowCounters} in PostgreSQL (`rate_windows`): a hit is one upsert that returns the new
 * count, so two nodes counting the same key at once each see the other's hit.
 */
export class PostgresWindowCounters implements WindowCounters {
  private hits = 0;

  constructor(
    private readonly db: PostgresDatabase,
    private readonly clock: () => number = Date.now,
  ) {}

  async hit(key: string, windowMs: number, now = this.clock()): Promise<number> {
    if (++this.hits % SWEEP_EVERY === 0) {
      this.db.query('DELETE FROM rate_windows WHERE window_start < $1', [now - KEEP_MS]).catch(() => undefined);
    }
    const { rows } = await this.db.query<{ n: number }>(
      `INSERT INTO rate_windows (key, window_start, n) VALUES ($1, $2, 1)
       ON CONFLICT (key, window_start) DO UPDATE SET n = rate_windows.n + 1 RETURNING n`,
      [key, windowStart(now, windowMs)],
    );
    return Number(rows[0]!.n);
  }

  async count(key: string, windowMs: number, now = this.clock()): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>('SELECT n FROM rate_windows WHERE key = $1 AND window_start = $2', [key, windowStart(now, windowMs)]);
    return rows[0] ? Number(rows[0].n) : 0;
  }

  async windowEnd(_key: string, windowMs: number, now = this.clock()): Promise<number> {
    return windowStart(now, windowMs) + windowMs;
  }
}

/** The start of the window `now` falls in. */
export function windowStart(now: number, windowMs: number): number {
  return now - (now % windowMs);
}
