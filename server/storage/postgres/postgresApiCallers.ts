import { API_CALLERS_PER_APP, type ApiCallerStore } from '../types.js';
import type { PostgresDatabase } from './postgresDatabase.js';

/** How often a node writes the same caller with the same verdict. */
const WRITE_CALLER_EVERY_MS = 60_000;
/** Callers this node remembers writing; past this the memory starts again (a write more each). */
const MAX_WRITTEN_KEYS = 10_000;

/**
 * {@link ApiCallerStore} in PostgreSQL (`api_callers`): one row per application and address, the
 * newest {@link API_CALLERS_PER_APP} kept. A record is an upsert (the later call wins, whichever
 * node saw it), then a trim of that application's older rows. A node writes a caller when it is
 * new to the node, its verdict changed, or it was last written a minute ago or more; other records
 * are skipped, so this is no cost per API call, and a `lastSeen` is up to a minute behind.
 */
export class PostgresApiCallers implements ApiCallerStore {
  /** When this node last wrote each caller (`appId\naddress`), and its verdict then. */
  private readonly writtenAt = new Map<string, { at: number; allowed: boolean }>();

  constructor(private readonly db: PostgresDatabase) {}

  async record(appId: string, address: string, allowed: boolean, at: number): Promise<void> {
    const key = `${appId}\n${address}`;
    const last = this.writtenAt.get(key);
    if (last && last.allowed === allowed && at - last.at >= 0 && at - last.at < WRITE_CALLER_EVERY_MS) return;
    // Bounded: apps x their recent addresses in practice; cleared whole if something floods it.
    if (this.writtenAt.size >= MAX_WRITTEN_KEYS) this.writtenAt.clear();
    this.writtenAt.set(key, { at, allowed });
    // A failed write is tried again on a later call.
    await this.write(appId, address, allowed, at).catch((err: unknown) => {
      this.writtenAt.delete(key);
      throw err;
    });
  }

  private async write(appId: string, address: string, allowed: boolean, at: number): Promise<void> {
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
