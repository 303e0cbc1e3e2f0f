import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { TrustedProxies, UNKNOWN_CLIENT } from '../../server/http/clientAddress.js';
import { resolveOptions } from '../../server/config.js';
import { parseStartArgs } from '../../server/startArgs.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { clearOfMinuteTurn } from '../helpers/wait.js';

/**
 * A request from a chosen local address (any of 127.0.0.0/8 reaches a loopback listener on
 * Linux), with the headers a proxy would add. 127.0.0.1 plays the proxy; 127.0.0.2 a client
 * that talks to vop directly and writes its own X-Forwarded-For.
 */
function requestFrom(
  localAddress: string,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; agent?: http.Agent } = {},
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? 'GET', headers: init.headers, localAddress, agent: init.agent ?? false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // tus answers in plain text
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(init.body);
  });
}

describe('TrustedProxies.resolve', () => {
  const p = new TrustedProxies(['10.0.0.0/24', 'fd00::/64']);

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', () => {
    expect(p.resolve('198.51.100.7', '203.0.113.1')).toBe('198.51.100.7');
    expect(new TrustedProxies([]).resolve('10.0.0.1', '203.0.113.1')).toBe('10.0.0.1');
  });

  it('takes the right-most address that is not a trusted proxy, whatever the client wrote to its left', () => {
    expect(p.resolve('10.0.0.1', '203.0.113.1')).toBe('203.0.113.1');
    expect(p.resolve('10.0.0.1', '1.1.1.1, 203.0.113.1, 10.0.0.9')).toBe('203.0.113.1');
    expect(p.resolve('::ffff:10.0.0.1', ['1.1.1.1', '203.0.113.1'])).toBe('203.0.113.1');
    expect(p.resolve('fd00::5', '2001:db8::1')).toBe('2001:db8::1');
  });

  it('keeps the peer when the header is absent or all proxies', () => {
    expect(p.resolve('10.0.0.1', undefined)).toBe('10.0.0.1');
    expect(p.resolve('10.0.0.1', '10.0.0.2, 10.0.0.3')).toBe('10.0.0.1');
    expect(p.resolve('::ffff:198.51.100.7', undefined)).toBe('198.51.100.7');
  });

  it('takes garbage at the first untrusted hop for an unknown client, never for the proxy itself', () => {
    for (const header of ['203.0.113.1, not-an-address', '10.9.9.9, zz', '1.2.3.4:5555', '203.0.113.1, 10.0.0.9, [::1]:80']) {
      expect(p.resolve('10.0.0.1', header), header).toBe(UNKNOWN_CLIENT);
    }
    expect(new TrustedProxies(['127.0.0.1/32']).resolve('127.0.0.1', '10.9.9.9, zz')).toBe(UNKNOWN_CLIENT);
  });

  it('reads the IPv4-compatible and IPv4-mapped IPv6 spellings as the IPv4 address', () => {
    expect(p.resolve('10.0.0.1', '::127.0.0.1')).toBe('127.0.0.1');
    expect(p.resolve('10.0.0.1', '::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(p.resolve('::10.0.0.1', '203.0.113.1')).toBe('203.0.113.1');
    // :: and ::1 are themselves, not 0.0.0.0 and 0.0.0.1.
    expect(p.resolve('10.0.0.1', '::1')).toBe('::1');
  });

  it('is set by --trusted-proxies or VOP_TRUSTED_PROXIES, and a bad CIDR is refused by name', () => {
    expect(parseStartArgs(['--trusted-proxies', '10.0.0.5/32, fd00::/8']).options.trustedProxies).toEqual(['10.0.0.5/32', 'fd00::/8']);
    expect(parseStartArgs([], { VOP_TRUSTED_PROXIES: '192.168.1.2/32' }).options.trustedProxies).toEqual(['192.168.1.2/32']);
    expect(parseStartArgs([], {}).options.trustedProxies).toBeUndefined();
    expect(resolveOptions({ dataDir: '/tmp/x' }).trustedProxies).toEqual([]);
    expect(() => resolveOptions({ dataDir: '/tmp/x', trustedProxies: ['10.0.0.5'] })).toThrow(/trustedProxies: "10.0.0.5" is not a CIDR/);
  });
});

