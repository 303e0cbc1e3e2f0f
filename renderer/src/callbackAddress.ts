/**
 * Whether a callback address sends callbacks unencrypted across networks (issue 12, item 2): plain
 * `http://` to a host that is not on this machine or the LAN. On a LAN, plain http is how most
 * application servers listen and the traffic stays inside; anywhere else the callback (its
 * signature, the video ids) crosses networks readable by anyone on the way.
 */
export function isPlainHttpOffLan(address: string): boolean {
  let url: URL;
  try {
    url = new URL(address.trim());
  } catch {
    return false; // not an address yet; the server says what is wrong with it
  }
  if (url.protocol !== 'http:') return false;
  return !isLanHost(url.hostname);
}

/** Loopback, private and link-local addresses, and the names only a LAN resolves. */
function isLanHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    return a === 10 || a === 127 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254) || (a === 100 && b >= 64 && b <= 127);
  }
  if (host.includes(':')) return host === '::1' || /^f[cd][0-9a-f]{2}:/.test(host) || /^fe[89ab][0-9a-f]:/.test(host);
  // A single-label name (intranet) or one of the suffixes reserved for local networks.
  return !host.includes('.') || /\.(local|lan|home\.arpa|internal|localdomain|localhost)$/.test(host) || host === 'localhost';
}
