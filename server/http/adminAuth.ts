import type { Request, RequestHandler } from 'express';
import { ApiError } from '../errors.js';
import { addressLimitKey } from '../services/addressLimitKey.js';
import { CONSOLE_HEADER, type ConsoleSessions } from '../services/consoleSessions.js';
import { FailureLimiter, type FailureLimitOptions } from '../services/failureLimiter.js';
import { safeEqual } from '../services/tokens.js';
import type { WindowCounters } from '../storage/types.js';
import { clientAddress } from './clientAddress.js';

/** True for 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || /^127\.\d+\.\d+\.\d+$/.test(a);
}

/**
 * Methods that change nothing: a cookie alone may authorise them; every other method sent with
 * the console's cookie must carry `X-Vop-Console: 1` (here and in routes/adminSession.ts).
 */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The admin API's address rule, shared by requireAdmin and the login (routes/adminSession.ts):
 * loopback callers only, unless the admin started vop with --admin-remote.
 */
export function assertAdminAddress(req: Request, allowRemote: boolean): void {
  if (!allowRemote && !isLoopback(clientAddress(req))) throw new ApiError('ADMIN_FORBIDDEN', 'start vop with --admin-remote to allow it');
}

/** Wrong admin tokens allowed per address and minute, by the console's login and bearer tokens together. */
export const DEFAULT_ADMIN_TOKEN_LIMIT: FailureLimitOptions = { windowMs: 60_000, maxFailures: 10 };

/**
 * The one check of the admin token, for the console's login and the `Authorization: Bearer`
 * header alike, with one failure limit per address (issue 12, item 4). The right token always
 * passes, even from an address past its limit: whoever guesses from the admin's own address (a
 * shared proxy, the same machine) must not lock the admin out. A wrong one from such an address
 * gets 106 (429).
 *
 * In cluster mode the failures count in the database (`shared`, Stores.counters), so the limit
 * is one for all nodes together, not one per node (issue 11, item 5); the embedded mode counts in
 * this process. The right token is recognised before any counting: it never waits for the
 * database, and still passes while the database is unreachable.
 */
export class AdminTokenGate {
  private readonly failures: FailureLimiter;

  /** `shared`: counters every node of a cluster sees; absent, failures count in this process. */
  constructor(
    private readonly token: string,
    private readonly limit: FailureLimitOptions = DEFAULT_ADMIN_TOKEN_LIMIT,
    private readonly shared?: WindowCounters,
  ) {
    this.failures = new FailureLimiter(limit);
  }

  /** Resolves if `candidate` is the token; rejects with ADMIN_UNAUTHORIZED (with `wrong` as the detail) or TOO_MANY_AUTH_FAILURES. */
  async check(candidate: string, address: string, wrong?: string): Promise<void> {
    if (safeEqual(candidate, this.token)) return;
    if (!this.shared) return this.verifyHere(candidate, address, wrong);
    // One upsert that counts this failure and answers the count with it: two nodes failing the
    // same address at once each see the other's failure, so exactly `maxFailures` get 401.
    const failures = await this.shared.hit(sharedKey(address), this.limit.windowMs);
    if (failures > this.limit.maxFailures) throw tooMany();
    throw new ApiError('ADMIN_UNAUTHORIZED', wrong);
  }

  /** The embedded mode's check: failures counted in this process. */
  private verifyHere(candidate: string, address: string, wrong?: string): void {
    if (safeEqual(candidate, this.token)) return;
    // Counted per /64 for IPv6 (services/addressLimitKey.ts).
    const key = addressLimitKey(address);
    if (this.failures.isLimited(key)) throw tooMany();
    this.failures.recordFailure(key);
    throw new ApiError('ADMIN_UNAUTHORIZED', wrong);
  }
}

/** The shared counter of wrong admin tokens from `address` (per /64 for IPv6: services/addressLimitKey.ts). */
function sharedKey(address: string): string {
  return `admin-token-failures:${addressLimitKey(address)}`;
}

function tooMany(): ApiError {
  return new ApiError('TOO_MANY_AUTH_FAILURES', 'too many wrong admin tokens from this address; wait a minute');
}

/**
 * The admin API answers loopback callers only, unless the admin opened it to the LAN, and only
 * with the admin token as `Authorization: Bearer <token>`, or the console's session cookie
 * (services/consoleSessions.ts). A cookie request that changes anything must also carry
 * `X-Vop-Console: 1` (besides SameSite=Strict): another site can make a browser send a cookie,
 * not add a custom header.
 */
export function requireAdmin(opts: { gate: AdminTokenGate; allowRemote: boolean; sessions?: ConsoleSessions }): RequestHandler {
  // Async (Express 5 hands a rejection to the error middleware): in cluster mode the session and
  // the failure count are in the database.
  return async (req, _res, next) => {
    assertAdminAddress(req, opts.allowRemote);
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(header);
    if (!m && opts.sessions && (await opts.sessions.isLoggedIn(req))) {
      if (!SAFE_METHODS.has(req.method) && req.headers[CONSOLE_HEADER] !== '1') {
        throw new ApiError('ADMIN_UNAUTHORIZED', 'a change made with the console session must carry the X-Vop-Console: 1 header');
      }
      return next();
    }
    if (!m) throw new ApiError('ADMIN_UNAUTHORIZED');
    await opts.gate.check(m[1]!.trim(), clientAddress(req));
    next();
  };
}
