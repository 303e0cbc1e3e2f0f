/**
 * Issue 12 item 1: an application's API caller networks. The widget's page gets AppId,
 * Timestamp and Token, a full API credential for ten minutes; with `apiNetworks` set, the spec's
 * API calls (4.1 to 4.4, `POST /Api/Video/Upload`) are refused from elsewhere, while what the
 * page's values legitimately open (the upload page, tus with its credential) works from anywhere.
 *
 * Two clients with distinct addresses: on Linux any of 127.0.0.0/8 reaches a loopback listener,
 * so requests are sent from 127.0.0.2 (the application's server) and 127.0.0.3 (a browser).
 */
import fs from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../server/cli.js';
import { shownAddress, validApiNetworks } from '../../server/auth/apiNetworks.js';
import { MemoryApiCallerStore } from '../../server/storage/memory/memoryApiCallers.js';
import { type SpecClient, specToken, nowSeconds } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { waitForIngest } from '../helpers/ingest.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';

const SERVER = '127.0.0.2';
const BROWSER = '127.0.0.3';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

/** One request from `localAddress`, on a connection of its own. */
function from(localAddress: string, url: string, init: { method?: string; headers?: Record<string, string>; body?: Buffer | string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? 'GET', headers: init.headers, localAddress, agent: false, timeout: 15_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: any;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} in 15 s`)));
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A spec call from `localAddress`: GET with the values in the query, POST as a form. */
function specCall(localAddress: string, c: SpecClient, method: 'GET' | 'POST', path: string, params: Record<string, string | number> = {}, auth = c.auth()): Promise<Answer> {
  const fields = new URLSearchParams({ ...auth, ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])) }).toString();
  return method === 'GET'
    ? from(localAddress, `${c.baseUrl}${path}?${fields}`)
    : from(localAddress, `${c.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: fields });
}

/** `POST /Api/Video/Upload` from `localAddress`: the fields, then the file. */
async function multipartFrom(localAddress: string, c: SpecClient, videoId: string, file: string): Promise<Answer> {
  const form = new FormData();
  for (const [k, v] of Object.entries({ ...c.auth(), VideoId: videoId })) form.append(k, v);
  form.append('file', new Blob([fs.readFileSync(file)], { type: 'video/mp4' }), 'clip.mp4');
  const encoded = new Request('http://x/', { method: 'POST', body: form });
  const body = Buffer.from(await encoded.arrayBuffer());
  return from(localAddress, `${c.baseUrl}/Api/Video/Upload`, { method: 'POST', headers: { 'content-type': encoded.headers.get('content-type')!, 'content-length': String(body.length) }, body });
}

const code = (a: Answer) => a.body?.AuthMsg?.ResultCode as string | undefined;

/** Registers a video (spec 4.2) from the application server's address; returns its id. */
async function registerFrom(localAddress: string, c: SpecClient): Promise<string> {
  const r = await specCall(localAddress, c, 'POST', '/Api/Video/Post', { VideoTitle: 'A video', SourceFileGetType: 1 });
  if (code(r) !== '1') throw new Error(`register failed: ${r.text}`);
  return r.body.VideoId as string;
}

describe('apiNetworks: validation (auth/apiNetworks.ts)', () => {
  it('writes each network one way: a bare address is its /32 or /128, host bits are cleared, IPv4-mapped is IPv4', () => {
    expect(validApiNetworks([' 203.0.113.7 ', '10.1.2.3/8', '2001:DB8::1/32', '::1', '::ffff:192.0.2.0/120', '10.0.0.0/8', ''])).toEqual([
      '203.0.113.7/32',
      '10.0.0.0/8',
      '2001:db8::/32',
      '::1/128',
      '192.0.2.0/24',
    ]);
    expect(validApiNetworks(null)).toEqual([]);
    expect(validApiNetworks([])).toEqual([]);
  });

  it('refuses what is not a list of CIDRs, naming the bad entry', () => {
    for (const bad of ['10.0.0.0/8', [1], [null], ['10.0.0.0/33'], ['example.com'], ['10.1'], ['0x0a.0.0.1/32'], ['1.2.3.4/8/1'], [''.padEnd(100, '1')]]) {
      expect(() => validApiNetworks(bad), JSON.stringify(bad)).toThrow(/apiNetworks/);
    }
    expect(() => validApiNetworks(Array.from({ length: 33 }, (_, i) => `10.0.${i}.0/24`))).toThrow(/at most 32/);
  });
});

