/**
 * The console's cookie is not enough on its own: cookies ignore ports, so any other web server
 * on this host receives it, and a page there can make the browser send it. A cookie request
 * must carry the session's own secret (handed out at login, never derivable from the cookie),
 * come from this server's own origin, and behind a TLS proxy the cookie is Secure and __Host-.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';

/** A request from a chosen local address (127.0.0.0/8 all reach a loopback listener on Linux). */
function requestFrom(
  localAddress: string,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? 'GET', headers: init.headers, localAddress, agent: false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(init.body);
  });
}

/** Logs in as the console does; the cookie as a browser would send it back, and the login's body. */
async function login(baseUrl: string): Promise<{ cookie: string; body: any; setCookie: string }> {
  const res = await fetch(`${baseUrl}/admin/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-vop-console': '1' },
    body: JSON.stringify({ token: ADMIN_TOKEN }),
  });
  expect(res.status).toBe(200);
  const setCookie = res.headers.get('set-cookie')!;
  return { cookie: setCookie.split(';')[0]!, body: await res.json(), setCookie };
}

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s?.close();
});

const createApp = (cookie: string, headers: Record<string, string>) =>
  fetch(`${s.baseUrl}/admin/api/apps`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ name: 'cross-port' }),
  });

describe('the console session secret', () => {
  it('refuses a cookie replayed with the constant X-Vop-Console: 1, or with none, with the envelope', async () => {
    const { cookie } = await login(s.baseUrl);
    for (const headers of [{ 'x-vop-console': '1' }, {}] as Record<string, string>[]) {
      const res = await createApp(cookie, headers);
      expect(res.status).toBe(401);
      const body = await res.json();
      expect(body.error.code).toBe('412');
      expect(body.error.message).toMatch(/log in again/);
    }
    expect((await s.admin.request('GET', '/apps')).body.apps.map((a: any) => a.name)).not.toContain('cross-port');
  });

  it('lets the cookie with its session secret create an application, and no other session secret', async () => {
    const a = await login(s.baseUrl);
    const b = await login(s.baseUrl);
    expect(a.body.consoleSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.body.consoleSecret).not.toBe(b.body.consoleSecret);
    expect(a.setCookie).not.toContain(a.body.consoleSecret);
    expect((await createApp(a.cookie, { 'x-vop-console': b.body.consoleSecret })).status).toBe(401);
    const made = await createApp(a.cookie, { 'x-vop-console': a.body.consoleSecret });
    expect(made.status).toBe(201);
    // Reads need it too: the other server a cookie reaches must not read the admin API either.
    const list = await fetch(`${s.baseUrl}/admin/api/apps`, { headers: { cookie: a.cookie } });
    expect(list.status).toBe(401);
    expect((await fetch(`${s.baseUrl}/admin/api/apps`, { headers: { cookie: a.cookie, 'x-vop-console': a.body.consoleSecret } })).status).toBe(200);
    // GET /session says whether this page holds the session's secret.
    const session = (secret?: string) =>
      fetch(`${s.baseUrl}/admin/api/session`, { headers: { cookie: a.cookie, ...(secret ? { 'x-vop-console': secret } : {}) } }).then((r) => r.json());
    expect((await session(a.body.consoleSecret)).loggedIn).toBe(true);
    expect((await session('1')).loggedIn).toBe(false);
    // A bearer token needs no secret.
    expect((await s.admin.request('POST', '/apps', { name: 'by the CLI' })).status).toBe(201);
  });

  it('makes its secrets with a random key kept by the server: a cookie and its secret test no guess of the admin token', async () => {
    const a = await login(s.baseUrl);
    const id = decodeURIComponent(a.cookie.slice(a.cookie.indexOf('=') + 1));
    // How the key was made before: from the admin token alone. Someone holding the cookie and
    // the secret could have tried tokens offline until this matched; now nothing matches.
    const fromToken = crypto.createHmac('sha256', ADMIN_TOKEN).update('vop console session secrets').digest();
    expect(crypto.createHmac('sha256', fromToken).update(`secret\0${id}`).digest('base64url')).not.toBe(a.body.consoleSecret);
    // The key is the console key ring's, rotated as the signing keys are: a rotation ends every session.
    const keys = await s.admin.request('GET', '/keys');
    expect(keys.body.console).toHaveLength(1);
    const withSecret = () => fetch(`${s.baseUrl}/admin/api/apps`, { headers: { cookie: a.cookie, 'x-vop-console': a.body.consoleSecret } });
    expect((await withSecret()).status).toBe(200);
    const rotated = await s.admin.request('POST', '/keys/console/rotate', {});
    expect(rotated.status).toBe(200);
    expect(rotated.body.keys[0].id).not.toBe(keys.body.console[0].id);
    expect((await withSecret()).status).toBe(401);
    const again = await login(s.baseUrl);
    expect((await fetch(`${s.baseUrl}/admin/api/apps`, { headers: { cookie: again.cookie, 'x-vop-console': again.body.consoleSecret } })).status).toBe(200);
  });

  it('refuses a cookie request another site or another port of this host sent, even with the secret', async () => {
    const { cookie, body } = await login(s.baseUrl);
    const secret = { 'x-vop-console': body.consoleSecret };
    for (const headers of [
      { 'sec-fetch-site': 'same-site' },
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'http://127.0.0.1:1' },
      { origin: 'http://evil.example' },
      { origin: 'null' },
    ] as Record<string, string>[]) {
      const res = await createApp(cookie, { ...secret, ...headers });
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect((await res.json()).error.code).toBe('413');
    }
    expect((await createApp(cookie, { ...secret, 'sec-fetch-site': 'same-origin', origin: s.baseUrl })).status).toBe(201);
    // The login and logout too: a login another port posts is refused before the token is read.
    const foreignLogin = await fetch(`${s.baseUrl}/admin/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-vop-console': '1', 'sec-fetch-site': 'same-site' },
      body: JSON.stringify({ token: ADMIN_TOKEN }),
    });
    expect(foreignLogin.status).toBe(403);
  });

  it('opens the event stream with a short-lived ticket of the session, not the cookie alone', async () => {
    const { cookie, body } = await login(s.baseUrl);
    expect((await fetch(`${s.baseUrl}/admin/api/events`, { headers: { cookie } })).status).toBe(401);
    const ticketRes = await fetch(`${s.baseUrl}/admin/api/events/ticket`, { method: 'POST', headers: { cookie, 'x-vop-console': body.consoleSecret } });
    expect(ticketRes.status).toBe(200);
    const { ticket } = await ticketRes.json();
    // Another session's cookie with this ticket: refused.
    const other = await login(s.baseUrl);
    expect((await fetch(`${s.baseUrl}/admin/api/events?ticket=${encodeURIComponent(ticket)}`, { headers: { cookie: other.cookie } })).status).toBe(401);
    // The ticket opens nothing else.
    expect((await fetch(`${s.baseUrl}/admin/api/apps?ticket=${encodeURIComponent(ticket)}`, { headers: { cookie } })).status).toBe(401);
    const abort = new AbortController();
    const stream = await fetch(`${s.baseUrl}/admin/api/events?ticket=${encodeURIComponent(ticket)}`, { headers: { cookie }, signal: abort.signal });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    abort.abort();
  });
});

