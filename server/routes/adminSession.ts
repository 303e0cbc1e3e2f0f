import express, { type Router } from 'express';
import { ApiError } from '../core/errors.js';
import { clientAddress, isHttpsRequest } from '../http/clientAddress.js';
import { assertSameOrigin } from '../http/sameOrigin.js';
import type { AdminTokenGate } from '../console/adminTokenGate.js';
import { assertAdminAddress, assertConsoleRequest } from './requireAdmin.js';
import { CONSOLE_HEADER, clearedSessionCookies, sessionCookie, type ConsoleSessions } from '../console/consoleSessions.js';
import { knownFields } from '../http/knownFields.js';

export interface AdminSessionDeps {
  /** The admin token's check, shared with requireAdmin's bearer tokens (one failure limit). */
  gate: AdminTokenGate;
  allowRemote: boolean;
  sessions: ConsoleSessions;
  /** The public URL, whose origin is this server's own besides the one a request names in Host. */
  publicUrl?: string;
}

/**
 * The headless console's login (`/admin/api/session`), mounted before requireAdmin:
 *
 *   POST   /session {token}  the admin token → an HttpOnly, SameSite=Strict session cookie, and
 *                            the session's secret in the body (`consoleSecret`), for the console
 *                            to send as `X-Vop-Console` on every request
 *   GET    /session          {loggedIn, expiresAt}: loggedIn only with the cookie and its secret
 *   DELETE /session          logs out (with the secret, like every request of the session)
 *
 * None of them is answered to a request the browser says another origin sent, and the login
 * needs an `X-Vop-Console` header (a form cannot add one). The admin API's address rule
 * (loopback only unless --admin-remote) applies here too.
 */
export function adminSessionRouter(deps: AdminSessionDeps): Router {
  const { sessions } = deps;
  const r = express.Router();
  r.use((req, _res, next) => {
    assertAdminAddress(req, deps.allowRemote);
    assertSameOrigin(req, deps.publicUrl);
    next();
  });
  r.use(express.json({ limit: 4096 }));

  r.post('/', async (req, res) => {
    // Before the token is read: a page elsewhere must not log this browser in (or count failures
    // against the admin's address) with a plain form, which cannot add a header.
    if (!req.headers[CONSOLE_HEADER]) throw new ApiError('ADMIN_UNAUTHORIZED', 'the console must send the X-Vop-Console header');
    const { token } = knownFields(req.body, ['token']);
    if (typeof token !== 'string' || token.trim() === '') throw new ApiError('ADMIN_UNAUTHORIZED', 'enter the admin token');
    await deps.gate.check(token.trim(), clientAddress(req), 'that is not the admin token');
    const { id, expiresAt, secret } = await sessions.create();
    res.set('Set-Cookie', sessionCookie(id, Math.floor(sessions.ttlMs / 1000), isHttpsRequest(req)));
    res.set('Cache-Control', 'no-store');
    res.json({ loggedIn: true, expiresAt: new Date(expiresAt).toISOString(), consoleSecret: secret });
  });

  r.get('/', async (req, res) => {
    // A live cookie without the secret is no login this page can use: it logs in again.
    const session = await sessions.sessionOf(req);
    const usable = session !== undefined && sessions.holdsSecret(session, req.headers[CONSOLE_HEADER]);
    res.json({ loggedIn: usable, expiresAt: usable ? new Date(session.expiresAt).toISOString() : null });
  });

  r.delete('/', async (req, res) => {
    const session = await sessions.sessionOf(req);
    if (session) {
      assertConsoleRequest(req, sessions, session, deps.publicUrl);
      // Ended in the store, so on every node at once (cluster mode), not only here.
      await sessions.end(req);
    }
    res.set('Set-Cookie', clearedSessionCookies(isHttpsRequest(req)));
    res.status(204).end();
  });
  return r;
}
