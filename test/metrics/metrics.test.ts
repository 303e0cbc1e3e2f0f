/**
 * `GET /metrics` (docs/deployment.md, "Metrics"): refused as the admin API refuses, and with the
 * admin token the node's metrics in Prometheus's text format, which the real `promtool check
 * metrics` (Debian's `prometheus` package) finds clean, carrying each metric of the table with
 * real values after a real multipart upload, a real transcode and a real status callback to a
 * receiver on loopback. The route label holds templates, never a raw path (no video id in it).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VideoStatus } from '../../server/core/videoStatus.js';
import { resolveOptions } from '../../server/config.js';
import { parseStartArgs } from '../../server/startArgs.js';
import { startCallbackReceiver } from '../helpers/callbackReceiver.js';
import { makeClip } from '../helpers/clips.js';
import { SpecClient } from '../helpers/client.js';
import { multipartUpload } from '../helpers/ingest.js';
import { TINY_PROCESSING } from '../helpers/processing.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, ROOT, startServer, type TestServer } from '../helpers/server.js';
import { code, readDoc, tables } from '../docTables.js';

let s: TestServer;
let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
let client: SpecClient;

/** promtool, or why the test cannot run: it installs nothing itself (scripts/ensure-test-deps.mjs does). */
function promtool(): string {
  const found = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).stdout.trim();
  if (!found) throw new Error('promtool is missing: install Debian\'s prometheus package (apt-get install prometheus), or run npm test as root, which installs it (scripts/ensure-test-deps.mjs).');
  return found;
}

/** The metrics as the admin's scraper reads them. */
async function scrape(base = s.baseUrl, headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` }): Promise<string> {
  const res = await fetch(`${base}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return res.text();
}

/** The samples of `name` (exactly that name: `_bucket`, `_sum` and `_count` are names of their own), each with its labels. */
function samples(text: string, name: string): Array<{ labels: Record<string, string>; value: number }> {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]));
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

