import type { RequestHandler } from 'express';
import { ApiError } from '../errors.js';
import { safeEqual } from '../services/tokens.js';

/** True for 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || /^127\.\d+\.\d+\.\d+$/.test(a);
}

/**
 * The admin API answers loopback callers only, unless the admin opened it to the LAN, and only
 * with the admin token as `Authorization: Bearer <token>`.
 */
export function requireAdmin(opts: { token: string; allowRemote: boolean }): RequestHandler {
  return (req, _res, next) => {
    if (!opts.allowRemote && !isLoopback(req.socket.remoteAddress)) throw new ApiError('ADMIN_FORBIDDEN', 'start vop with --admin-remote to allow it');
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(header);
    if (!m || !safeEqual(m[1]!.trim(), opts.token)) throw new ApiError('ADMIN_UNAUTHORIZED');
    next();
  };
}
