import os from 'node:os';
import net from 'node:net';
import type { RequestHandler } from 'express';
import { ApiError } from '../core/errors.js';

/**
 * The admin API and the console answer only to names this server is known by (issue 12, item 4:
 * DNS rebinding). A page on another site can have its own name resolve to this machine; the
 * browser then sends that name in `Host`, which is how the request is told apart from one the
 * admin made. Allowed: any IP address literal (a page served from an address is that address's
 * own origin), `localhost` and names under it, this machine's host name (also with `.local`,
 * `.lan` and `.home.arpa`), and the hosts of the public URL and of the script address.
 */
export function hostCheck(opts: OwnNamesOptions): RequestHandler {
  const isOwn = ownHostPredicate(opts);
  return (req, _res, next) => {
    if (isOwn(req.headers.host)) return next();
    const host = hostNameOf(req.headers.host);
    throw new ApiError(
      'ADMIN_FORBIDDEN',
      `this server does not answer the admin API or the console to the name "${host ?? ''}": use its address, localhost, or the name given as --public-url`,
    );
  };
}

export interface OwnNamesOptions {
  publicUrl?: string;
  scriptBaseUrl?: string;
  /** This machine's name; default os.hostname(). */
  hostname?: string;
}

/** Whether a Host header names this server (the rule of {@link hostCheck}). */
export function ownHostPredicate(opts: OwnNamesOptions): (hostHeader: string | undefined) => boolean {
  const names = new Set<string>();
  const machine = (opts.hostname ?? os.hostname()).toLowerCase();
  for (const suffix of ['', '.local', '.lan', '.home.arpa']) names.add(`${machine}${suffix}`);
  for (const url of [opts.publicUrl, opts.scriptBaseUrl]) {
    if (url) names.add(new URL(url).hostname.toLowerCase());
  }
  return (header) => {
    const host = hostNameOf(header);
    return host !== undefined && (net.isIP(host) !== 0 || host === 'localhost' || host.endsWith('.localhost') || names.has(host));
  };
}

/** The name in a Host header, lowercased, without its port or an IPv6 literal's brackets. */
function hostNameOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') > 0 ? h.indexOf(']') : undefined);
  const colon = h.lastIndexOf(':');
  return (colon >= 0 ? h.slice(0, colon) : h).replace(/\.$/, '');
}