describe('recent API callers (the console\'s suggestion)', () => {
  it('keeps the last 8 distinct addresses per application, newest first, IPv4-mapped written as IPv4', async () => {
    // The embedded mode's store, given addresses as AuthService shows them.
    const callers = new MemoryApiCallerStore();
    const note = (appId: string, address: string, allowed: boolean, at: number) => callers.record(appId, shownAddress(address), allowed, at);
    await note('a', '::ffff:10.0.0.1', true, 1);
    await note('a', '::ffff:10.0.0.1', false, 2);
    expect(await callers.recent('a')).toEqual([{ address: '10.0.0.1', lastSeen: 2, allowed: false }]);
    for (let i = 2; i <= 12; i++) await note('a', `10.0.0.${i}`, true, 10 + i);
    await note('a', '10.0.0.9', true, 100);
    const seen = await callers.recent('a');
    expect(seen.map((c) => c.address)).toEqual(['10.0.0.9', '10.0.0.12', '10.0.0.11', '10.0.0.10', '10.0.0.8', '10.0.0.7', '10.0.0.6', '10.0.0.5']);
    expect(seen[0]!.lastSeen).toBe(100);
    expect(await callers.recent('b')).toEqual([]);
    seen[0]!.address = 'changed';
    expect((await callers.recent('a'))[0]!.address).toBe('10.0.0.9');
  });
});

