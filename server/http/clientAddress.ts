import type { IncomingMessage } from 'node:http';
import ipaddr from 'ipaddr.js';

/**
 * The address of the client behind a request (issue 12, item 4): the socket's peer, unless that
 * peer is a trusted proxy, in which case it is the right-most address of `X-Forwarded-For` that
 * is not itself a trusted proxy. Each proxy appends the address it received the request from, so
 * everything left of the first untrusted hop was written by someone we do not trust and is
 * ignored. A peer that is not a trusted proxy cannot choose its address: its header is ignored.
 *
 * Every limit keyed on an address (the spec API's and the widget's authentication failures, the
 * admin token's, uploads) takes it from {@link clientAddress}, never from `req.socket`.
 */
export class TrustedProxies {
  private readonly ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][];

  /** `cidrs`: validated by {@link assertTrustedProxies}; an empty list trusts no one. */
  constructor(cidrs: readonly string[]) {
    this.ranges = cidrs.map((c) => ipaddr.parseCIDR(c));
  }

  /** True if `address` (as a socket or X-Forwarded-For gives it) is in one of the ranges. */
  includes(address: string | undefined): boolean {
    const ip = parseAddress(address);
    if (!ip) return false;
    return this.ranges.some(([range, bits]) => ip.kind() === range.kind() && ip.match(range, bits));
  }

  /** The client's address for a request whose socket peer is `peer` (see the class comment). */
  resolve(peer: string | undefined, forwardedFor: string | string[] | undefined): string {
    const direct = normalize(peer) ?? 'unknown';
    if (this.ranges.length === 0 || !this.includes(peer)) return direct;
    // Several X-Forwarded-For lines are one list, in order (RFC 9110 5.3).
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : (forwardedFor ?? '')).split(',').map((h) => h.trim());
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      if (hop === '') continue;
      const ip = normalize(hop);
      // Garbage where an address should be: that hop cannot be believed, nor anything left of it.
      if (ip === undefined) return direct;
      if (!this.includes(ip)) return ip;
    }
    // Every hop was a trusted proxy (or there was no header): the request came from the proxies.
    return direct;
  }
}

/** Throws an Error naming `option` unless `list` is a list of CIDRs. */
export function assertTrustedProxies(option: string, list: unknown): void {
  if (!Array.isArray(list)) throw new Error(`Option ${option} must be a list of CIDRs.`);
  for (const cidr of list) {
    if (typeof cidr !== 'string' || !ipaddr.isValidCIDR(cidr)) throw new Error(`Option ${option}: "${String(cidr)}" is not a CIDR (like 10.0.0.1/32 or fd00::/8).`);
  }
}

const resolved = new WeakMap<IncomingMessage, string>();

/**
 * Works out the client's address of a request once, as it arrives (the server's request
 * listener, before any route), for {@link clientAddress}.
 */
export function noteClientAddress(req: IncomingMessage, proxies: TrustedProxies): void {
  resolved.set(req, proxies.resolve(req.socket.remoteAddress, req.headers['x-forwarded-for']));
}

/**
 * The client's address of a request: as {@link noteClientAddress} found it, or the socket's peer
 * for a request that did not go through it (an app mounted on another server, which then trusts
 * no proxy). `'unknown'` if the socket is already gone.
 */
export function clientAddress(req: IncomingMessage): string {
  return resolved.get(req) ?? normalize(req.socket.remoteAddress) ?? 'unknown';
}

/** IPv4-mapped IPv6 (`::ffff:10.0.0.1`) as IPv4; a bracketed or zone-less form as ipaddr parses it. */
function parseAddress(text: string | undefined): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (!text) return undefined;
  const t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!ipaddr.isValid(t)) return undefined;
  const ip = ipaddr.parse(t);
  return ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
}

/** An address in one canonical spelling (so that `::ffff:1.2.3.4` and `1.2.3.4` share a limit). */
function normalize(text: string | undefined): string | undefined {
  return parseAddress(text)?.toString();
}