describe('the session cookie behind a TLS proxy', () => {
  it('is not Secure over plain http', async () => {
    const { setCookie } = await login(s.baseUrl);
    expect(setCookie).toMatch(/^vop_console=/);
    expect(setCookie).not.toMatch(/Secure/i);
  });

  it('is Secure and __Host- when a trusted proxy says https, and not when anyone else does', async () => {
    const t = await startServer({ trustedProxies: ['127.0.0.1/32'], adminRemote: true });
    try {
      const loginFrom = (address: string) =>
        requestFrom(address, `${t.baseUrl}/admin/api/session`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-vop-console': '1', 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.9' },
          body: JSON.stringify({ token: ADMIN_TOKEN }),
        });
      const proxied = await loginFrom('127.0.0.1');
      expect(proxied.status).toBe(200);
      const cookie = String(proxied.headers['set-cookie']);
      expect(cookie).toMatch(/^__Host-vop_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200; Secure$/);
      expect(cookie).not.toMatch(/Domain/i);
      // The __Host- cookie is read back (through the proxy, with the session's secret).
      const list = await requestFrom('127.0.0.1', `${t.baseUrl}/admin/api/apps`, {
        headers: { cookie: cookie.split(';')[0]!, 'x-vop-console': proxied.body.consoleSecret, 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.9' },
      });
      expect(list.status).toBe(200);
      // A client that is not a listed proxy cannot claim https.
      const direct = await loginFrom('127.0.0.2');
      expect(direct.status).toBe(200);
      expect(String(direct.headers['set-cookie'])).toMatch(/^vop_console=/);
      expect(String(direct.headers['set-cookie'])).not.toMatch(/Secure/i);
    } finally {
      await t.close();
    }
  });
});
