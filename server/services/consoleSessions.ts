import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Options of {@link ConsoleSessions}. */
export interface ConsoleSessionOptions {
  /** How long a session lasts after login; the console then asks for the token again. */
  ttlMs: number;
  /** Sessions kept at most; past it the one closest to expiry is dropped. */
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
 * The headless console's login sessions: a random id in an HttpOnly cookie, mapped here to its
 * expiry. The admin token itself never goes into a cookie, and a restart logs everyone out.
 */
export class ConsoleSessions {
  private readonly sessions = new Map<string, number>();
  private readonly opts: ConsoleSessionOptions;

  constructor(
    input: Partial<ConsoleSessionOptions> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.opts = { ...DEFAULT_CONSOLE_SESSION_OPTIONS, ...input };
    if (!(this.opts.ttlMs > 0)) throw new Error('Option ttlMs must be greater than 0.');
    if (!Number.isInteger(this.opts.maxSessions) || this.opts.maxSessions < 1) throw new Error('Option maxSessions must be a whole number of at least 1.');
  }

  get ttlMs(): number {
    return this.opts.ttlMs;
  }

  /** Starts a session; resolves with its id (256 random bits) and expiry (Unix ms). */
  create(): { id: string; expiresAt: number } {
    this.prune();
    if (this.sessions.size >= this.opts.maxSessions) {
      const oldest = [...this.sessions.entries()].sort((a, b) => a[1] - b[1])[0];
      if (oldest) this.sessions.delete(oldest[0]);
    }
    const id = crypto.randomBytes(32).toString('base64url');
    const expiresAt = this.now() + this.opts.ttlMs;
    this.sessions.set(id, expiresAt);
    return { id, expiresAt };
  }

  /** The expiry of the session `req`'s cookie names, if it is live. */
  expiryOf(req: IncomingMessage): number | undefined {
    const id = sessionIdOf(req);
    if (!id) return undefined;
    const expiresAt = this.sessions.get(id);
    if (expiresAt === undefined) return undefined;
    if (expiresAt <= this.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    return expiresAt;
  }

  /** True if `req` carries the cookie of a live session. */
  isLoggedIn(req: IncomingMessage): boolean {
    return this.expiryOf(req) !== undefined;
  }

  /** Ends the session `req`'s cookie names, if any. */
  end(req: IncomingMessage): void {
    const id = sessionIdOf(req);
    if (id) this.sessions.delete(id);
  }

  private prune(): void {
    const now = this.now();
    for (const [id, expiresAt] of this.sessions) if (expiresAt <= now) this.sessions.delete(id);
  }
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
