/**
 * Spec section 5 on every call, and the limits on failed authentications (issue 2, item 4).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_AUTH_OPTIONS, AuthService } from '../../server/auth/authService.js';
import type { AppRecord, AppStore } from '../../server/storage/types.js';
import { MemoryApiCallerStore } from '../../server/storage/memory/memoryApiCallers.js';
import { MemoryWindowCounters } from '../../server/storage/memory/memoryWindowCounters.js';
import { getFrom, nowSeconds, specToken, SpecClient } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { clearOfMinuteTurn } from '../helpers/wait.js';

const code = (r: { body: any }) => r.body?.AuthMsg?.ResultCode as string;
const message = (r: { body: any }) => r.body?.AuthMsg?.ResultMessage as string;

describe('authentication (spec section 5)', () => {
  let s: TestServer;
  let c: SpecClient;
  let videoId: string;
  beforeAll(async () => {
    // These tests fail on purpose many times from one address: keep the limits out of their way.
    const roomy = { windowMs: 60_000, maxFailures: 10_000 };
    s = await startServer({ auth: { ...DEFAULT_AUTH_OPTIONS, perAddress: roomy, perApp: roomy } });
    c = await s.newApp('auth');
    videoId = await c.register({ VideoTitle: 'auth target' });
  });
  afterAll(() => s.close());

  it('accepts the lowercase hex MD5 of Timestamp followed by the secret', async () => {
    const ts = nowSeconds();
    const token = specToken(ts, c.secret);
    expect(token).toMatch(/^[0-9a-f]{32}$/);
    const r = await c.get('/Api/Video/Get', { Id: videoId }, { AppId: c.appId, Timestamp: ts, Token: token });
    expect(r.status).toBe(200);
    expect(r.body.AuthMsg).toEqual({ ResultCode: '1', ResultMessage: 'OK' });
  });

  it('accepts the token in uppercase hex too', async () => {
    const ts = nowSeconds();
    const r = await c.get('/Api/Video/Get', { Id: videoId }, { AppId: c.appId, Timestamp: ts, Token: specToken(ts, c.secret).toUpperCase() });
    expect(code(r)).toBe('1');
  });

  it('reads AppId, Timestamp and Token without regard to case', async () => {
    const ts = nowSeconds();
    const r = await c.get('/Api/Video/Get', { Id: videoId }, { appid: c.appId, TIMESTAMP: ts, token: specToken(ts, c.secret) });
    expect(code(r)).toBe('1');
  });

  it('trims spaces around the three values', async () => {
    const ts = nowSeconds();
    const body = new URLSearchParams({ AppId: ` ${c.appId} `, Timestamp: ` ${ts}`, Token: `${specToken(ts, c.secret)}  `, VideoTitle: 't', SourceFileGetType: '1' });
    const res = await fetch(`${s.baseUrl}/Api/Video/Post`, { method: 'POST', body });
    expect((await res.json()).AuthMsg.ResultCode).toBe('1');
  });

  it('answers a wrong secret with 104 "App SecretKey Error" exactly, HTTP 200', async () => {
    const ts = nowSeconds();
    const r = await c.get('/Api/Video/Get', { Id: videoId }, { AppId: c.appId, Timestamp: ts, Token: specToken(ts, `${c.secret}x`) });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ AuthMsg: { ResultCode: '104', ResultMessage: 'App SecretKey Error' } });
  });

  it.each([
    ['a token of the wrong length', 'abc'],
    ['a token that is not hex', 'z'.repeat(32)],
    ['the MD5 of the secret followed by the timestamp', 'SWAPPED'],
  ])('answers %s with 104', async (_what, token) => {
    const ts = nowSeconds();
    const t = token === 'SWAPPED' ? specToken(c.secret, ts) : token;
    const r = await c.get('/Api/Video/Get', { Id: videoId }, { AppId: c.appId, Timestamp: ts, Token: t });
    expect(code(r)).toBe('104');
  });

  it('accepts a Timestamp 590 s ahead or behind', async () => {
    for (const offset of [590, -590]) {
      const r = await c.get('/Api/Video/GetList', {}, c.auth({ Timestamp: nowSeconds(offset) }));
      expect(code(r), `offset ${offset}`).toBe('1');
    }
  });

  it('refuses a Timestamp 610 s ahead or behind with 105', async () => {
    for (const offset of [610, -610]) {
      const r = await c.get('/Api/Video/GetList', {}, c.auth({ Timestamp: nowSeconds(offset) }));
      expect(r.status).toBe(200);
      expect(code(r), `offset ${offset}`).toBe('105');
      expect(message(r)).toMatch(/^Timestamp Expired/);
    }
  });

  it.each(['abc', '12.5', '-5', '1e9', '0x10', '１７００００００００', '1234567890123'])('refuses the malformed Timestamp %j with 103', async (ts) => {
    const r = await c.get('/Api/Video/GetList', {}, { AppId: c.appId, Timestamp: ts, Token: specToken(ts, c.secret) });
    expect(code(r)).toBe('103');
    expect(message(r)).toMatch(/^Timestamp Malformed/);
  });

  it.each(['AppId', 'Timestamp', 'Token'])('refuses a call without %s with 100, naming it', async (name) => {
    const auth = c.auth();
    delete auth[name];
    const r = await c.get('/Api/Video/GetList', {}, auth);
    expect(r.status).toBe(200);
    expect(code(r)).toBe('100');
    expect(message(r)).toBe(`Missing parameter: ${name}`);
    const empty = await c.get('/Api/Video/GetList', {}, { ...c.auth(), [name]: '' });
    expect(code(empty)).toBe('100');
  });

  it('refuses an unknown AppId with 101', async () => {
    const ts = nowSeconds();
    const r = await c.get('/Api/Video/GetList', {}, { AppId: 'f'.repeat(24), Timestamp: ts, Token: specToken(ts, c.secret) });
    expect(r.body).toEqual({ AuthMsg: { ResultCode: '101', ResultMessage: 'App Not Found' } });
  });

  it('refuses a disabled application with 102, and takes it back once enabled', async () => {
    const d = await s.newApp('to disable');
    expect(code(await d.get('/Api/Video/GetList'))).toBe('1');
    expect((await s.admin.request('PATCH', `/apps/${d.appId}`, { disabled: true })).status).toBe(200);
    const r = await d.get('/Api/Video/GetList');
    expect(r.body).toEqual({ AuthMsg: { ResultCode: '102', ResultMessage: 'App Disabled' } });
    expect(code(await d.post('/Api/Video/Post', { VideoTitle: 'x', SourceFileGetType: 1 }))).toBe('102');
    await s.admin.request('PATCH', `/apps/${d.appId}`, { disabled: false });
    expect(code(await d.get('/Api/Video/GetList'))).toBe('1');
  });

  it('stops accepting the old secret the moment it is rotated', async () => {
    const r0 = await s.newApp('to rotate');
    const rotated = await s.admin.request('POST', `/apps/${r0.appId}/secret`);
    expect(rotated.status).toBe(200);
    const old = await r0.get('/Api/Video/GetList');
    expect(code(old)).toBe('104');
    const fresh = new SpecClient(s.baseUrl, r0.appId, rotated.body.appSecret);
    expect(code(await fresh.get('/Api/Video/GetList'))).toBe('1');
  });

  it('checks the three values on every endpoint', async () => {
    const bad = c.auth({ Token: specToken(nowSeconds(), 'not the secret') });
    const calls = [
      c.get('/Api/Video/Get', { Id: videoId }, bad),
      c.get('/Api/Video', { Id: videoId }, bad),
      c.get('/Api/Video', {}, bad),
      c.get('/Api/Video/GetList', {}, bad),
      c.get('/Api/Video/GetUserVideoListByAId', { createUser: 'u', aId: c.appId }, bad),
      c.post('/Api/Video/Post', { VideoTitle: 't', SourceFileGetType: 1 }, bad),
      c.postMultipart('/Api/Video/Post', { VideoTitle: 't', SourceFileGetType: 1 }, bad),
    ];
    for (const r of await Promise.all(calls)) expect(r.body).toEqual({ AuthMsg: { ResultCode: '104', ResultMessage: 'App SecretKey Error' } });
  });

  it('reads POST credentials from the form (the form wins over the query)', async () => {
    const qs = new URLSearchParams(c.auth({ Token: '0'.repeat(32) })).toString();
    const body = new URLSearchParams({ ...c.auth(), VideoTitle: 'form wins', SourceFileGetType: '1' });
    const res = await fetch(`${s.baseUrl}/Api/Video/Post?${qs}`, { method: 'POST', body });
    expect((await res.json()).AuthMsg.ResultCode).toBe('1');
  });

  it('never reads a POST credential from the query string, where logs keep it (issue 12)', async () => {
    const qs = new URLSearchParams({ ...c.auth(), SourceFileGetType: '1' }).toString();
    const res = await fetch(`${s.baseUrl}/Api/Video/Post?${qs}`, { method: 'POST', body: new URLSearchParams({ VideoTitle: 'credential in the URL' }) });
    expect((await res.json()).AuthMsg).toEqual({ ResultCode: '100', ResultMessage: 'Missing parameter: AppId' });
  });
});

/** What AuthService uses of the stores, the counters and callers as the embedded mode keeps them. */
const embeddedAuthStores = (apps: AppStore) => ({ apps, counters: new MemoryWindowCounters(), apiCallers: new MemoryApiCallerStore() });

