import type { ConsoleSessionStore } from './types.js';

/**
 * {@link ConsoleSessionStore} in this process's memory: what ConsoleSessions uses when given no
 * store (tests, a server without a database). Both databases keep sessions in a table instead
 * (storage/sqljs/sqljsConsoleSessions.ts, storage/postgres/postgresConsoleSessions.ts), so a
 * restart keeps the console logged in.
 */
export class MemoryConsoleSessionStore implements ConsoleSessionStore {
  /** Session id hash → expiry (Unix ms). */
  private readonly sessions = new Map<string, number>();

  /** Sessions held now, expired ones included until the next add (for tests). */
  get size(): number {
    return this.sessions.size;
  }

  async add(idHash: string, expiresAt: number, maxSessions: number, now: number): Promise<void> {
    for (const [id, at] of this.sessions) if (at <= now) this.sessions.delete(id);
    this.sessions.set(idHash, expiresAt);
    while (this.sessions.size > maxSessions) {
      let closest: [string, number] | undefined;
      for (const entry of this.sessions) if (!closest || entry[1] < closest[1]) closest = entry;
      this.sessions.delete(closest![0]);
    }
  }

  async expiryOf(idHash: string, now: number): Promise<number | undefined> {
    const expiresAt = this.sessions.get(idHash);
    if (expiresAt === undefined) return undefined;
    if (expiresAt <= now) {
      this.sessions.delete(idHash);
      return undefined;
    }
    return expiresAt;
  }

  async remove(idHash: string): Promise<void> {
    this.sessions.delete(idHash);
  }
}
