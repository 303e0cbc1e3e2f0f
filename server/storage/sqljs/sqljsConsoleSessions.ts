/**
 * {@link ConsoleSessionStore} in the embedded database (`console_sessions`), so that a restart
 * keeps the console logged in, as cluster mode does in PostgreSQL. Rows hold the SHA-256 of a
 * session's id, never the id. One process writes it, and DurableDatabase runs a write in memory
 * before it returns, so the sweep and the cap see the insert.
 */
import type { ConsoleSessionStore } from '../types.js';
import type { DurableDatabase } from './durableDatabase.js';

export class SqlJsConsoleSessionStore implements ConsoleSessionStore {
  constructor(private readonly db: DurableDatabase) {}

  async add(idHash: string, expiresAt: number, maxSessions: number, now: number): Promise<void> {
    // One transaction: insert, sweep the expired, keep the `maxSessions` latest to expire.
    await this.db.write([
      ['INSERT OR REPLACE INTO console_sessions (id_hash, expires_at) VALUES (?, ?)', [idHash, expiresAt]],
      [
        `DELETE FROM console_sessions WHERE expires_at <= ? OR id_hash IN (
           SELECT id_hash FROM console_sessions WHERE expires_at > ? ORDER BY expires_at DESC, id_hash LIMIT -1 OFFSET ?)`,
        [now, now, maxSessions],
      ],
    ]);
  }

  async expiryOf(idHash: string, now: number): Promise<number | undefined> {
    const row = this.db.get<{ expires_at: number }>('SELECT expires_at FROM console_sessions WHERE id_hash = ? AND expires_at > ?', [idHash, now]);
    return row ? Number(row.expires_at) : undefined;
  }

  async remove(idHash: string): Promise<void> {
    await this.db.write([['DELETE FROM console_sessions WHERE id_hash = ?', [idHash]]]);
  }
}
