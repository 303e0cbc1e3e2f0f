/**
 * The data directory made and checked, and the admin token read or made in it, before anything
 * else is opened there.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ServerOptions } from '../config.js';
import { ADMIN_TOKEN_MIN_BITS, tokenStrengthBits } from '../core/tokens.js';
import { loadOrCreateSecret } from '../storage/secretFile.js';
import { warningLine } from '../core/logLines.js';

/** Makes the data directory (0700) if need be, warns of one too open and of a weak token; gives the admin token. */
export function prepareDataDir(options: ServerOptions): string {
  const { log } = options;
  fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const loose = looseDataDir(options.dataDir);
  if (loose) log(warningLine(loose));
  const adminToken = options.adminToken ?? loadOrCreateAdminToken(options.dataDir);
  const weak = options.adminToken === undefined ? undefined : weakAdminToken(options.adminToken);
  if (weak) log(warningLine(weak));
  return adminToken;
}

/**
 * What the log says of an admin token given that is easy to guess, or undefined for one that is
 * not. Never the token itself: the line ends up in logs.
 */
export function weakAdminToken(token: string): string | undefined {
  const bits = tokenStrengthBits(token);
  if (bits >= ADMIN_TOKEN_MIN_BITS) return undefined;
  return (
    `the admin token given holds about ${bits} bits of guessing, fewer than ${ADMIN_TOKEN_MIN_BITS}: whoever guesses it ` +
    'runs the admin API. Give 22 or more random characters (openssl rand -base64 24), or leave it out and vop makes one.'
  );
}

/**
 * The admin token when none is configured: generated on first start, kept in the data dir,
 * readable by the owner only.
 */
function loadOrCreateAdminToken(dataDir: string): string {
  return loadOrCreateSecret(path.join(dataDir, 'admin-token'), newAdminToken, (text) => text.length >= 16);
}

/**
 * A new admin token: 24 random bytes in base64url, never beginning with '-', which an operator's
 * `--admin-token <token>` would have read as an option (one token in 64 did).
 */
export function newAdminToken(): string {
  for (;;) {
    const token = crypto.randomBytes(24).toString('base64url');
    if (!token.startsWith('-')) return token;
  }
}

/**
 * Why a data directory is too open, if it is (issue 12): it holds the admin token, the database
 * with every application's secret, and the media. One made by vop is 0700; one that existed
 * before may be anything. Windows has no such mode bits.
 */
export function looseDataDir(dir: string): string | undefined {
  if (process.platform === 'win32') return undefined;
  const mode = fs.statSync(dir).mode & 0o777;
  if ((mode & 0o077) === 0) return undefined;
  return `the data directory ${path.resolve(dir)} can be read or entered by other users (mode ${mode.toString(8)}); it holds the admin token, the applications' secrets and the media: chmod 700 it.`;
}
