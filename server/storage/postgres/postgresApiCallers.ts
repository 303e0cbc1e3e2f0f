import { API_CALLERS_PER_APP, type ApiCallerStore } from '../types.js';
import type { PostgresDatabase } from './postgresDatabase.js';

/**
 * {@link ApiCallerStore} in PostgreSQL (`api_callers`): one row per application and address, the
 * newest {@link API_CALLERS_PER_APP} kept. A record is an upsert (the later call wins, whichever
 * node saw it), then a trim of that application's older rows; nodes write at most
 * once a minute per caller (auth/authService.ts), so this is no cost per API call.
 */
export class PostgresApiCallers implements ApiCallerStore {
  constructor(private readonly db: PostgresDatabase) {}

  async record(appId: string, address: string, allowed: boolean, at: number): Promise<void> {
    await this.db.query(
      `INSERT INTO api_callers (app_id, address, last_seen, allowed) VALUES ($1, $2, $3, $4)
       ON CONFLICT (app_id, address) DO UPDATE SET last_seen = EXCLUDED.last_seen, allowed = EXCLUDED.allowed
         WHERE api_callers.last_seen <= EXCLUDED.last_seen`,
      [appId, address, at, allowed],
    );
    // Apart, not in the same statement: a statement's parts see one snapshot, and the row just
    // updated could be the one trimmed.
    await this.db.query(
      `DELETE FROM api_callers WHERE app_id = $1 AND address IN (
         SELECT address FROM api_callers WHERE app_id = $1 ORDER BY last_seen DESC, address OFFSET $2)`,
      [appId, API_CALLERS_PER_APP],
    );
  }

  async recent(appId: string): Promise<Array<{ address: string; lastSeen: number; allowed: boolean }>> {
    const { rows } = await this.db.query<{ address: string; last_seen: string; allowed: boolean }>(
      'SELECT address, last_seen, allowed FROM api_callers WHERE app_id = $1 ORDER BY last_seen DESC, address LIMIT $2',
      [appId, API_CALLERS_PER_APP],
    );
    return rows.map((r) => ({ address: r.address, lastSeen: Number(r.last_seen), allowed: r.allowed }));
  }
}