/** The one sample of `name` whose labels include `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples(text, name).filter((x) => Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
  return found[0]?.value;
}

beforeAll(async () => {
  // The storage figures are counted afresh whenever a scrape finds them stale (at once, here), so they follow the transcode.
  [s, receiver] = await Promise.all([
    startServer({ processing: TINY_PROCESSING, housekeeping: { storageCacheMs: 0 }, metrics: { port: 0 } }),
    startCallbackReceiver(),
  ]);
  const { appId, appSecret } = await s.admin.createApp('Metrics site', receiver.url);
  client = new SpecClient(s.baseUrl, appId, appSecret);
}, 60_000);

afterAll(async () => {
  await s?.close();
  await receiver?.close();
});

describe('GET /metrics, refused as the admin API refuses', () => {
  it('answers 401 in the admin API envelope without the admin token, with a wrong one, or with it in another scheme', async () => {
    const refused: Array<Record<string, string>> = [{}, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: `Basic ${Buffer.from(`x:${ADMIN_TOKEN}`).toString('base64')}` }];
    for (const headers of refused) {
      const res = await fetch(`${s.baseUrl}/metrics`, { headers });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: { code: '410', message: 'Admin Token Required' } });
    }
  });

  it("answers 403 to a name that is not this server's (DNS rebinding)", async () => {
    // fetch does not let a page set Host; a browser on a rebound name sends it.
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${s.baseUrl}/metrics`, { headers: { host: 'attacker.example', authorization: `Bearer ${ADMIN_TOKEN}` } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
    expect(JSON.parse(body).error.code).toBe('411');
  });

  it('answers 403 to a caller that is not on loopback, unless started with --admin-remote', async () => {
    // The proxy on loopback is trusted: the client is the address it forwards, one of the LAN's.
    for (const adminRemote of [false, true]) {
      const t = await startServer({ adminRemote, trustedProxies: ['127.0.0.1/32'] });
      try {
        const res = await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-forwarded-for': '192.0.2.7' } });
        if (adminRemote) {
          expect(res.status).toBe(200);
        } else {
          expect(res.status).toBe(403);
          expect((await res.json()).error.code).toBe('411');
        }
      } finally {
        await t.close();
      }
    }
  });

  it('is not there with the metrics off', async () => {
    const t = await startServer({ metrics: { enabled: false } });
    try {
      expect(t.vop.metrics).toBeUndefined();
      expect((await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(404);
    } finally {
      await t.close();
    }
  });
});

describe('GET /metrics, with the admin token, after an upload, a transcode and a callback', () => {
  let text: string;
  let videoId: string;
  let clipBytes: number;
  /** What the flow emitted itself of the events the metrics count. */
  const heard = { received: 0, attempts: 0 };

  beforeAll(async () => {
    s.vop.events.on('upload.received', () => heard.received++);
    s.vop.events.on('callback.attempt', () => heard.attempts++);
    const clip = await makeClip({ seconds: 1, width: 320, height: 180 });
    clipBytes = fs.statSync(clip).size;
    videoId = await client.register({ VideoTitle: 'Measured' });
    expect(await multipartUpload(client, videoId, fs.readFileSync(clip))).toBe('1');
    expect(await waitForStatus(s.vop, videoId, [VideoStatus.Normal], { timeoutMs: 60_000 })).toBe(VideoStatus.Normal);
    await waitUntil('the status callback', () => receiver.received.find((f) => f.VideoId === videoId && f.VideoStatus === '1'), { timeoutMs: 20_000 });
    // The upload and the callback announced themselves (the ingest and callback services emit
    // them): the counters below count what really happened.
    expect(heard.received).toBe(1);
    await waitUntil('the callback attempt event', () => (heard.attempts > 0 ? true : undefined), { timeoutMs: 10_000 });

    // Media and the read calls, at their real addresses: the route label must show their templates.
    const detail = await client.get('/Api/Video/Get', { Id: videoId });
    const playUrl = `${detail.body.MediaSever.PlayURL}${detail.body.VideoPlayFile[0].VideoURL}`;
    for (const url of [playUrl, `${s.baseUrl}/media/cover/${videoId}.jpg`, `${s.baseUrl}/media/hls/${videoId}/master.m3u8`, `${s.baseUrl}/media/nothing/${videoId}`]) {
      await (await fetch(url)).arrayBuffer();
    }
    // A refusal inside a nested router (the admin API's applications): still its route's template.
    expect((await s.admin.request('GET', `/apps/${'f'.repeat(24)}`)).status).toBe(404);
    // The storage figures are counted in the background: a later scrape has them.
    text = await waitUntil(
      'storage figures with the renditions',
      async () => {
        const t = await scrape();
        return (sample(t, 'vop_storage_bytes', { kind: 'renditions' }) ?? 0) > 0 && (sample(t, 'vop_time_to_playable_seconds_count') ?? 0) > 0 ? t : undefined;
      },
      { timeoutMs: 20_000, pollMs: 100 },
    );
  }, 120_000);

  it('passes promtool check metrics', () => {
    const r = spawnSync(promtool(), ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(`${r.stdout}${r.stderr}`.trim()).toBe('');
    expect(r.status).toBe(0);
  });

  it('times requests by method, route template and status: no raw path, no video id', () => {
    const requests = samples(text, 'http_server_request_duration_seconds_count');
    const routes = new Set(requests.map((r) => r.labels.http_route));
    for (const route of ['/Api/Video/Get', '/Api/Video/Post', '/Api/Video/Upload', '/media/play/:date/:file', '/media/cover/:file', '/media/hls/:videoId/:file', '/media/{*rest}', '/admin/api/apps']) {
      expect(routes, route).toContain(route);
    }
    expect(sample(text, 'http_server_request_duration_seconds_count', { http_request_method: 'GET', http_route: '/media/play/:date/:file', http_response_status_code: '200' })).toBe(1);
    expect(sample(text, 'http_server_request_duration_seconds_count', { http_route: '/media/{*rest}', http_response_status_code: '404' })).toBe(1);
    expect(sample(text, 'http_server_request_duration_seconds_count', { http_request_method: 'GET', http_route: '/admin/api/apps/:appId', http_response_status_code: '404' })).toBe(1);
    expect(sample(text, 'http_server_request_duration_seconds_count', { http_request_method: 'GET', http_route: '/metrics', http_response_status_code: '401' })).toBe(3);
    expect(text).not.toContain(videoId);
    expect(text).not.toContain(client.appId);
    expect(text).not.toContain(ADMIN_TOKEN);
  });

  it('counts jobs, their durations and the time to playable', () => {
    for (const type of ['transcode', 'ladder']) {
      for (const state of ['queued', 'running']) expect(sample(text, 'vop_jobs', { type, state }), `${type} ${state}`).toBe(0);
    }
    expect(sample(text, 'vop_job_duration_seconds_count', { type: 'transcode' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'vop_job_duration_seconds_sum', { type: 'transcode' })).toBeGreaterThan(0);
    expect(sample(text, 'vop_time_to_playable_seconds_count')).toBe(1);
    const toPlayable = sample(text, 'vop_time_to_playable_seconds_sum')!;
    expect(toPlayable).toBeGreaterThan(0);
    expect(toPlayable).toBeLessThan(60);
  });

  it('counts uploads, their bytes, the callbacks and the storage', () => {
    expect(sample(text, 'vop_uploads_active')).toBe(0);
    expect(sample(text, 'vop_upload_bytes_total', { via: 'multipart' })).toBe(clipBytes);
    expect(sample(text, 'vop_upload_bytes_total', { via: 'tus' })).toBe(0);
    expect(sample(text, 'vop_callback_deliveries_total', { outcome: 'delivered' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'vop_callback_deliveries_total', { outcome: 'given-up' })).toBe(0);
    expect(sample(text, 'vop_storage_bytes', { kind: 'sources' })).toBeGreaterThan(0);
    expect(sample(text, 'vop_storage_bytes', { kind: 'renditions' })).toBeGreaterThan(0);
    expect(sample(text, 'vop_storage_bytes', { kind: 'hls' })).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'vop_storage_bytes', { kind: 'covers' })).toBeGreaterThan(0);
    expect(sample(text, 'vop_storage_bytes', { kind: 'uploads' })).toBe(0);
  });

  it("carries the process's own metrics", () => {
    expect(sample(text, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(samples(text, 'nodejs_eventloop_lag_seconds')).toHaveLength(1);
  });

  it("are the docs' table of metrics, no more and no fewer", () => {
    const table = tables(readDoc('docs/deployment.md')).find((t) => t.marker === 'metrics')!;
    const documented = table.rows.map((r) => code(r.metric!)).filter((n) => !n.includes('*'));
    const served = new Set([...text.matchAll(/^# TYPE ((?:vop|http)_\w+) /gm)].map((m) => m[1]!));
    expect(documented.sort()).toEqual([...served].sort());
  });

  it('the Grafana dashboard in deploy/ asks in valid PromQL for metrics that are served', () => {
    const dashboard = JSON.parse(fs.readFileSync(path.join(ROOT, 'deploy/grafana-vop.json'), 'utf8'));
    const exprs: string[] = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr as string));
    expect(exprs.length).toBeGreaterThan(10);
    // Grafana's variables as Prometheus would get them, each expression a recording rule for promtool to parse.
    const rules = exprs.map((e, i) => `      - record: vop:dashboard:${i}\n        expr: ${JSON.stringify(e.replaceAll('$__rate_interval', '5m').replaceAll('$instance', '.*'))}`);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'vop-dashboard-')), 'rules.yml');
    fs.writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules.join('\n')}\n`);
    const r = spawnSync(promtool(), ['check', 'rules', file], { encoding: 'utf8' });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    // A metric is named before its selector's `{` (every one here has one); label names are not.
    const families = new Set([...text.matchAll(/^# TYPE (\w+) /gm)].map((m) => m[1]!));
    for (const name of new Set(exprs.flatMap((e) => [...e.matchAll(/\b((?:vop|http|process|nodejs)_\w+)\{/g)].map((m) => m[1]!)))) {
      expect(families.has(name.replace(/_(bucket|sum|count)$/, '')), name).toBe(true);
    }
  });

  it('answers on the loopback metrics port without a token, and nothing else there', async () => {
    const port = s.vop.metricsAddress()!.port;
    const there = await scrape(`http://127.0.0.1:${port}`, {});
    expect(sample(there, 'vop_upload_bytes_total', { via: 'multipart' })).toBe(clipBytes);
    expect((await fetch(`http://127.0.0.1:${port}/Api/Video/Get`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' })).status).toBe(404);
  });

  it("refuses on the metrics port a Host that is not this server's, as a DNS-rebinding page sends it", async () => {
    const port = s.vop.metricsAddress()!.port;
    const get = (host: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: '/metrics', headers: { Host: host } }, (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (c: string) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          })
          .on('error', reject);
      });
    const evil = await get('evil.example');
    expect(evil.status).toBe(403);
    expect(evil.body).not.toContain('vop_');
    for (const own of [`127.0.0.1:${port}`, `localhost:${port}`, `${os.hostname()}:${port}`]) {
      const r = await get(own);
      expect(r.status, own).toBe(200);
      expect(r.body).toContain('vop_upload_bytes_total');
    }
  });
});

