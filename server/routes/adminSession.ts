import express, { type Request, type Router } from 'express';
import { ApiError } from '../errors.js';
import { SAFE_METHODS, assertAdminAddress } from '../http/adminAuth.js';
import { CONSOLE_HEADER, sessionCookie, type ConsoleSessions } from '../services/consoleSessions.js';
import { FailureLimiter, type FailureLimitOptions } from '../services/failureLimiter.js';
import { safeEqual } from '../services/tokens.js';

export interface AdminSessionDeps {
  token: string;
  allowRemote: boolean;
  sessions: ConsoleSessions;
  /** Wrong tokens allowed per address before logins from it are refused for a while. */
  loginLimit?: FailureLimitOptions;
}

const DEFAULT_LOGIN_LIMIT: FailureLimitOptions = { windowMs: 60_000, maxFailures: 10 };

/**
 * The headless console's login (`/admin/api/session`), mounted before requireAdmin:
 *
 *   POST   /session {token}  the admin token → an HttpOnly, SameSite=Strict session cookie
 *   GET    /session          {loggedIn, expiresAt}
 *   DELETE /session          logs out
 *
 * POST and DELETE need `X-Vop-Console: 1` like every cookie change. The admin API's address rule
 * (loopback only unless --admin-remote) applies here too.
 */
export function adminSessionRouter(deps: AdminSessionDeps): Router {
  const { sessions } = deps;
  const failures = new FailureLimiter(deps.loginLimit ?? DEFAULT_LOGIN_LIMIT);
  const r = express.Router();
  r.use((req, _res, next) => {
    assertAdminAddress(req, deps.allowRemote);
    if (!SAFE_METHODS.has(req.method) && req.headers[CONSOLE_HEADER] !== '1') {
      throw new ApiError('ADMIN_UNAUTHORIZED', 'the console must send the X-Vop-Console: 1 header');
    }
    next();
  });
  r.use(express.json({ limit: 4096 }));

  r.post('/', (req, res) => {
    const address = req.socket.remoteAddress ?? 'unknown';
    if (failures.isLimited(address)) throw new ApiError('TOO_MANY_AUTH_FAILURES', 'too many wrong admin tokens from this address; wait a minute');
    const token = (req.body as Record<string, unknown> | undefined)?.token;
    if (typeof token !== 'string' || token.trim() === '') throw new ApiError('ADMIN_UNAUTHORIZED', 'enter the admin token');
    if (!safeEqual(token.trim(), deps.token)) {
      failures.recordFailure(address);
      throw new ApiError('ADMIN_UNAUTHORIZED', 'that is not the admin token');
    }
    const { id, expiresAt } = sessions.create();
    res.set('Set-Cookie', sessionCookie(id, Math.floor(sessions.ttlMs / 1000), isSecure(req)));
    res.json({ loggedIn: true, expiresAt: new Date(expiresAt).toISOString() });
  });

  r.get('/', (req, res) => {
    const expiresAt = sessions.expiryOf(req);
    res.json({ loggedIn: expiresAt !== undefined, expiresAt: expiresAt === undefined ? null : new Date(expiresAt).toISOString() });
  });

  r.delete('/', (req, res) => {
    sessions.end(req);
    res.set('Set-Cookie', sessionCookie('', 0, isSecure(req)));
    res.status(204).end();
  });
  return r;
}

/** Secure cookies only over https (a LAN install on plain http would otherwise never log in). */
function isSecure(req: Request): boolean {
  return req.secure;
}