describe('the 600-second window, to the second (AuthService with a fixed clock)', () => {
  const app: AppRecord = { appId: 'a1', name: 'a', secret: 's3cret', callbackUrl: '', disabled: false, apiNetworks: [], createdAt: 0, updatedAt: 0 };
  const store = { get: async (id: string) => (id === app.appId ? app : undefined) } as unknown as AppStore;
  const now = 1_700_000_000_500; // half a second into a second: the server's whole seconds are 1_700_000_000
  const auth = new AuthService(embeddedAuthStores(store), DEFAULT_AUTH_OPTIONS, () => now);
  const creds = (ts: number) => ({ appId: 'a1', timestamp: String(ts), token: specToken(String(ts), app.secret) });

  it('accepts a difference of exactly 600 s either way', async () => {
    await expect(auth.check(creds(1_700_000_600))).resolves.toBe(app);
    await expect(auth.check(creds(1_699_999_400))).resolves.toBe(app);
  });

  it('refuses 601 s either way with 105', async () => {
    await expect(auth.check(creds(1_700_000_601))).rejects.toMatchObject({ code: '105' });
    await expect(auth.check(creds(1_699_999_399))).rejects.toMatchObject({ code: '105' });
  });

  it('forgets failures once the window has passed', async () => {
    let t = now;
    const limited = new AuthService(embeddedAuthStores(store), { ...DEFAULT_AUTH_OPTIONS, perAddress: { windowMs: 60_000, maxFailures: 2 } }, () => t);
    const bad = { appId: 'a1', timestamp: String(Math.floor(now / 1000)), token: 'x' };
    await expect(limited.authenticate(bad, '10.0.0.1')).rejects.toMatchObject({ code: '104' });
    await expect(limited.authenticate(bad, '10.0.0.1')).rejects.toMatchObject({ code: '104' });
    await expect(limited.authenticate(bad, '10.0.0.1')).rejects.toMatchObject({ code: '106' });
    t += 60_001;
    const good = creds(Math.floor(t / 1000));
    await expect(limited.authenticate(good, '10.0.0.1')).resolves.toBe(app);
  });
});

