import type { Request, RequestHandler } from 'express';
import { ApiError } from '../errors.js';
import { CONSOLE_HEADER, type ConsoleSessions } from '../services/consoleSessions.js';
import { safeEqual } from '../services/tokens.js';

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
  if (!allowRemote && !isLoopback(req.socket.remoteAddress)) throw new ApiError('ADMIN_FORBIDDEN', 'start vop with --admin-remote to allow it');
}

/**
 * The admin API answers loopback callers only, unless the admin opened it to the LAN, and only
 * with the admin token as `Authorization: Bearer <token>`, or the console's session cookie
 * (services/consoleSessions.ts). A cookie request that changes anything must also carry
 * `X-Vop-Console: 1` (besides SameSite=Strict): another site can make a browser send a cookie,
 * not add a custom header.
 */
export function requireAdmin(opts: { token: string; allowRemote: boolean; sessions?: ConsoleSessions }): RequestHandler {
  return (req, _res, next) => {
    assertAdminAddress(req, opts.allowRemote);
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(header);
    if (!m && opts.sessions?.isLoggedIn(req)) {
      if (!SAFE_METHODS.has(req.method) && req.headers[CONSOLE_HEADER] !== '1') {
        throw new ApiError('ADMIN_UNAUTHORIZED', 'a change made with the console session must carry the X-Vop-Console: 1 header');
      }
      return next();
    }
    if (!m || !safeEqual(m[1]!.trim(), opts.token)) throw new ApiError('ADMIN_UNAUTHORIZED');
    next();
  };
}
