import dns from 'node:dns';
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * Address classes a pull never connects to, whatever the allow list says. The IPv6 transition
 * forms (SIIT `::ffff:0:a.b.c.d`, NAT64 prefixes other than the well-known /96, which
 * embeddedIPv4 decodes and judges as IPv4, 6to4, Teredo) reach an IPv4 address wherever a translator runs,
 * and no file server is published that way: refused rather than decoded.
 */
const REFUSED_RANGES = new Set(['unspecified', 'broadcast', 'multicast', 'rfc6145', 'rfc6052', '6to4', 'teredo']);

/**
 * Address classes a pull connects to only when an `allow` CIDR names the address (issue 12,
 * item 6): this machine's own services (a blind oracle on them, and internal media made
 * playable) and link-local ones. Private LAN ranges stay allowed: a LAN product pulls from LAN
 * file servers.
 */
const OPT_IN_RANGES = new Set(['loopback', 'linkLocal']);

/**
 * Cloud metadata services: they hand out credentials to whoever asks from inside the machine.
 * Refused even when an allow CIDR covers them (169.254.0.0/16 opted in for a link-local camera).
 */
const METADATA_ADDRESSES = ['169.254.169.254', '169.254.170.2', 'fd00:ec2::254', '100.100.100.200'].map((a) => ipaddr.parse(a));
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal']);

/** A host and the one address a pull connects to, checked by {@link PullPolicy}. */
export interface CheckedAddress {
  address: string;
  family: 4 | 6;
}

/** Why a source was refused; the message is kept as the video's reason. */
export class RefusedAddressError extends Error {
  override name = 'RefusedAddressError';
  /** @param allowable An `allow` CIDR naming the address would let the pull through (the setting to name). */
  constructor(
    message: string,
    readonly allowable = false,
  ) {
    super(message);
  }
}

export type LookupAll = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

const systemLookup: LookupAll = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/**
 * Which addresses a pull may connect to (issue 3 item 6, issue 12 item 6). Private LAN and public
 * addresses are allowed by default; loopback and link-local ones only when an `allow` CIDR names
 * them; multicast, unspecified, broadcast and cloud metadata addresses never. `deny` CIDRs
 * narrow all of that: an address in one of them is refused, even if allowed.
 */
export class PullPolicy {
  private parsed: { allow: string[]; deny: string[]; nets: { allow: Array<[Address, number]>; deny: Array<[Address, number]> } } | undefined;

  /**
   * `opts` is read at each check, so a list the console replaces (settings/savedSettings.ts)
   * applies to the next pull without a restart; it is parsed again only when replaced.
   */
  constructor(
    private readonly opts: { allow: string[]; deny: string[] },
    private readonly lookup: LookupAll = systemLookup,
  ) {}

  private get allow(): Array<[Address, number]> {
    return this.nets().allow;
  }

  private get deny(): Array<[Address, number]> {
    return this.nets().deny;
  }

  private nets() {
    const { allow, deny } = this.opts;
    if (this.parsed?.allow !== allow || this.parsed.deny !== deny) {
      this.parsed = { allow, deny, nets: { allow: allow.map((c) => ipaddr.parseCIDR(c)), deny: deny.map((c) => ipaddr.parseCIDR(c)) } };
    }
    return this.parsed.nets;
  }

  /** Why `address` (an IP literal) is refused, or undefined if a pull may connect to it. */
  refusal(address: string): string | undefined {
    let ip: Address;
    try {
      ip = ipaddr.parse(address);
    } catch {
      return `"${address}" is not an IP address`;
    }
    // An IPv6 form of an IPv4 address (::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d, the old
    // IPv4-compatible ::a.b.c.d) may reach that IPv4 address: judge the IPv4 address.
    const v4 = embeddedIPv4(ip);
    const judged = v4 ?? ip;
    const range = judged.range();
    if (REFUSED_RANGES.has(range)) return `refused address ${address} (${range})`;
    if (METADATA_ADDRESSES.some((m) => m.kind() === judged.kind() && m.toNormalizedString() === judged.toNormalizedString())) {
      return `refused address ${address} (cloud metadata service)`;
    }
    const inList = (list: Array<[Address, number]>) => list.some(([net, bits]) => net.kind() === judged.kind() && judged.match(net, bits));
    if (this.deny.length > 0 && inList(this.deny)) return `refused address ${address} (in ingest.pull.deny)`;
    if (OPT_IN_RANGES.has(range) && !inList(this.allow)) return `refused address ${address} (${range}; ${howToAllow(judged)})`;
    return undefined;
  }

