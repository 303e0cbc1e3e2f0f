import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { safeEqual } from '../core/tokens.js';
import { MemoryConsoleSessionStore } from '../storage/memoryConsoleSessions.js';
import type { ConsoleSessionStore } from '../storage/types.js';

/** Options of {@link ConsoleSessions}. */
export interface ConsoleSessionOptions {
  /** How long a session lasts after login; the console then asks for the token again. */
  ttlMs: number;
  /** Live sessions kept at most (on all nodes together in cluster mode); past it those closest to expiry end. */
  maxSessions: number;
  /** How long a ticket for the event stream opens one (the console asks for one just before it connects). */
  ticketTtlMs: number;
}

export const DEFAULT_CONSOLE_SESSION_OPTIONS = {
  ttlMs: 12 * 3600_000,
  maxSessions: 1000,
  ticketTtlMs: 60_000,
} satisfies ConsoleSessionOptions;

/** The session cookie's name over plain http. */
export const SESSION_COOKIE = 'vop_console';

/**
 * The session cookie's name over TLS (directly or through a trusted proxy). A browser takes a
 * `__Host-` cookie only with Secure, Path=/ and no Domain, so no other host, nor this host over
 * plain http (another port, say), can set one that shadows it (RFC 6265bis, 4.1.3.2).
 */
export const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;

/**
 * The header that carries the session's secret ({@link ConsoleSessions.secretOf}) on every
 * request made with the cookie. A cookie names a host, not a port: every other web server on
 * this host receives it, and a page there can make the browser send it. The secret is handed to
 * the console at login only, and cannot be worked out from the cookie.
 */
export const CONSOLE_HEADER = 'x-vop-console';

/** The session a request's cookie names, while it lives. */
export interface ConsoleSession {
  /** The random id the cookie holds. */
  readonly id: string;
  /** Its expiry (Unix ms). */
  readonly expiresAt: number;
}

/**
 * The headless console's login sessions: a random id in an HttpOnly cookie, whose SHA-256 is
 * mapped to its expiry in a {@link ConsoleSessionStore}. The admin token itself never goes into a
 * cookie. Where the sessions live is the store's business: this process's memory in the embedded
 * mode (a restart logs everyone out), PostgreSQL in cluster mode (storage/postgres/
 * postgresConsoleSessions.ts), where every node sees every login and logout at once.
 *
 * Each session has a secret, an HMAC of its id under a key every node holds (a random key kept
 * with the metadata, bound to the admin token: {@link sessionSecretKey}), so any node can check
 * it with nothing stored beside the session. Whoever has the cookie (another server on this host
 * receives it) still cannot make the secret without the key; nor can a cookie and its secret be
 * used to test guesses of the admin token, which alone no longer makes the key.
 */
export class ConsoleSessions {
  private readonly opts: ConsoleSessionOptions;
  private readonly store: ConsoleSessionStore;
  private readonly now: () => number;
  private readonly key: () => Buffer;

  /**
   * `deps.store`: where sessions live (default: this process's memory); `deps.now`: the clock;
   * `deps.secretKey`: the key of the sessions' secrets and tickets, the same on every node, read
   * at each use (a rotation changes it: every session logs in again); default: a random one, for
   * one process alone.
   */
  constructor(
    input: Partial<ConsoleSessionOptions> = {},
    deps: { store?: ConsoleSessionStore; now?: () => number; secretKey?: () => Buffer } = {},
  ) {
    this.opts = { ...DEFAULT_CONSOLE_SESSION_OPTIONS, ...input };
    if (!(this.opts.ttlMs > 0)) throw new Error('Option ttlMs must be greater than 0.');
    if (!Number.isInteger(this.opts.maxSessions) || this.opts.maxSessions < 1) throw new Error('Option maxSessions must be a whole number of at least 1.');
    if (!(this.opts.ticketTtlMs > 0)) throw new Error('Option ticketTtlMs must be greater than 0.');
    this.store = deps.store ?? new MemoryConsoleSessionStore();
    this.now = deps.now ?? Date.now;
    const own = crypto.randomBytes(32);
    this.key = deps.secretKey ?? (() => own);
  }

  get ttlMs(): number {
    return this.opts.ttlMs;
  }

  /**
   * Starts a session; resolves with its id (256 random bits), expiry (Unix ms) and secret. Past
   * `maxSessions` live sessions (on all nodes together in cluster mode), the ones closest to
   * expiry end.
   */
  async create(): Promise<{ id: string; expiresAt: number; secret: string }> {
    const id = crypto.randomBytes(32).toString('base64url');
    const now = this.now();
    const expiresAt = now + this.opts.ttlMs;
    await this.store.add(sessionIdHash(id), expiresAt, this.opts.maxSessions, now);
    return { id, expiresAt, secret: this.secretOf({ id, expiresAt }) };
  }

  /** The live session `req`'s cookie names, if any (the `__Host-` cookie first, then the plain one). */
  async sessionOf(req: IncomingMessage): Promise<ConsoleSession | undefined> {
    for (const id of sessionIdsOf(req)) {
      const expiresAt = await this.store.expiryOf(sessionIdHash(id), this.now());
      if (expiresAt !== undefined) return { id, expiresAt };
    }
    return undefined;
  }

