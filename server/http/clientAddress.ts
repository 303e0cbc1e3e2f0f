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
    if (this.ranges.length === 0) return false;
    const ip = parseAddress(address);
    if (!ip) return false;
    return this.ranges.some(([range, bits]) => ip.kind() === range.kind() && ip.match(range, bits));
  }

  /** The client's address for a request whose socket peer is `peer` (see the class comment). */
  resolve(peer: string | undefined, forwardedFor: string | string[] | undefined): string {
    const direct = normalize(peer) ?? UNKNOWN_CLIENT;
    if (this.ranges.length === 0 || !this.includes(peer)) return direct;
    return this.behind(direct, forwardedFor);
  }

  /** The client's address for a request from `direct`, a trusted proxy, that says `forwardedFor`. */
  behind(direct: string, forwardedFor: string | string[] | undefined): string {
    // Several X-Forwarded-For lines are one list, in order (RFC 9110 5.3).
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : (forwardedFor ?? '')).split(',').map((h) => h.trim());
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      if (hop === '') continue;
      const ip = normalize(hop);
      // Garbage where an address should be (`zz`, `1.2.3.4:5555`): that hop cannot be believed,
      // nor anything left of it, and the client is not the proxy either (which may be on
      // loopback, where the admin API answers): it is a remote client whose address is unknown.
      if (ip === undefined) return UNKNOWN_CLIENT;
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

/** A connection's peer, as {@link noteClientAddress} found it at its first request. */
interface Peer {
  /** The peer's address, normalized. */
  address: string;
  /** The server's trusted proxies if the peer is one of them (its requests name their client); undefined otherwise. */
  proxies: TrustedProxies | undefined;
}

const peers = new WeakMap<object, Peer>();

/**
 * Notes the peer of a request's connection, at its first request (the server's request listener,
 * before any route), for {@link clientAddress}. Once per connection, not per request: parsing
 * and checking the peer's address on every request was about 2% of a small media answer's CPU
 * (issue 14), and a keep-alive connection's peer does not change. Only a trusted proxy's
 * requests are looked at one by one, and only when something asks ({@link clientAddress}).
 * Noted while the socket is open: once it is closed Node no longer knows its peer.
 */
export function noteClientAddress(req: IncomingMessage, proxies: TrustedProxies): void {
  const socket = req.socket;
  if (peers.has(socket)) return;
  const peer = socket.remoteAddress;
  peers.set(socket, { address: normalize(peer) ?? UNKNOWN_CLIENT, proxies: proxies.includes(peer) ? proxies : undefined });
}

/**
 * The client's address of a request: its connection's peer as {@link noteClientAddress} found it,
 * or, when that peer is a trusted proxy, the address its X-Forwarded-For names. The socket's peer
 * for a request that did not go through noteClientAddress (an app mounted on another server,
 * which then trusts no proxy). `'unknown'` if the socket is already gone.
 */
export function clientAddress(req: IncomingMessage): string {
  const peer = peers.get(req.socket);
  if (!peer) return normalize(req.socket.remoteAddress) ?? UNKNOWN_CLIENT;
  return peer.proxies ? peer.proxies.behind(peer.address, req.headers['x-forwarded-for']) : peer.address;
}

/**
 * Whether the client reached us over TLS: the connection is TLS itself, or it comes from a trusted
 * proxy (the same judgement as {@link clientAddress}: the peer as {@link noteClientAddress} found
 * it) whose `X-Forwarded-Proto` says `https`. From any other peer the header is ignored: a client
 * that talks to vop directly could write it. Every entry must say `https`: a proxy that appends
 * to the list rather than setting it leaves a client's own `https` at the left of its `http`,
 * and a hop that says `http` carried the request in clear.
 */
export function isHttpsRequest(req: IncomingMessage): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted) return true;
  if (!peers.get(req.socket)?.proxies) return false;
  const header = req.headers['x-forwarded-proto'];
  if (header === undefined) return false;
  const entries = (Array.isArray(header) ? header.join(',') : header).split(',').map((p) => p.trim().toLowerCase());
  return entries.every((p) => p === 'https');
}

/** What a request's client address is when a trusted proxy's header names none that can be read. */
export const UNKNOWN_CLIENT = 'unknown';

/**
 * IPv4-mapped (`::ffff:10.0.0.1`) and IPv4-compatible (`::10.0.0.1`) IPv6 as IPv4, so that neither
 * spelling passes for another address than the IPv4 one (`::127.0.0.1` is loopback); a bracketed
 * or zone-less form as ipaddr parses it.
 */
function parseAddress(text: string | undefined): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (!text) return undefined;
  const t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!ipaddr.isValid(t)) return undefined;
  const ip = ipaddr.parse(t);
  if (ip.kind() !== 'ipv6') return ip;
  const v6 = ip as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address();
  const p = v6.parts;
  const compatible = p.slice(0, 6).every((x) => x === 0) && !(p[6] === 0 && p[7]! <= 1);
  return compatible ? new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]) : v6;
}

/** An address in one canonical spelling (so that `::ffff:1.2.3.4` and `1.2.3.4` share a limit). */
function normalize(text: string | undefined): string | undefined {
  return parseAddress(text)?.toString();
}

/** True for 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || /^127\.\d+\.\d+\.\d+$/.test(a);
}
