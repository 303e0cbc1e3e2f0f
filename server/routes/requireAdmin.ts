import type { Request, RequestHandler } from 'express';
import { ApiError } from '../core/errors.js';
import type { AdminTokenGate } from '../console/adminTokenGate.js';
import { CONSOLE_HEADER, type ConsoleSessions } from '../console/consoleSessions.js';
import { clientAddress, isLoopback } from '../http/clientAddress.js';

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

/**
 * The admin API answers loopback callers only, unless the admin opened it to the LAN, and only
 * with the admin token as `Authorization: Bearer <token>`, or the console's session cookie
 * (console/consoleSessions.ts). A cookie request that changes anything must also carry
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