describe('the metrics options', () => {
  it('are read from --metrics-port, VOP_METRICS_PORT and VOP_METRICS_ENABLED, and checked', () => {
    expect(parseStartArgs([], {}).options.metrics).toBeUndefined();
    expect(parseStartArgs(['--metrics-port', '9464'], {}).options.metrics).toEqual({ port: 9464 });
    expect(parseStartArgs([], { VOP_METRICS_PORT: '9465' }).options.metrics).toEqual({ port: 9465 });
    expect(parseStartArgs(['--metrics-port', '9464'], { VOP_METRICS_PORT: '9465' }).options.metrics).toEqual({ port: 9464 });
    expect(parseStartArgs([], { VOP_METRICS_ENABLED: '0' }).options.metrics).toEqual({ enabled: false });
    expect(() => parseStartArgs(['--metrics-port', 'x'], {})).toThrow(/--metrics-port "x" is not a number \(option metrics\.port\)/);
    // A port with the metrics off: refused when the options are checked, before the server is built.
    expect(() => resolveOptions(parseStartArgs(['--metrics-port', '9464'], { VOP_METRICS_ENABLED: 'off' }).options)).toThrow(/needs the metrics on/);
    expect(resolveOptions({ dataDir: 'x' }).metrics).toEqual({ enabled: true });
    expect(() => resolveOptions({ dataDir: 'x', metrics: { port: 70_000 } })).toThrow(/Option metrics.port/);
    expect(() => resolveOptions({ dataDir: 'x', metrics: { enabled: false, port: 9464 } })).toThrow(/metrics.port needs the metrics on/);
  });
});