describe('limits on failed authentications (106)', () => {
  it('refuses failing calls from an address past its failure limit with 106, lets valid ones through, while other addresses go on', async () => {
    const s = await startServer({ auth: { ...DEFAULT_AUTH_OPTIONS, perAddress: { windowMs: 60_000, maxFailures: 3 }, perApp: { windowMs: 60_000, maxFailures: 1000 } } });
    try {
      const c = await s.newApp();
      const badUrl = `${s.baseUrl}/Api/Video/GetList?${c.query({}, c.auth({ Token: '0'.repeat(32) }))}`;
      const goodUrl = () => `${s.baseUrl}/Api/Video/GetList?${c.query()}`;
      await clearOfMinuteTurn(5_000); // the failures below count in one clock minute
      for (let i = 0; i < 3; i++) expect((await getFrom('127.0.0.2', badUrl)).body.AuthMsg.ResultCode).toBe('104');
      const limited = await getFrom('127.0.0.2', badUrl);
      expect(limited.status).toBe(200);
      expect(limited.body.AuthMsg).toMatchObject({ ResultCode: '106' });
      expect(limited.body.AuthMsg.ResultMessage).toMatch(/^Too Many Failed Authentications/);
      // Valid credentials still pass from that address (issue 12, item 4): behind a proxy or a
      // NAT the real application server shares it with whoever fails.
      expect((await getFrom('127.0.0.2', goodUrl())).body.AuthMsg.ResultCode).toBe('1');
      expect((await getFrom('127.0.0.2', badUrl)).body.AuthMsg.ResultCode).toBe('106');
      // The application itself, calling from its own address, is not affected.
      expect((await getFrom('127.0.0.1', goodUrl())).body.AuthMsg.ResultCode).toBe('1');
      expect((await getFrom('127.0.0.3', badUrl)).body.AuthMsg.ResultCode).toBe('104');
    } finally {
      await s.close();
    }
  });

  it('answers failing calls for a hammered AppId with 106 while a valid token still passes', async () => {
    const s = await startServer({ auth: { ...DEFAULT_AUTH_OPTIONS, perAddress: { windowMs: 60_000, maxFailures: 1000 }, perApp: { windowMs: 60_000, maxFailures: 3 } } });
    try {
      const c = await s.newApp('hammered');
      const other = await s.newApp('bystander');
      const bad = () => c.auth({ Token: specToken(nowSeconds(), 'guess') });
      await clearOfMinuteTurn(5_000); // the failures below count in one clock minute
      for (let i = 0; i < 3; i++) expect(code(await c.get('/Api/Video/GetList', {}, bad()))).toBe('104');
      expect(code(await c.get('/Api/Video/GetList', {}, bad()))).toBe('106');
      expect(code(await c.get('/Api/Video/GetList'))).toBe('1');
      expect(code(await c.post('/Api/Video/Post', { VideoTitle: 'still works', SourceFileGetType: 1 }))).toBe('1');
      expect(code(await c.get('/Api/Video/GetList', {}, bad()))).toBe('106');
      // Another application's failures are counted on their own.
      expect(code(await other.get('/Api/Video/GetList', {}, other.auth({ Token: '0'.repeat(32) })))).toBe('104');
    } finally {
      await s.close();
    }
  });

  it('never limits a caller whose calls succeed', async () => {
    const tight = { windowMs: 60_000, maxFailures: 2 };
    const s = await startServer({ auth: { ...DEFAULT_AUTH_OPTIONS, perAddress: tight, perApp: tight } });
    try {
      const c = await s.newApp();
      const codes = await Promise.all(Array.from({ length: 40 }, () => c.get('/Api/Video/GetList').then(code)));
      expect(codes).toEqual(Array(40).fill('1'));
    } finally {
      await s.close();
    }
  });
});
