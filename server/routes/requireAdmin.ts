import type { Request, RequestHandler } from 'express';
import { ApiError } from '../core/errors.js';
import type { AdminTokenGate } from '../console/adminTokenGate.js';
import { CONSOLE_HEADER, type ConsoleSession, type ConsoleSessions } from '../console/consoleSessions.js';
import { clientAddress, isLoopback } from '../http/clientAddress.js';
import { assertSameOrigin } from '../http/sameOrigin.js';
import { EVENTS_PATH } from './adminEvents.js';
import { downloadTicketPurpose } from './adminBackups.js';

/**
 * The admin API's address rule, shared by requireAdmin and the login (routes/adminSession.ts):
 * loopback callers only, unless the admin started vop with --admin-remote.
 */
export function assertAdminAddress(req: Request, allowRemote: boolean): void {
  if (!allowRemote && !isLoopback(clientAddress(req))) throw new ApiError('ADMIN_FORBIDDEN', 'start vop with --admin-remote to allow it');
}

/**
 * What a request made with the console's cookie must show besides it, reads and changes alike
 * (here and in routes/adminSession.ts): the browser must not say another origin sent it
 * (http/sameOrigin.ts), and `X-Vop-Console` must carry the session's secret. The cookie alone is
 * never enough: it reaches every port of this host, so another web server here receives it and
 * can replay it with whatever headers it likes; the secret it cannot make.
 */
export function assertConsoleRequest(req: Request, sessions: ConsoleSessions, session: ConsoleSession, publicUrl: string | undefined): void {
  assertSameOrigin(req, publicUrl);
  if (sessions.holdsSecret(session, req.headers[CONSOLE_HEADER])) return;
  // EventSource cannot send a header: the stream alone takes a short-lived ticket in its URL.
  if (req.method === 'GET' && req.path === EVENTS_PATH && sessions.holdsTicket(session, req.query.ticket)) return;
  // Nor does a browser following a link: a backup's download takes a ticket for that backup.
  const download = req.method === 'GET' ? downloadTicketPurpose(req.path) : undefined;
  if (download && sessions.holdsTicket(session, req.query.ticket, download)) return;
  throw new ApiError('CONSOLE_SECRET_REQUIRED', "this page does not hold the console session's secret (X-Vop-Console): log in again");
}

/**
 * The admin API answers loopback callers only, unless the admin opened it to the LAN, and only
 * with the admin token as `Authorization: Bearer <token>`, or the console's session cookie
 * (console/consoleSessions.ts) with what {@link assertConsoleRequest} asks of it. A bearer token
 * is sent by a program that holds the token, never added by a browser on its own: it needs
 * neither the secret nor an origin.
 */
export function requireAdmin(opts: { gate: AdminTokenGate; allowRemote: boolean; sessions?: ConsoleSessions; publicUrl?: string }): RequestHandler {
  // Async (Express 5 hands a rejection to the error middleware): in cluster mode the session and
  // the failure count are in the database.
  return async (req, _res, next) => {
    assertAdminAddress(req, opts.allowRemote);
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(header);
    if (!m && opts.sessions) {
      const session = await opts.sessions.sessionOf(req);
      if (session) {
        assertConsoleRequest(req, opts.sessions, session, opts.publicUrl);
        return next();
      }
    }
    if (!m) throw new ApiError('ADMIN_UNAUTHORIZED');
    await opts.gate.check(m[1]!.trim(), clientAddress(req));
    next();
  };
}