  /**
   * Resolves `hostname` (every address it has) and checks each one. If any is refused the host
   * is refused: DNS answers can be mixed on purpose. Resolves with the address to connect to.
   */
  async resolve(hostname: string): Promise<CheckedAddress> {
    const host = hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
    if (METADATA_HOSTS.has(host)) throw new RefusedAddressError(`refused host ${host} (cloud metadata service)`);
    let addresses: Array<{ address: string; family: number }>;
    if (ipaddr.isValid(host)) {
      addresses = [{ address: host, family: ipaddr.parse(host).kind() === 'ipv4' ? 4 : 6 }];
    } else {
      addresses = await this.lookup(host);
      if (addresses.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
    }
    for (const a of addresses) {
      const why = this.refusal(a.address);
      if (why) throw new RefusedAddressError(`${why}${host === a.address ? '' : ` for host ${host}`}`, this.wantsAllow(a.address));
    }
    const first = addresses[0]!;
    return { address: first.address, family: first.family === 6 ? 6 : 4 };
  }

  /** The same rules with every address opted in: what an `allow` entry could let through. */
  private allowingAll: PullPolicy | undefined;

  /** Whether `address` is refused only for want of an `allow` CIDR that names it. */
  wantsAllow(address: string): boolean {
    this.allowingAll ??= new PullPolicy({ allow: ['0.0.0.0/0', '::/0'], deny: this.opts.deny }, this.lookup);
    return this.refusal(address) !== undefined && this.allowingAll.refusal(address) === undefined;
  }
}

/**
 * What opts `ip` in, in the words an operator can act on: the setting by its documented names
 * (the option, the start flag and variable, the console's field, whose label is
 * SETTING_LABELS.pullAllow) and a CIDR to give it. The flag and the variable are read at start;
 * whether the console's list applies at once is the Settings page's to say, so nothing here
 * promises or demands a restart for it.
 */
function howToAllow(ip: Address): string {
  const cidr = `${ip.toString()}/${ip.kind() === 'ipv4' ? 32 : 128}`;
  return (
    `to pull from it, allow a CIDR that holds it, such as ${cidr}: start vop with --pull-allow ${cidr} ` +
    `(or VOP_PULL_ALLOW=${cidr}, or the option ingest.pull.allow), ` +
    `or add it to the pull allow-list in the console's Settings (Pull: allowed networks)`
  );
}

function embeddedIPv4(ip: Address): ipaddr.IPv4 | undefined {
  if (ip.kind() !== 'ipv6') return undefined;
  const v6 = ip as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address();
  const p = v6.parts;
  const nat64 = p[0] === 0x64 && p[1] === 0xff9b && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0;
  // IPv4-compatible (::a.b.c.d, deprecated by RFC 4291 but still parsed): a.b.c.d, except :: and ::1.
  const compatible = p.slice(0, 6).every((x) => x === 0) && !(p[6] === 0 && p[7]! <= 1);
  if (nat64 || compatible) return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
  return undefined;
}

/** Addresses of each opt-in class: an allow entry that holds none of them opts nothing in. */
const OPT_IN_PROBES = ['127.0.0.1', '::1', '169.254.1.1', 'fe80::1'].map((a) => ipaddr.parse(a));

/**
 * The `allow` entries that hold no loopback or link-local address. Before issue 12 `allow`
 * narrowed the policy (an address had to be in it); now it only opts those classes in, so such an
 * entry, saved to keep pulls on the LAN, narrows nothing any more: the caller warns about it.
 */
export function allowEntriesThatNarrowNothing(allow: string[]): string[] {
  return allow.filter((cidr) => {
    const [net, bits] = ipaddr.parseCIDR(cidr);
    return !OPT_IN_PROBES.some((p) => p.kind() === net.kind() && p.match(net, bits));
  });
}
