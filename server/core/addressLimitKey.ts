import ipaddr from 'ipaddr.js';

/**
 * The key a per-address limit counts a client under: an IPv4 address as itself, an IPv6 address
 * as its /64. One IPv6 subscriber (a home line, a cloud VM) is routinely given a whole /64 and can
 * spread requests over 2^64 addresses at will; counted per address, each limit (failed logins and
 * tokens, connections per address) would be that many times looser. A /64 is what one such
 * holder gets, so it is one client here; an IPv4-mapped address counts as the IPv4 one.
 */
export function addressLimitKey(address: string): string {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(text)) return address;
  let ip = ipaddr.parse(text);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  if (ip.kind() === 'ipv4') return ip.toString();
  const parts = (ip as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}