  /** The expiry of the session `req`'s cookie names, if it is live. */
  async expiryOf(req: IncomingMessage): Promise<number | undefined> {
    return (await this.sessionOf(req))?.expiresAt;
  }

  /** True if `req` carries the cookie of a live session (whether or not it holds the secret). */
  async isLoggedIn(req: IncomingMessage): Promise<boolean> {
    return (await this.sessionOf(req)) !== undefined;
  }

  /** The session's secret: what the console sends as `X-Vop-Console`. 256 bits, base64url. */
  secretOf(session: ConsoleSession): string {
    return this.mac(`secret\0${session.id}`);
  }

  /** True if `presented` (a header's value) is the session's secret. */
  holdsSecret(session: ConsoleSession, presented: unknown): boolean {
    return typeof presented === 'string' && safeEqual(presented, this.secretOf(session));
  }

  /**
   * A ticket that opens the event stream for this session for `ticketTtlMs`. EventSource cannot
   * send a header, so the stream's URL carries this instead of the secret: a URL lands in
   * proxies' access logs, and a ticket found there is dead within a minute and opens nothing
   * but the stream, and only with the session's cookie. `purpose` names what else a ticket opens
   * instead (`backup:<name>`, one backup's download, which a browser fetches by a plain link).
   */
  ticketOf(session: ConsoleSession, purpose = 'events'): { ticket: string; expiresAt: number } {
    const expiresAt = Math.min(this.now() + this.opts.ticketTtlMs, session.expiresAt);
    return { ticket: `${expiresAt.toString(36)}.${this.mac(`${purpose}\0${session.id}\0${expiresAt}`)}`, expiresAt };
  }

  /** True if `presented` (a query value) is a ticket of this session for `purpose` that has not expired. */
  holdsTicket(session: ConsoleSession, presented: unknown, purpose = 'events'): boolean {
    if (typeof presented !== 'string') return false;
    const m = /^([0-9a-z]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(presented);
    if (!m) return false;
    const expiresAt = parseInt(m[1]!, 36);
    const now = this.now();
    if (!(expiresAt > now && expiresAt <= now + this.opts.ticketTtlMs)) return false;
    return safeEqual(m[2]!, this.mac(`${purpose}\0${session.id}\0${expiresAt}`));
  }

  /** Ends the session `req`'s cookie names, if any, wherever it is checked next. */
  async end(req: IncomingMessage): Promise<void> {
    const session = await this.sessionOf(req);
    if (session) await this.store.remove(sessionIdHash(session.id));
  }

  private mac(text: string): string {
    return crypto.createHmac('sha256', this.key()).update(text).digest('base64url');
  }
}

/**
 * The key of the sessions' secrets: the console key ring's key (random, kept with the metadata,
 * so the same on every node; rotated as the signing keys are) bound to the admin token. Without
 * the ring's key, a cookie and its secret say nothing about the token (they were a way to test
 * guesses of it offline while the key came from the token alone). Changing the token still
 * changes the key, and the console logs in again (with the new token, as it must); so does a
 * rotation of the console keys.
 */
export function sessionSecretKey(ringKey: Buffer, adminToken: string): Buffer {
  return crypto.createHmac('sha256', ringKey).update(`vop console session secrets\0${adminToken}`).digest();
}

/**
 * What a store keeps of a session id: its SHA-256 (hex). The id has 256 random bits, so a plain
 * hash is enough (no salt, no slow hash): a copy of the table gives nobody a cookie.
 */
export function sessionIdHash(id: string): string {
  return crypto.createHash('sha256').update(id).digest('hex');
}

/** The session ids in `req`'s Cookie header: the `__Host-` cookie's first, then the plain one's. */
function sessionIdsOf(req: IncomingMessage): string[] {
  const header = req.headers.cookie;
  if (!header) return [];
  const found: Record<string, string> = {};
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    // The first of a name is the one with the longest path (RFC 6265, 5.4), ours being Path=/.
    if ((name === SECURE_SESSION_COOKIE || name === SESSION_COOKIE) && !(name in found) && /^[A-Za-z0-9_-]{43}$/.test(value)) found[name] = value;
  }
  return [found[SECURE_SESSION_COOKIE], found[SESSION_COOKIE]].filter((id): id is string => id !== undefined);
}

/**
 * The Set-Cookie value of a session: `__Host-` and Secure when the request came over TLS
 * (http/clientAddress.ts isHttpsRequest), the plain name otherwise (a LAN install on plain http
 * would never log in with a Secure cookie).
 */
export function sessionCookie(id: string, maxAgeSeconds: number, secure: boolean): string {
  return `${secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}

/**
 * The Set-Cookie values that remove a session's cookies at logout: the plain one, and over TLS the
 * `__Host-` one too (a browser takes that only from a Secure answer over https).
 */
export function clearedSessionCookies(secure: boolean): string[] {
  return secure ? [sessionCookie('', 0, true), sessionCookie('', 0, false)] : [sessionCookie('', 0, false)];
}
