import type { ConsoleSessionStore } from '../types.js';
import type { Queryable } from './postgresDatabase.js';

/**
 * {@link ConsoleSessionStore} in PostgreSQL (`console_sessions`): every node checks a console
 * cookie against the same rows, so a login through one node works on all of them and a logout
 * through any ends it for all. Each check is one primary-key read; nothing is cached, so an
 * ended session is refused by the next request whatever node it reaches.
 */
export class PostgresConsoleSessionStore implements ConsoleSessionStore {
  constructor(private readonly db: Queryable) {}

  async add(idHash: string, expiresAt: number, maxSessions: number, now: number): Promise<void> {
    await this.db.query('INSERT INTO console_sessions (id_hash, expires_at) VALUES ($1, $2)', [idHash, expiresAt]);
    // Swept and capped after the insert, each statement on its own: of two logins on two nodes at
    // once, the later statement sees both rows, so the table ends at most `maxSessions` live rows
    // without a lock (an earlier statement only ever deletes more). The new session, the last to
    // expire, is kept.
    await this.db.query(
      `DELETE FROM console_sessions WHERE expires_at <= $1 OR id_hash IN (
         SELECT id_hash FROM console_sessions WHERE expires_at > $1 ORDER BY expires_at DESC, id_hash OFFSET $2)`,
      [now, maxSessions],
    );
  }

  async expiryOf(idHash: string, now: number): Promise<number | undefined> {
    const { rows } = await this.db.query<{ expires_at: number }>('SELECT expires_at FROM console_sessions WHERE id_hash = $1 AND expires_at > $2', [idHash, now]);
    return rows[0] ? Number(rows[0].expires_at) : undefined;
  }

  async remove(idHash: string): Promise<void> {
    await this.db.query('DELETE FROM console_sessions WHERE id_hash = $1', [idHash]);
  }
}