describe('apiNetworks over HTTP', () => {
  let s: TestServer;
  let c: SpecClient;
  let clip: string;
  beforeAll(async () => {
    s = await startServer();
    c = await s.newApp('networks');
    clip = await makeClip({ seconds: 1 });
  });
  afterAll(() => s?.close());

  const setNetworks = async (apiNetworks: unknown) => s.admin.request('PATCH', `/apps/${c.appId}`, { apiNetworks });

  it('the admin API sets, shows and clears them; bad input is a 400 that changes nothing', async () => {
    expect((await s.admin.request('GET', `/apps/${c.appId}`)).body).toMatchObject({ apiNetworks: [], recentCallers: [] });
    const set = await setNetworks(['127.0.0.2', '10.9.8.7/8']);
    expect(set.status).toBe(200);
    expect(set.body.apiNetworks).toEqual(['127.0.0.2/32', '10.0.0.0/8']);
    for (const bad of [['nonsense'], '127.0.0.2', { a: 1 }, ['127.0.0.0/40']]) {
      const r = await setNetworks(bad);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.error.code).toBe('201');
      expect(r.body.error.message).toContain('apiNetworks');
    }
    expect((await s.admin.request('GET', `/apps/${c.appId}`)).body.apiNetworks).toEqual(['127.0.0.2/32', '10.0.0.0/8']);
    expect((await setNetworks(null)).body.apiNetworks).toEqual([]);
    const created = await s.admin.request('POST', '/apps', { name: 'born fenced', apiNetworks: ['192.0.2.0/24'] });
    expect(created.status).toBe(201);
    expect(created.body.apiNetworks).toEqual(['192.0.2.0/24']);
    expect((await s.admin.request('POST', '/apps', { name: 'bad', apiNetworks: ['x'] })).status).toBe(400);
  });

  it('empty (the default): every address may call, as before', async () => {
    await setNetworks([]);
    expect(code(await specCall(BROWSER, c, 'GET', '/Api/Video/GetList'))).toBe('1');
    expect(code(await specCall(SERVER, c, 'GET', '/Api/Video/GetList'))).toBe('1');
  });

  it('set: 4.1 to 4.4 answer the application server and refuse anyone else with 302 (fast path and Express alike)', async () => {
    const videoId = await c.register();
    await setNetworks([`${SERVER}/32`]);
    const calls: Array<['GET' | 'POST', string, Record<string, string | number>]> = [
      ['GET', '/Api/Video/Get', { Id: videoId }],
      ['GET', '/Api/Video/GetList', { PageSize: 200 }],
      ['GET', '/Api/Video/GetUserVideoListByAId', { aId: c.appId, createUser: 'someone' }],
      ['GET', '/Api/Video', { Id: videoId }],
      ['POST', '/Api/Video/Post', { VideoTitle: 'fenced', SourceFileGetType: 1 }],
    ];
    for (const [method, path, params] of calls) {
      const inside = await specCall(SERVER, c, method, path, params);
      expect(code(inside), `${method} ${path} from ${SERVER}: ${inside.text}`).toBe('1');
      const outside = await specCall(BROWSER, c, method, path, params);
      expect(outside.status, `${method} ${path}`).toBe(200);
      expect(outside.body, `${method} ${path} from ${BROWSER}`).toEqual({
        AuthMsg: { ResultCode: '302', ResultMessage: expect.stringContaining(`apiNetworks`) },
      });
      expect(outside.body.AuthMsg.ResultMessage).toContain(BROWSER);
      expect(outside.text).not.toContain(videoId);
    }
    // 4.2 from outside registered nothing.
    const list = await specCall(SERVER, c, 'GET', '/Api/Video/GetList', { PageSize: 200 });
    expect(list.body.VideoList.filter((v: any) => v.VideoTitle === 'fenced')).toHaveLength(1);
  });

  it('a wrong token from outside still gets the token answer: the network says nothing about tokens', async () => {
    await setNetworks([`${SERVER}/32`]);
    const ts = nowSeconds();
    const wrong = await specCall(BROWSER, c, 'GET', '/Api/Video/GetList', {}, { AppId: c.appId, Timestamp: ts, Token: specToken(ts, 'not the secret') });
    expect(code(wrong)).toBe('104');
  });

  it('refusals for the network count towards no failure limit; the caller addresses show in the app view', async () => {
    await setNetworks([`${SERVER}/32`]);
    // More than the per-address limit (30 a minute): were they counted, the next failure would be 106.
    for (let i = 0; i < 35; i++) expect(code(await specCall(BROWSER, c, 'GET', '/Api/Video/GetList'))).toBe('302');
    const ts = nowSeconds();
    expect(code(await specCall(BROWSER, c, 'GET', '/Api/Video/GetList', {}, { AppId: c.appId, Timestamp: ts, Token: 'f'.repeat(32) }))).toBe('104');
    expect(code(await specCall(SERVER, c, 'GET', '/Api/Video/GetList'))).toBe('1');
    const view = (await s.admin.request('GET', `/apps/${c.appId}`)).body;
    expect(view.recentCallers[0]).toMatchObject({ address: SERVER, allowed: true });
    expect(view.recentCallers).toContainEqual(expect.objectContaining({ address: BROWSER, allowed: false }));
    // Distinct addresses only.
    expect(new Set(view.recentCallers.map((r: any) => r.address)).size).toBe(view.recentCallers.length);
    expect(Date.parse(view.recentCallers[0].lastSeen)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('POST /Api/Video/Upload: refused from outside before a byte is stored, accepted from the application server', async () => {
    await setNetworks([`${SERVER}/32`]);
    const videoId = await registerFrom(SERVER, c);
    const outside = await multipartFrom(BROWSER, c, videoId, clip);
    expect(code(outside), outside.text).toBe('302');
    expect((await s.vop.stores.videos.get(videoId))!.status).toBe(8);
    const inside = await multipartFrom(SERVER, c, videoId, clip);
    expect(inside.body, inside.text).toMatchObject({ AuthMsg: { ResultCode: '1' }, VideoId: videoId });
    expect(await waitForIngest(s.vop, videoId)).toBe(5);
  });

  it('the browser paths the page values open still work from anywhere: the upload page, then tus with its credential', async () => {
    await setNetworks([`${SERVER}/32`]);
    const videoId = await registerFrom(SERVER, c);
    const a = c.auth();
    const page = await from(BROWSER, `${s.baseUrl}/widget/upload?${new URLSearchParams({ mode: 'window', appId: a.AppId!, timestamp: a.Timestamp!, token: a.Token!, videoId })}`);
    expect(page.status, page.text.slice(0, 300)).toBe(200);
    const credential = JSON.parse(/<script[^>]*id="vop-session"[^>]*>([\s\S]*?)<\/script>/.exec(page.text)![1]!).credential as string;
    const bytes = fs.readFileSync(clip);
    const created = await from(BROWSER, `${s.baseUrl}/upload/tus/`, {
      method: 'POST',
      headers: { 'Tus-Resumable': '1.0.0', 'Upload-Length': String(bytes.length), 'X-Upload-Credential': credential },
    });
    expect(created.status, created.text).toBe(201);
    const url = new URL(created.headers.location!, s.baseUrl).toString();
    const patched = await from(BROWSER, url, {
      method: 'PATCH',
      headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream', 'X-Upload-Credential': credential },
      body: bytes,
    });
    expect(patched.status, patched.text).toBe(204);
    expect(await waitForIngest(s.vop, videoId)).toBe(5);
    // The page's opening is not an API call: the browser's address is not suggested by it.
    const view = (await s.admin.request('GET', `/apps/${c.appId}`)).body;
    expect(view.recentCallers.filter((r: any) => r.address === BROWSER && r.allowed)).toEqual([]);
  });

  it('a network written as a range lets in every address of it and no other', async () => {
    expect((await setNetworks(['127.0.0.0/30'])).status).toBe(200);
    expect(code(await specCall(SERVER, c, 'GET', '/Api/Video/GetList'))).toBe('1');
    expect(code(await specCall(BROWSER, c, 'GET', '/Api/Video/GetList'))).toBe('1');
    expect(code(await specCall('127.0.0.4', c, 'GET', '/Api/Video/GetList'))).toBe('302');
  });

  it('the CLI sets them on create and update, and "" clears them', async () => {
    const base = ['--server', s.baseUrl, '--admin-token', ADMIN_TOKEN];
    const created = await runCli(['apps', 'create', '--name', 'cli fenced', '--api-networks', '198.51.100.0/24, 127.0.0.2', ...base], {});
    expect(created.code, created.stderr).toBe(0);
    const id = JSON.parse(created.stdout).appId as string;
    expect(JSON.parse(created.stdout).apiNetworks).toEqual(['198.51.100.0/24', '127.0.0.2/32']);
    const updated = await runCli(['apps', 'update', id, '--api-networks', '10.0.0.0/8', ...base], {});
    expect(JSON.parse(updated.stdout).apiNetworks).toEqual(['10.0.0.0/8']);
    const bad = await runCli(['apps', 'update', id, '--api-networks', '10.0.0.0/99', ...base], {});
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('apiNetworks');
    const cleared = await runCli(['apps', 'update', id, '--api-networks', '', ...base], {});
    expect(JSON.parse(cleared.stdout).apiNetworks).toEqual([]);
    expect((await runCli(['--help'], {})).stdout).toContain('--api-networks');
  });
});

describe('apiNetworks behind a trusted proxy', () => {
  it('match the client the proxy names (X-Forwarded-For), not the proxy', async () => {
    const s = await startServer({ trustedProxies: ['127.0.0.1/32'] });
    try {
      const c = await s.newApp('proxied');
      expect((await s.admin.request('PATCH', `/apps/${c.appId}`, { apiNetworks: ['203.0.113.0/24'] })).status).toBe(200);
      const list = (forwardedFor?: string) =>
        from('127.0.0.1', `${s.baseUrl}/Api/Video/GetList?${c.query()}`, { headers: forwardedFor ? { 'X-Forwarded-For': forwardedFor } : {} });
      expect(code(await list('203.0.113.9'))).toBe('1');
      expect(code(await list('198.51.100.7'))).toBe('302');
      // A client cannot name itself into the networks: only the right-most untrusted hop counts.
      expect(code(await list('203.0.113.9, 198.51.100.7'))).toBe('302');
      expect(code(await list())).toBe('302');
      const view = (await s.admin.request('GET', `/apps/${c.appId}`)).body;
      expect(view.recentCallers.map((r: any) => r.address)).toEqual(['127.0.0.1', '198.51.100.7', '203.0.113.9']);
    } finally {
      await s.close();
    }
  });
});