describe('limits keyed on the client address behind a proxy (issue 12, item 4)', () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const start = (trustedProxies: string[], extra: Record<string, unknown> = {}) =>
    startServer({ trustedProxies, auth: { maxClockSkewSeconds: 600, perAddress: { windowMs: 60_000, maxFailures: 3 }, perApp: { windowMs: 60_000, maxFailures: 1000 } }, ...extra });

  /** A spec call with a wrong token, as ResultCode: 104 until the address is past its limit, then 106. */
  async function badCall(s: TestServer, appId: string, from: string, forwardedFor?: string): Promise<string> {
    const q = new URLSearchParams({ AppId: appId, Timestamp: String(Math.floor(Date.now() / 1000)), Token: '0'.repeat(32) });
    const res = await requestFrom(from, `${s.baseUrl}/Api/Video/GetList?${q}`, { headers: forwardedFor ? { 'X-Forwarded-For': forwardedFor } : {} });
    return res.body.AuthMsg.ResultCode;
  }

  it('behind a trusted proxy, two forwarded clients do not share a lockout; a spoofed left-most hop changes nothing', async () => {
    t = await start(['127.0.0.1/32']);
    const c = await t.newApp();
    await clearOfMinuteTurn(5_000); // the failures below count in one clock minute
    for (let i = 0; i < 3; i++) expect(await badCall(t, c.appId, '127.0.0.1', '203.0.113.1')).toBe('104');
    expect(await badCall(t, c.appId, '127.0.0.1', '203.0.113.1')).toBe('106');
    // What the client wrote left of the proxy's entry is not its address.
    expect(await badCall(t, c.appId, '127.0.0.1', '198.51.100.50, 203.0.113.1')).toBe('106');
    // Another client behind the same proxy is not locked out, and a good call passes.
    expect(await badCall(t, c.appId, '127.0.0.1', '203.0.113.2')).toBe('104');
    const good = await requestFrom('127.0.0.1', `${t.baseUrl}/Api/Video/GetList?${c.query()}`, { headers: { 'X-Forwarded-For': '203.0.113.2' } });
    expect(good.body.AuthMsg.ResultCode).toBe('1');
  });

  it('on one kept-alive connection, each request of a trusted proxy is its own client; an untrusted peer stays itself', async () => {
    // The peer is noted once per connection (issue 14): what its requests forward must still be read per request.
    t = await start(['127.0.0.1/32']);
    const c = await t.newApp();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    agent.on('free', (socket) => sockets.add(socket));
    try {
      const call = async (forwardedFor: string) => {
        const q = new URLSearchParams({ AppId: c.appId, Timestamp: String(Math.floor(Date.now() / 1000)), Token: '0'.repeat(32) });
        return (await requestFrom('127.0.0.1', `${t!.baseUrl}/Api/Video/GetList?${q}`, { headers: { 'X-Forwarded-For': forwardedFor }, agent })).body.AuthMsg.ResultCode;
      };
      await clearOfMinuteTurn(5_000); // the failures below count in one clock minute
      for (let i = 0; i < 3; i++) expect(await call('203.0.113.7')).toBe('104');
      expect(await call('203.0.113.7')).toBe('106');
      expect(await call('203.0.113.8')).toBe('104');
      expect(await call('203.0.113.7')).toBe('106');
      expect(sockets.size).toBe(1); // all of it on one connection
      // From a peer that is no proxy, a kept-alive connection's forwarded addresses are all ignored.
      const other = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const direct = async (forwardedFor: string) => {
          const q = new URLSearchParams({ AppId: c.appId, Timestamp: String(Math.floor(Date.now() / 1000)), Token: '0'.repeat(32) });
          return (await requestFrom('127.0.0.2', `${t!.baseUrl}/Api/Video/GetList?${q}`, { headers: { 'X-Forwarded-For': forwardedFor }, agent: other })).body.AuthMsg.ResultCode;
        };
        await clearOfMinuteTurn(5_000); // the failures below count in one clock minute
        for (let i = 0; i < 3; i++) expect(await direct(`198.51.100.${i}`)).toBe('104');
        expect(await direct('198.51.100.99')).toBe('106');
      } finally {
        other.destroy();
      }
    } finally {
      agent.destroy();
    }
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy: it cannot escape its own lockout', async () => {
    t = await start(['127.0.0.1/32']);
    const c = await t.newApp();
    await clearOfMinuteTurn(5_000); // the failures below count in one clock minute
    for (let i = 0; i < 3; i++) expect(await badCall(t, c.appId, '127.0.0.2', `203.0.113.${10 + i}`)).toBe('104');
    expect(await badCall(t, c.appId, '127.0.0.2', '203.0.113.99')).toBe('106');
  });

  it('with no trusted proxies (the default), the header is ignored and clients behind one address share it', async () => {
    t = await start([]);
    const c = await t.newApp();
    await clearOfMinuteTurn(5_000); // the failures below count in one clock minute
    for (let i = 0; i < 3; i++) expect(await badCall(t, c.appId, '127.0.0.1', '203.0.113.1')).toBe('104');
    expect(await badCall(t, c.appId, '127.0.0.1', '203.0.113.2')).toBe('106');
  });

  it('keys the tus creation (spec values as metadata) on the forwarded client too', async () => {
    t = await start(['127.0.0.1/32']);
    const c = await t.newApp();
    const videoId = await c.register();
    const create = (forwardedFor: string) => {
      const meta = { appId: c.appId, timestamp: String(Math.floor(Date.now() / 1000)), token: '0'.repeat(32), videoId };
      const header = Object.entries(meta).map(([k, v]) => `${k} ${Buffer.from(v).toString('base64')}`).join(',');
      return requestFrom('127.0.0.1', `${t!.baseUrl}/upload/tus`, {
        method: 'POST',
        headers: { 'Tus-Resumable': '1.0.0', 'Upload-Length': '1000', 'Upload-Metadata': header, 'X-Forwarded-For': forwardedFor },
      });
    };
    await clearOfMinuteTurn(5_000); // the failures below count in one clock minute
    for (let i = 0; i < 3; i++) expect((await create('203.0.113.1')).body).toMatch(/ErrorCode : 104/);
    const limited = await create('203.0.113.1');
    expect(limited.status).toBe(429);
    expect(limited.body).toMatch(/ErrorCode : 106/);
    expect((await create('203.0.113.2')).body).toMatch(/ErrorCode : 104/);
  });

  it('keys the admin token limit on the forwarded client, and applies the loopback rule to it', async () => {
    t = await start(['127.0.0.1/32'], { adminRemote: true });
    const login = (forwardedFor: string, token: string) =>
      requestFrom('127.0.0.1', `${t!.baseUrl}/admin/api/session`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Vop-Console': '1', 'X-Forwarded-For': forwardedFor },
        body: JSON.stringify({ token }),
      });
    for (let i = 0; i < 10; i++) expect((await login('203.0.113.1', 'wrong-token-wrong-token')).status).toBe(401);
    expect((await login('203.0.113.1', 'wrong-token-wrong-token')).status).toBe(429);
    expect((await login('203.0.113.2', 'wrong-token-wrong-token')).status).toBe(401);
    expect((await login('203.0.113.1', ADMIN_TOKEN)).status).toBe(200);
    // /healthz's admin details share the gate, and its key: ten wrong tokens there from a third
    // client lock that client's login, and only that client's.
    for (let i = 0; i < 10; i++) {
      const probe = await requestFrom('127.0.0.1', `${t.baseUrl}/healthz`, { headers: { authorization: 'Bearer wrong-token-wrong-token', 'X-Forwarded-For': '203.0.113.3' } });
      expect(probe.body).toEqual({ status: 'ok' });
    }
    expect((await login('203.0.113.3', 'wrong-token-wrong-token')).status).toBe(429);
    expect((await login('203.0.113.4', 'wrong-token-wrong-token')).status).toBe(401);
    await t.close();

    // Without --admin-remote, a remote client forwarded by a local proxy is not a local caller.
    t = await start(['127.0.0.1/32']);
    const forwarded = await requestFrom('127.0.0.1', `${t.baseUrl}/admin/api/apps`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'X-Forwarded-For': '203.0.113.1' } });
    expect(forwarded.status).toBe(403);
    // An unreadable forwarded address from that proxy is a remote client too, not the proxy.
    for (const header of ['10.9.9.9, zz', '1.2.3.4:5555']) {
      const garbled = await requestFrom('127.0.0.1', `${t.baseUrl}/admin/api/apps`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'X-Forwarded-For': header } });
      expect(garbled.status, header).toBe(403);
    }
    const local = await requestFrom('127.0.0.1', `${t.baseUrl}/admin/api/apps`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(local.status).toBe(200);
  });
});
