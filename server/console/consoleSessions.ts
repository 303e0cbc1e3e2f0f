import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { MemoryConsoleSessionStore } from '../storage/memoryConsoleSessions.js';
import type { ConsoleSessionStore } from '../storage/types.js';

/** Options of {@link ConsoleSessions}. */
export interface ConsoleSessionOptions {
  /** How long a session lasts after login; the console then asks for the token again. */
  ttlMs: number;
  /** Live sessions kept at most (on all nodes together in cluster mode); past it those closest to expiry end. */
  maxSessions: number;
}

export const DEFAULT_CONSOLE_SESSION_OPTIONS = {
  ttlMs: 12 * 3600_000,
  maxSessions: 1000,
} satisfies ConsoleSessionOptions;

/** The session cookie's name. */
export const SESSION_COOKIE = 'vop_console';

/**
 * The header the console sends on every request. A cookie-authenticated request that changes
 * anything must carry it: a page on another site can make the browser send the cookie (were
 * SameSite ever bypassed) but cannot add a custom header without a CORS preflight we never allow.
 */
export const CONSOLE_HEADER = 'x-vop-console';

/**
 * The headless console's login sessions: a random id in an HttpOnly cookie, whose SHA-256 is
 * mapped to its expiry in a {@link ConsoleSessionStore}. The admin token itself never goes into a
 * cookie. Where the sessions live is the store's business: this process's memory in the embedded
 * mode (a restart logs everyone out), PostgreSQL in cluster mode (storage/postgres/
 * postgresConsoleSessions.ts), where every node sees every login and logout at once.
 */
export class ConsoleSessions {
  private readonly opts: ConsoleSessionOptions;
  private readonly store: ConsoleSessionStore;
  private readonly now: () => number;

  /** `deps.store`: where sessions live (default: this process's memory); `deps.now`: the clock. */
  constructor(input: Partial<ConsoleSessionOptions> = {}, deps: { store?: ConsoleSessionStore; now?: () => number } = {}) {
    this.opts = { ...DEFAULT_CONSOLE_SESSION_OPTIONS, ...input };
    if (!(this.opts.ttlMs > 0)) throw new Error('Option ttlMs must be greater than 0.');
    if (!Number.isInteger(this.opts.maxSessions) || this.opts.maxSessions < 1) throw new Error('Option maxSessions must be a whole number of at least 1.');
    this.store = deps.store ?? new MemoryConsoleSessionStore();
    this.now = deps.now ?? Date.now;
  }

  get ttlMs(): number {
    return this.opts.ttlMs;
  }

  /**
   * Starts a session; resolves with its id (256 random bits) and expiry (Unix ms). Past
   * `maxSessions` live sessions (on all nodes together in cluster mode), the ones closest to
   * expiry end.
   */
  async create(): Promise<{ id: string; expiresAt: number }> {
    const id = crypto.randomBytes(32).toString('base64url');
    const now = this.now();
    const expiresAt = now + this.opts.ttlMs;
    await this.store.add(sessionIdHash(id), expiresAt, this.opts.maxSessions, now);
    return { id, expiresAt };
  }

  /** The expiry of the session `req`'s cookie names, if it is live. */
  async expiryOf(req: IncomingMessage): Promise<number | undefined> {
    const id = sessionIdOf(req);
    if (!id) return undefined;
    return this.store.expiryOf(sessionIdHash(id), this.now());
  }

  /** True if `req` carries the cookie of a live session. */
  async isLoggedIn(req: IncomingMessage): Promise<boolean> {
    return (await this.expiryOf(req)) !== undefined;
  }

  /** Ends the session `req`'s cookie names, if any, wherever it is checked next. */
  async end(req: IncomingMessage): Promise<void> {
    const id = sessionIdOf(req);
    if (id) await this.store.remove(sessionIdHash(id));
  }
}

/**
 * What a store keeps of a session id: its SHA-256 (hex). The id has 256 random bits, so a plain
 * hash is enough (no salt, no slow hash): a copy of the table gives nobody a cookie.
 */
export function sessionIdHash(id: string): string {
  return crypto.createHash('sha256').update(id).digest('hex');
}

/** The session id in `req`'s Cookie header, if any. */
function sessionIdOf(req: IncomingMessage): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

/** The Set-Cookie value of a session (or of its removal, with `maxAgeSeconds` 0). */
export function sessionCookie(id: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}
