/**
 * The operator's log of a real `npm start`-like process (server/main.ts): with --log-format json
 * every line it prints is a JSON record, and the records name the video and its application when
 * its file arrives and when it plays; the readable format writes one line per record; the request
 * log is there only when asked for; and no credential of a busy run appears in any line.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { AdminClient, SpecClient, nowSeconds, specToken } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { CookieClient } from '../helpers/console.js';
import { tusCreate, tusMetadata, tusPatch } from '../helpers/ingest.js';
import { waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, killStrayProcesses, ROOT, startServerProcess, tempDataDir, type ServerProcess } from '../helpers/server.js';

const running: ServerProcess[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) await p.stop();
});
afterAll(killStrayProcesses);

async function start(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const p = await startServerProcess(['--port', '0', '--host', '127.0.0.1', '--data-dir', tempDataDir('vop-log-'), ...args], { VOP_ADMIN_TOKEN: ADMIN_TOKEN, ...env });
  running.push(p);
  return p;
}

/** The process's output as lines (the last, unfinished one left out). */
function lines(p: ServerProcess): string[] {
  return p.output().split('\n').slice(0, -1);
}

/** Its records, every line parsed as JSON (a line that is not one fails the test here). */
/** A multipart upload whose client goes away part-way through the file (its socket destroyed). */
async function cutUpload(baseUrl: string, fields: Record<string, string>): Promise<void> {
  const boundary = 'vopcutboundary';
  const head = Object.entries(fields).map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('') +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="clip.mp4"\r\nContent-Type: video/mp4\r\n\r\n`;
  const url = new URL('/Api/Video/Upload', baseUrl);
  const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + 10_000_000) } });
  req.on('error', () => undefined);
  req.write(head);
  req.write(Buffer.alloc(200_000, 7));
  // Part-way through: time for the server to be reading the file when the client goes.
  await new Promise((r) => setTimeout(r, 500));
  req.destroy();
}

function records(p: ServerProcess): Array<Record<string, unknown>> {
  return lines(p).map((l) => {
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch {
      throw new Error(`a line that is not a JSON record: ${l}`);
    }
  });
}

/** An application's callback endpoint that keeps every request's headers (the signature among them). */
async function callbackEndpoint(): Promise<{ url: string; headers: http.IncomingHttpHeaders[]; close: () => Promise<void> }> {
  const headers: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    headers.push(req.headers);
    req.resume().on('end', () => res.writeHead(200).end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback?key=callback-url-query-secret`,
    headers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The upload page's credential for `videoId` (its `#vop-session` block), as the page reads it. */
async function uploadCredential(baseUrl: string, client: SpecClient, videoId: string): Promise<string> {
  const a = client.auth();
  const res = await fetch(`${baseUrl}/widget/upload?${new URLSearchParams({ appId: a.AppId!, timestamp: a.Timestamp!, token: a.Token!, videoId })}`);
  const html = await res.text();
  const block = /<script[^>]*id="vop-session"[^>]*>([\s\S]*?)<\/script>/.exec(html);
  if (!block) throw new Error(`no session block in the upload page (${res.status})`);
  return (JSON.parse(block[1]!) as { credential: string }).credential;
}

/** A signed media token's shape (keys/mediaTokens.ts): the request log must not show one. */
const mediaTokenLike = 'k1a2b3.m0z9y8.m.Zq3xY7wV1uT5sR9pO2nM4l';

describe('the operator log of npm start', () => {
  it("--log-format json: npm start's builds write records too (scripts/start.mjs passes it on)", async () => {
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, ['scripts/build-console.mjs', '--if-stale'], { cwd: ROOT, env: { ...process.env, VOP_BUILD_LOG: 'json' }, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    const lines = `${r.stdout}${r.stderr}`.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) expect(JSON.parse(l)).toMatchObject({ level: expect.any(String), time: expect.any(String), msg: expect.stringMatching(/^console /) });
  }, 150_000);

  it('--log-format json: every line a record; the video named when its file arrives and when it plays; no credential in any line', async () => {
    const callbacks = await callbackEndpoint();
    try {
      const p = await start(['--log-format', 'json', '--log-requests']);
      const admin = new AdminClient(p.baseUrl, ADMIN_TOKEN);
      const { appId, appSecret } = await admin.createApp('logged', callbacks.url);
      const client = new SpecClient(p.baseUrl, appId, appSecret);
      const specTokens: string[] = [];
      const auth = () => {
        const a = client.auth();
        specTokens.push(a.Token!);
        return a;
      };

      // A video uploaded through the upload page (tus with the page's credential), transcoded.
      const videoId = await client.register({}); // its Token is computed inside; the ones below are kept
      const credential = await uploadCredential(p.baseUrl, client, videoId);
      const clip = fs.readFileSync(await makeClip({ seconds: 2 }));
      const created = await tusCreate(p.baseUrl, clip.length, { 'X-Upload-Credential': credential, 'Upload-Metadata': tusMetadata({ videoId, filename: 'clip.mp4' }) });
      expect(created.res.status, created.body).toBe(201);
      expect((await tusPatch(created.url!, 0, clip, { 'X-Upload-Credential': credential })).status).toBe(204);
      // A second video sent bytes that are no video, by multipart: refused.
      const second = await client.register({});
      const form = new FormData();
      for (const [k, v] of Object.entries({ ...auth(), VideoId: second })) form.append(k, v);
      form.append('file', new Blob([Uint8Array.from(Buffer.from('these bytes are no video at all'.repeat(64)))]), 'noise.mp4');
      const refused = await (await fetch(`${p.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form })).json();
      expect(refused.AuthMsg.ResultCode).toBe('307');

      // A third video's file cut off by its client going away mid-body: cut off, not refused.
      const third = await client.register({});
      await cutUpload(p.baseUrl, { ...auth(), VideoId: third });
      await waitUntil('the cut-off upload logged', () => records(p).find((r) => r.videoId === third && r.msg === 'upload cut off by its client'), { timeoutMs: 10_000, pollMs: 100 });

      // The console's login, and refused tokens (the admin API's and the spec API's).
      const consoleSession = new CookieClient(p.baseUrl);
      expect((await consoleSession.login(ADMIN_TOKEN)).status).toBe(200);
      expect((await consoleSession.json('GET', '/apps')).status).toBe(200);
      const wrongAdmin = 'not-the-admin-token-4d1f9a7c2b';
      expect((await new AdminClient(p.baseUrl, wrongAdmin).request('GET', '/apps')).status).toBe(401);
      const wrongSpec = specToken(nowSeconds(), 'not-the-app-secret');
      expect((await client.get('/Api/Video/Get', { Id: videoId }, { ...client.auth(), Token: wrongSpec })).body.AuthMsg.ResultCode).not.toBe('1');
      expect((await client.get('/Api/Video/Get', { Id: videoId }, auth())).status).toBe(200);

      // A media address with a token-shaped segment where no route takes it (a capital S).
      expect((await fetch(`${p.baseUrl}/media/S/${mediaTokenLike}/play/20260101/${videoId}_360p.mp4`)).status).toBe(404);

      // Playable, and its status callback delivered.
      await waitUntil('the video plays', () => records(p).find((r) => r.msg === 'first playable' && r.videoId === videoId), { timeoutMs: 90_000, pollMs: 200 });
      await waitUntil('the callback is delivered', () => records(p).find((r) => r.msg === 'callback delivered' && r.videoId === videoId), { timeoutMs: 30_000, pollMs: 200 });
      // A request's line is written once its answer is handed over, and reaches this process by
      // another pipe than the answer: the answer can come first (the video may have played long
      // before, so the waits above need not have waited at all).
      const notFound = `/media/S/…/play/20260101/${videoId}_360p.mp4`;
      await waitUntil('the 404 request logged', () => records(p).find((r) => r.msg === 'request' && r.path === notFound), { timeoutMs: 10_000, pollMs: 100 });
      const all = records(p);

      // The start-up record carries its addresses as fields, not as indented lines.
      expect(all.find((r) => r.msg === 'vop serving the Video Open Platform API')).toMatchObject({
        level: 'info',
        api: [`${p.baseUrl}/Api/Video`],
        console: `${p.baseUrl}/console`,
        adminApi: `${p.baseUrl}/admin/api`,
        adminApiFrom: 'loopback only',
      });
      expect(all.some((r) => typeof r.msg === 'string' && r.msg.startsWith('  '))).toBe(false);
      const arrived = all.find((r) => r.msg === 'upload received' && r.videoId === videoId);
      expect(arrived).toMatchObject({ level: 'info', appId, videoId, via: 'tus', bytes: clip.length });
      expect(all.find((r) => r.msg === 'first playable' && r.videoId === videoId)).toMatchObject({ level: 'info', appId, videoId });
      expect(all.find((r) => r.msg === 'transcode started' && r.videoId === videoId)).toMatchObject({ appId, videoId });
      expect(all.find((r) => r.msg === 'upload refused' && r.videoId === second)).toMatchObject({ level: 'warn', appId, videoId: second, via: 'multipart', code: '307' });
      expect(all.find((r) => r.msg === 'upload cut off by its client' && r.videoId === third)).toMatchObject({ level: 'info', appId, via: 'multipart' });
      expect(all.filter((r) => r.videoId === third && /refused|malformed/i.test(String(r.msg)))).toEqual([]);
      expect(all.find((r) => r.msg === 'callback delivered' && r.videoId === videoId)).toMatchObject({ appId, videoId, status: 1, httpStatus: 200 });
      // The request log: whole paths without their query strings, with the client's address; a
      // token-shaped segment masked wherever it stands.
      const requests = all.filter((r) => r.msg === 'request');
      expect(requests.some((r) => r.path === '/Api/Video/Get' && r.status === 200 && r.client === '127.0.0.1')).toBe(true);
      expect(requests.some((r) => r.path === '/widget/upload')).toBe(true);
      expect(requests.some((r) => r.path === '/admin/api/apps' && r.method === 'POST')).toBe(true);
      expect(all.some((r) => r.msg === 'request' && r.path === '/apps')).toBe(false);
      expect(requests.find((r) => r.path === notFound)).toMatchObject({ status: 404 });

      // No credential of the run, in any line.
      const signatures = callbacks.headers.map((h) => String(h['webhook-signature'] ?? ''));
      expect(signatures.length).toBeGreaterThan(0);
      const secrets = {
        'the admin token': [ADMIN_TOKEN],
        'a refused admin token': [wrongAdmin],
        "the application's secret": [appSecret],
        'a spec Token': [...specTokens, wrongSpec],
        'the upload credential': [credential],
        'a media token': [mediaTokenLike],
        'a callback signature': signatures.flatMap((s) => s.split(' ').map((v) => v.replace(/^v1,/, ''))),
        "the console session's secret": [consoleSession.secret],
        "the callback address's query": ['callback-url-query-secret'],
      };
      const output = p.output();
      for (const [what, values] of Object.entries(secrets)) {
        for (const v of values) {
          expect(v.length, what).toBeGreaterThan(8);
          expect(output.includes(v), `${what} is in the log`).toBe(false);
        }
      }
    } finally {
      await callbacks.close();
    }
  }, 180_000);

  it('readable by default: one line a record; no request lines unless asked for', async () => {
    const p = await start([]);
    expect((await fetch(`${p.baseUrl}/healthz?probe=1`)).status).toBe(200);
    expect((await fetch(`${p.baseUrl}/Api/Video/Get?AppId=x&Timestamp=1&Token=y`)).status).toBeGreaterThan(0);
    // Time for a request line to be written, if one were: none may.
    await new Promise((r) => setTimeout(r, 300));
    const out = lines(p);
    expect(out.length).toBeGreaterThan(3);
    // `2025-05-01 14:03:07.120 INFO  message key=value`: every line starts as a record does.
    for (const l of out) expect(l).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO|WARN|ERROR|FATAL) +\S/);
    expect(out.some((l) => / request /.test(l) || l.includes('path=/healthz'))).toBe(false);
    expect(out.some((l) => l.includes('vop listening on http://127.0.0.1:'))).toBe(true);
  }, 60_000);

  it('VOP_LOG_REQUESTS=1: a line per request, without its query string; --log-level warn keeps the listening line', async () => {
    const p = await start(['--log-level', 'warn'], { VOP_LOG_REQUESTS: '1' });
    expect((await fetch(`${p.baseUrl}/healthz?probe=secret-in-query`)).status).toBe(200);
    // Time for the request line to be written, if it were: under warn it may not.
    await new Promise((r) => setTimeout(r, 300));
    const out = p.output();
    // The request line is at info, under warn: not written; the banner is written whatever the level.
    expect(out).toContain('vop listening on http://127.0.0.1:');
    expect(out).not.toContain('secret-in-query');

    const q = await start(['--log-format', 'json'], { VOP_LOG_REQUESTS: '1' });
    expect((await fetch(`${q.baseUrl}/healthz?probe=secret-in-query`)).status).toBe(200);
    const request = await waitUntil('the request line', () => records(q).find((r) => r.msg === 'request'), { timeoutMs: 5_000 });
    expect(request).toMatchObject({ level: 'info', method: 'GET', path: '/healthz', client: '127.0.0.1', status: 200 });
    expect(typeof request!.durationMs).toBe('number');
    expect(q.output()).not.toContain('secret-in-query');
  }, 60_000);
});
