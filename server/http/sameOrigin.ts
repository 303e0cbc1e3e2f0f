import type { IncomingMessage } from 'node:http';
import { ApiError } from '../core/errors.js';
import { isHttpsRequest } from './clientAddress.js';

/**
 * Refuses a request that the browser says another origin sent; for requests a browser makes with
 * the console's cookie (requireAdmin, the console's login). A cookie names a host, not a port, so
 * a page served by any other web server on this host is "same-site" to the browser and gets the
 * cookie sent along: only the origin tells the console's own requests apart.
 *
 * - `Sec-Fetch-Site` (Fetch Metadata): `same-origin` and `none` (the person typed the address)
 *   pass; `same-site` (another port or another subdomain) and `cross-site` are refused.
 * - `Origin`: when present it must be this server's own, the scheme and host:port the request
 *   was sent to (`Host`), or the public URL's. `null` (a sandboxed frame, a redirect across
 *   origins) is refused. Over TLS (by the socket or a trusted proxy's `X-Forwarded-Proto`) only
 *   `https` is ours; otherwise either scheme is, since a TLS proxy left out of the trusted list
 *   still forwards `https` origins, and the port in `Host` already tells servers apart.
 *
 * A client that is not a browser can leave both headers out: what stops it is the session's
 * secret (console/consoleSessions.ts), which this check does not replace.
 */
export function assertSameOrigin(req: IncomingMessage, publicUrl: string | undefined): void {
  const site = header(req, 'sec-fetch-site')?.toLowerCase();
  if (site === 'cross-site' || site === 'same-site') {
    throw new ApiError('CROSS_ORIGIN_REFUSED', `a page of another ${site === 'same-site' ? 'port or subdomain of this host' : 'site'} may not use the console's session`);
  }
  const origin = header(req, 'origin');
  if (origin === undefined) return;
  if (!isOwnOrigin(req, origin, publicUrl)) throw new ApiError('CROSS_ORIGIN_REFUSED', `the console's session is not for requests from ${JSON.stringify(origin.slice(0, 200))}`);
}

function isOwnOrigin(req: IncomingMessage, origin: string, publicUrl: string | undefined): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null`, or not an origin at all
  }
  if (publicUrl && url.origin === new URL(publicUrl).origin) return true;
  if (url.protocol !== 'https:' && (url.protocol !== 'http:' || isHttpsRequest(req))) return false;
  const host = req.headers.host?.trim().toLowerCase();
  if (!host) return false;
  try {
    // Read with the origin's scheme, so that a default port is left out on both sides alike.
    return url.host === new URL(`${url.protocol}//${host}`).host;
  } catch {
    return false;
  }
}

/** A header's value; a repeated one as its values joined, which then matches no single value. */
function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}
