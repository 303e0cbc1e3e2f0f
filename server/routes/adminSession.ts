import express, { type Request, type Router } from 'express';
import { ApiError } from '../core/errors.js';
import { clientAddress } from '../http/clientAddress.js';
import type { AdminTokenGate } from '../console/adminTokenGate.js';
import { SAFE_METHODS, assertAdminAddress } from './requireAdmin.js';
import { CONSOLE_HEADER, sessionCookie, type ConsoleSessions } from '../console/consoleSessions.js';
import { knownFields } from '../http/knownFields.js';

export interface AdminSessionDeps {
  /** The admin token's check, shared with requireAdmin's bearer tokens (one failure limit). */
  gate: AdminTokenGate;
  allowRemote: boolean;
  sessions: ConsoleSessions;
}

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
  const r = express.Router();
  r.use((req, _res, next) => {
    assertAdminAddress(req, deps.allowRemote);
    if (!SAFE_METHODS.has(req.method) && req.headers[CONSOLE_HEADER] !== '1') {
      throw new ApiError('ADMIN_UNAUTHORIZED', 'the console must send the X-Vop-Console: 1 header');
    }
    next();
  });
  r.use(express.json({ limit: 4096 }));

  r.post('/', async (req, res) => {
    const { token } = knownFields(req.body, ['token']);
    if (typeof token !== 'string' || token.trim() === '') throw new ApiError('ADMIN_UNAUTHORIZED', 'enter the admin token');
    await deps.gate.check(token.trim(), clientAddress(req), 'that is not the admin token');
    const { id, expiresAt } = await sessions.create();
    res.set('Set-Cookie', sessionCookie(id, Math.floor(sessions.ttlMs / 1000), isSecure(req)));
    res.json({ loggedIn: true, expiresAt: new Date(expiresAt).toISOString() });
  });

  r.get('/', async (req, res) => {
    const expiresAt = await sessions.expiryOf(req);
    res.json({ loggedIn: expiresAt !== undefined, expiresAt: expiresAt === undefined ? null : new Date(expiresAt).toISOString() });
  });

  r.delete('/', async (req, res) => {
    // Ended in the store, so on every node at once (cluster mode), not only here.
    await sessions.end(req);
    res.set('Set-Cookie', sessionCookie('', 0, isSecure(req)));
    res.status(204).end();
  });
  return r;
}

/** Secure cookies only over https (a LAN install on plain http would otherwise never log in). */
function isSecure(req: Request): boolean {
  return req.secure;
}
