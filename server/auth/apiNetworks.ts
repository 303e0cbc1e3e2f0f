import ipaddr from 'ipaddr.js';
import { ApiError } from '../core/errors.js';

/**
 * An application's API caller networks (issue 12, item 1). The widget's page gets AppId,
 * Timestamp and Token (spec section 5), and those are a full API credential for ten minutes.
 * The spec says API calls come from the application's server: an application that lists its
 * servers' networks has its API calls (4.1 to 4.4, `POST /Api/Video/Upload`) refused from
 * anywhere else, while the browser paths those values open (the upload page, tus with the
 * page's credential) keep working from any address. Empty: any address, as before.
 */

/** At most this many networks per application: it is a list of servers, not a geo-filter. */
export const MAX_API_NETWORKS = 32;

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * The networks as given (an array of CIDRs or bare addresses, or null for none), checked and
 * written the one way they are stored: `10.0.0.0/8`, `2001:db8::/32`; a bare address becomes
 * its /32 or /128. Throws INVALID_PARAMETER naming the bad entry.
 */
export function validApiNetworks(v: unknown): string[] {
  if (v === null) return [];
  if (!Array.isArray(v) || !v.every((n) => typeof n === 'string')) {
    throw new ApiError('INVALID_PARAMETER', 'apiNetworks must be an array of CIDRs (like 203.0.113.0/24 or 2001:db8::/32)');
  }
  const out: string[] = [];
  for (const raw of v as string[]) {
    const s = raw.trim();
    if (s === '') continue;
    const network = normalizeNetwork(s);
    if (!network) throw new ApiError('INVALID_PARAMETER', `apiNetworks: "${s.slice(0, 60)}" is not a CIDR (like 203.0.113.0/24 or 2001:db8::/32) nor an address`);
    if (!out.includes(network)) out.push(network);
  }
  if (out.length > MAX_API_NETWORKS) throw new ApiError('INVALID_PARAMETER', `apiNetworks: at most ${MAX_API_NETWORKS} networks`);
  return out;
}

function normalizeNetwork(s: string): string | undefined {
  if (s.length > 60) return undefined;
  let ip: Address;
  let bits: number;
  try {
    if (s.includes('/')) [ip, bits] = ipaddr.parseCIDR(s);
    else (ip = ipaddr.parse(s)), (bits = ip.kind() === 'ipv4' ? 32 : 128);
  } catch {
    return undefined;
  }
  // ipaddr.parse also takes forms like "10.1" or "0x0a.0.0.1"; only the usual notation is stored.
  if (ip.kind() === 'ipv4' && !ipaddr.IPv4.isValidFourPartDecimal(s.split('/')[0]!)) return undefined;
  // A client reaching us over IPv4 on a dual-stack socket shows as ::ffff:a.b.c.d and is matched
  // as IPv4 (see clientIp): an IPv4-mapped range is kept as the IPv4 range it means.
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    ip = (ip as ipaddr.IPv6).toIPv4Address();
    bits -= 96;
  }
  const network = ip.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(`${ip.toString()}/${bits}`) : ipaddr.IPv6.networkAddressFromCIDR(`${ip.toString()}/${bits}`);
  return `${network.toString()}/${bits}`;
}

/** The client address as a socket (or a trusted proxy) gives it, IPv4-mapped IPv6 as IPv4. */
function clientIp(address: string): Address | undefined {
  try {
    return ipaddr.process(address);
  } catch {
    return undefined;
  }
}

/** True if `networks` is empty (any address) or `address` is inside one of them. */
export function inApiNetworks(address: string, networks: readonly string[]): boolean {
  if (networks.length === 0) return true;
  const ip = clientIp(address);
  if (!ip) return false;
  return networks.some((n) => {
    const [range, bits] = ipaddr.parseCIDR(n);
    return range.kind() === ip.kind() && ip.match(range, bits);
  });
}

/** The address written as one network entry (its /32 or /128), for "allow these". */
export function hostNetwork(address: string): string | undefined {
  const ip = clientIp(address);
  return ip ? `${ip.toString()}/${ip.kind() === 'ipv4' ? 32 : 128}` : undefined;
}

/** One address an application's API calls came from (the console's suggestion). */
export interface ApiCaller {
  /** As the server saw it (IPv4-mapped IPv6 written as IPv4). */
  address: string;
  /** Unix milliseconds of its latest call. */
  lastSeen: number;
  /** Whether that call was inside the application's networks. */
  allowed: boolean;
}

/**
 * A caller's address as the recent callers keep it (ApiCallerStore): IPv4-mapped IPv6 written as
 * IPv4, anything unparsable cut to 64 characters.
 */
export function shownAddress(address: string): string {
  return clientIp(address)?.toString() ?? address.slice(0, 64);
}
