import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CALLBACK_OPTIONS, type CallbackOptions } from '../../server/callbacks/options.js';
import { SqlJsCallbackStore } from '../../server/storage/sqljs/sqljsCallbackStore.js';
import type { DeliveryRecord } from '../../server/storage/callbackRecords.js';
import { resolveOptions } from '../../server/config.js';
import { SpecClient } from '../helpers/client.js';
import { videoRecord } from '../helpers/fixtures.js';
import { startServer, tempDataDir, warningsLogged, type TestServer } from '../helpers/server.js';
import { waitUntil } from '../helpers/wait.js';
import { DurableDatabase } from '../../server/storage/sqljs/durableDatabase.js';
import { isUnexpectedErrorLine } from '../../server/core/logLines.js';

/** Tiny delays so that a retry series runs in milliseconds; the schedule's shape is the default's. */
const FAST: CallbackOptions = {
  ...DEFAULT_CALLBACK_OPTIONS,
  retry: { maxRetries: 5, baseDelayMs: 20, maxDelayMs: 100, jitter: true },
  timeoutMs: 2_000,
};

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  /** The body exactly as it came over the wire: what the signature covers. */
  raw: string;
  fields: Record<string, string>;
}

type Reply = { status: number; body?: string; headers?: Record<string, string> };

/** An application's callback endpoint on loopback; `reply` decides each answer. */
async function startReceiver(reply: (r: Received, n: number) => Reply | Promise<Reply> = () => ({ status: 200, body: 'ok' }), port = 0) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const r: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, raw, fields: Object.fromEntries(new URLSearchParams(raw)) };
      received.push(r);
      const answer = await reply(r, received.length);
      res.writeHead(answer.status, answer.headers).end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  closers.push(close);
  return { received, url: `http://127.0.0.1:${address.port}/vop/callback`, port: address.port, close };
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  const errors: unknown[] = [];
  while (closers.length) await closers.pop()!().catch((err) => errors.push(err));
  if (errors.length) throw errors[0];
});

async function boot(options: Parameters<typeof startServer>[0] = {}): Promise<TestServer> {
  const t = await startServer({ callbacks: FAST, ...options });
  closers.push(async () => {
    await t.close();
    // Nothing went wrong behind the scenes: a listener or a job's bookkeeping failing warns here.
    expect([...t.logs.filter(isUnexpectedErrorLine), ...(await warningsLogged(t))]).toEqual([]);
  });
  return t;
}

/** An application whose callback address is `url`. */
async function appWithCallback(t: TestServer, url: string): Promise<SpecClient> {
  const { appId, appSecret } = await t.admin.createApp('callback app', url);
  return new SpecClient(t.baseUrl, appId, appSecret);
}

/** Registers a video and drives it through the given statuses (no transcoder needed). */
async function videoThrough(t: TestServer, client: SpecClient, statuses: number[]): Promise<string> {
  const id = await client.register();
  for (const s of statuses) expect(await t.vop.services.lifecycle.move(id, s)).toBe(true);
  return id;
}

async function deliveries(t: TestServer, appId: string, query = ''): Promise<any[]> {
  const r = await t.admin.request('GET', `/apps/${appId}/deliveries${query}`);
  expect(r.status).toBe(200);
  return r.body.deliveries;
}

/** Waits until the app's delivery for `videoId` is in a final state. */
async function settled(t: TestServer, appId: string, videoId: string): Promise<any> {
  return waitUntil(`the delivery of ${videoId} to settle`, async () =>
    (await deliveries(t, appId)).find((d) => d.videoId === videoId && d.state !== 'pending'),
  { timeoutMs: 10_000 });
}

/** What an application server does, written independently of server/callbacks: true if the signature verifies. */
function verify(r: Received, secret: string): boolean {
  const id = String(r.headers['webhook-id']);
  const ts = String(r.headers['webhook-timestamp']);
  const expected = crypto.createHmac('sha256', secret).update(`${id}.${ts}.${r.raw}`).digest('base64');
  return String(r.headers['webhook-signature'] ?? '')
    .split(' ')
    .map((s) => s.split(',', 2))
    .some(([v, sig]) => v === 'v1' && sig === expected);
}

describe('status callback', () => {
  it('retries a 500, then delivers once; the signature verifies with the secret, and the body carries nothing the API accepts', async () => {
    const t = await boot();
    const statusAtCall: Array<number | undefined> = [];
    const rx = await startReceiver(async (r, n) => {
      statusAtCall.push((await t.vop.stores.videos.get(r.fields.VideoId!))?.status);
      return n === 1 ? { status: 500, body: 'not now' } : { status: 200, body: 'thanks' };
    });
    const app = await appWithCallback(t, rx.url);
    const videoId = await videoThrough(t, app, [5, 6, 1]);

    const d = await settled(t, app.appId, videoId);
    await t.vop.jobs.idle(['callback']);
    expect(d.state).toBe('delivered');
    expect(d.kind).toBe('status');
    expect(d.videoStatus).toBe(1);
    expect(d.attempts.map((a: any) => [a.attempt, a.httpStatus, a.ok])).toEqual([
      [1, 500, false],
      [2, 200, true],
    ]);
    expect(d.attempts[0].error).toBe('HTTP 500');
    expect(d.attempts[0].responseExcerpt).toBe('not now');
    expect(d.attempts[1].responseExcerpt).toBe('thanks');
    expect(d.attempts[1].url).toBe(rx.url);
    for (const a of d.attempts) expect(a.latencyMs).toBeGreaterThanOrEqual(0);

    // Delivered exactly once successfully: two requests in all, the same delivery id on both.
    expect(rx.received).toHaveLength(2);
    for (const r of rx.received) {
      expect(r.method).toBe('POST');
      expect(r.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect(r.headers['webhook-id']).toBe(d.id);
      expect(r.headers['webhook-timestamp']).toBe(r.fields.Timestamp);
      expect(Math.abs(Number(r.fields.Timestamp) - Date.now() / 1000)).toBeLessThan(60);
      expect(r.fields).toMatchObject({ VideoId: videoId, VideoStatus: '1', AppId: app.appId });
      expect(r.fields.Test).toBeUndefined();
      expect(verify(r, app.secret)).toBe(true);
      expect(verify(r, 'another secret')).toBe(false);
      // No spec API credential in it (issue 12, item 2): no Token, nor any field that is one.
      expect(Object.keys(r.fields).sort()).toEqual(['AppId', 'Timestamp', 'VideoId', 'VideoStatus']);
      const apiToken = crypto.createHash('md5').update(r.fields.Timestamp + app.secret).digest('hex');
      expect(r.raw).not.toContain(apiToken);
    }
    // What a callback carries, replayed against the API, is refused.
    const { AppId, Timestamp } = rx.received[1]!.fields;
    const replay = await fetch(`${t.baseUrl}/Api/Video/GetList?${new URLSearchParams({ AppId: AppId!, Timestamp: Timestamp! })}`);
    expect(((await replay.json()) as { AuthMsg: { ResultCode: string } }).AuthMsg.ResultCode).toBe('100');
    // The status was stored before the callback went out.
    expect(statusAtCall).toEqual([1, 1]);
  });

  it('does not follow a redirect: a 302 is a failed attempt', async () => {
    const t = await boot({ callbacks: { ...FAST, retry: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 20, jitter: false } } });
    const rx = await startReceiver((r) => (r.url === '/elsewhere' ? { status: 200 } : { status: 302, headers: { location: '/elsewhere' } }));
    const app = await appWithCallback(t, rx.url);
    const videoId = await videoThrough(t, app, [5, 6, 1]);

    const d = await settled(t, app.appId, videoId);
    expect(d.state).toBe('failed');
    expect(d.attempts.map((a: any) => a.httpStatus)).toEqual([302, 302, 302]);
    expect(d.attempts[0].error).toBe('HTTP 302: redirect to /elsewhere not followed');
    expect(d.lastError).toContain('302');
    expect(rx.received.map((r) => r.url)).toEqual(['/vop/callback', '/vop/callback', '/vop/callback']);
  });

  it('calls back the end states 1, 4 and 7 only', async () => {
    const t = await boot();
    const rx = await startReceiver();
    const app = await appWithCallback(t, rx.url);
    const failedTranscode = await videoThrough(t, app, [5, 6, 7]);
    const failedDownload = await videoThrough(t, app, [3, 4]);
    const inProgress = await videoThrough(t, app, [5, 6]);
    const downloading = await videoThrough(t, app, [3]);

    await waitUntil('two callbacks', () => rx.received.length >= 2 || undefined, { timeoutMs: 10_000 });
    await t.vop.jobs.idle(['callback']);
    expect(rx.received.map((r) => [r.fields.VideoId, r.fields.VideoStatus]).sort()).toEqual(
      [
        [failedTranscode, '7'],
        [failedDownload, '4'],
      ].sort(),
    );
    const listed = await deliveries(t, app.appId);
    expect(listed.map((d) => d.videoId).sort()).toEqual([failedTranscode, failedDownload].sort());
    expect(listed.every((d) => d.state === 'delivered')).toBe(true);
    expect(listed.some((d) => d.videoId === inProgress || d.videoId === downloading)).toBe(false);
  });

  it('signs each attempt with the secret current at that attempt', async () => {
    const t = await boot();
    let rotated: string | undefined;
    let appId = '';
    const rx = await startReceiver(async (_r, n) => {
      if (n === 1) rotated = (await t.admin.request('POST', `/apps/${appId}/secret`)).body.appSecret;
      return { status: n === 1 ? 503 : 204 };
    });
    const app = await appWithCallback(t, rx.url);
    appId = app.appId;
    const videoId = await videoThrough(t, app, [5, 6, 1]);
    expect((await settled(t, app.appId, videoId)).state).toBe('delivered');
    expect(verify(rx.received[0]!, app.secret)).toBe(true);
    expect(verify(rx.received[1]!, rotated!)).toBe(true);
  });

  it('stops retrying once the retry window is over', async () => {
    const windowMs = 1_500;
    const t = await boot({ callbacks: { ...FAST, windowMs, retry: { maxRetries: 1_000, baseDelayMs: 300, maxDelayMs: 300, jitter: false } } });
    const rx = await startReceiver(() => ({ status: 500 }));
    const app = await appWithCallback(t, rx.url);
    const videoId = await videoThrough(t, app, [5, 6, 1]);
    const d = await settled(t, app.appId, videoId);
    expect(d.state).toBe('failed');
    // Each retry is scheduled 300 ms after the previous attempt ended, and none later than the
    // window after the first: at most 6 attempts, whatever the machine's load (maxRetries is 1000).
    expect(d.attempts.length).toBeGreaterThanOrEqual(2);
    expect(d.attempts.length).toBeLessThanOrEqual(6);
    // And none is coming: no attempt of it is queued or running (a sleep could not see a late one).
    await t.vop.jobs.idle(['callback']);
    expect(await t.vop.stores.jobs.list({ types: ['callback'], states: ['queued', 'running'] })).toEqual([]);
    expect(rx.received).toHaveLength(d.attempts.length);
  });

  it('records a skipped delivery when the application has no callback address', async () => {
    const t = await boot();
    const app = await t.newApp();
    const videoId = await videoThrough(t, app, [5, 6, 1]);
    const d = await settled(t, app.appId, videoId);
    expect(d).toMatchObject({ state: 'skipped', lastError: 'no callback address', attempts: [] });

    // Setting an address afterwards does not call back what was finished before, even after a restart.
    const rx = await startReceiver();
    await t.admin.request('PATCH', `/apps/${app.appId}`, { callbackUrl: rx.url });
    await t.close();
    const t2 = await boot({ dataDir: t.dataDir });
    // The start-up catch-up has finished (what it would queue is queued), and its jobs have run: none may be sent.
    expect(await t2.vop.services.callbacks.startCatchUp()).toEqual({ created: 0, requeued: 0 });
    await t2.vop.jobs.idle(['callback']);
    expect(rx.received).toHaveLength(0);
    expect((await deliveries(t2, app.appId)).map((x) => x.state)).toEqual(['skipped']);
  });

  it('sends nothing to a disabled application', async () => {
    const t = await boot();
    const rx = await startReceiver();
    const app = await appWithCallback(t, rx.url);
    const videoId = await videoThrough(t, app, [5]);
    await t.admin.request('PATCH', `/apps/${app.appId}`, { disabled: true });
    for (const s of [6, 7]) await t.vop.services.lifecycle.move(videoId, s);
    const d = await settled(t, app.appId, videoId);
    expect(d).toMatchObject({ state: 'skipped', lastError: 'application disabled', attempts: [] });
    const test = await t.admin.request('POST', `/apps/${app.appId}/test-callback`);
    expect(test.status).toBe(403);
    expect(test.body.error.code).toBe('102');
    expect(rx.received).toHaveLength(0);
  });

  it('redelivers: a new attempt series with the same id, even after delivery', async () => {
    const t = await boot();
    const rx = await startReceiver();
    const app = await appWithCallback(t, rx.url);
    const videoId = await videoThrough(t, app, [5, 6, 1]);
    const first = await settled(t, app.appId, videoId);
    expect(first.state).toBe('delivered');

    const r = await t.admin.request('POST', `/deliveries/${first.id}/redeliver`);
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ id: first.id, series: 2 });
    const again = await waitUntil('the redelivery', async () => {
      const d = (await t.admin.request('GET', `/deliveries/${first.id}`)).body;
      return d.state === 'delivered' && d.series === 2 ? d : undefined;
    }, { timeoutMs: 10_000 });
    expect(again.attempts.map((a: any) => [a.series, a.attempt, a.httpStatus])).toEqual([
      [1, 1, 200],
      [2, 1, 200],
    ]);
    expect(rx.received).toHaveLength(2);
    expect(rx.received[1]!.headers['webhook-id']).toBe(rx.received[0]!.headers['webhook-id']);
    expect(rx.received[1]!.fields).toMatchObject({ VideoId: videoId, VideoStatus: '1' });
    expect(verify(rx.received[1]!, app.secret)).toBe(true);

    expect((await t.admin.request('POST', '/deliveries/no-such-id/redeliver')).body.error.code).toBe('304');
    expect((await t.admin.request('GET', '/deliveries/no-such-id')).status).toBe(404);
  });

  it('sends a test callback on demand and keeps it in the log', async () => {
    const t = await boot();
    const rx = await startReceiver(() => ({ status: 200, body: 'x'.repeat(5000) }));
    const app = await appWithCallback(t, rx.url);

    const r = await t.admin.request('POST', `/apps/${app.appId}/test-callback`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ kind: 'test', state: 'delivered', videoId: '00000000-0000-0000-0000-000000000000', videoStatus: 1 });
    expect(r.body.attempts).toHaveLength(1);
    expect(r.body.attempts[0]).toMatchObject({ ok: true, httpStatus: 200, error: '' });
    expect(r.body.attempts[0].responseExcerpt).toBe('x'.repeat(1024));
    expect(rx.received).toHaveLength(1);
    expect(rx.received[0]!.fields).toMatchObject({ VideoId: '00000000-0000-0000-0000-000000000000', VideoStatus: '1', Test: '1', AppId: app.appId });
    expect(verify(rx.received[0]!, app.secret)).toBe(true);
    expect((await deliveries(t, app.appId)).map((d) => d.id)).toEqual([r.body.id]);

    // A receiver that fails: the answer says so, with no retry.
    const down = await startReceiver(() => ({ status: 404, body: 'who?' }));
    await t.admin.request('PATCH', `/apps/${app.appId}`, { callbackUrl: down.url });
    const failed = await t.admin.request('POST', `/apps/${app.appId}/test-callback`);
    expect(failed.body).toMatchObject({ state: 'failed', lastError: 'HTTP 404' });
    expect(failed.body.attempts).toHaveLength(1);
    await t.vop.jobs.idle(['callback']);
    expect(down.received).toHaveLength(1);

    const none = await t.newApp();
    const refused = await t.admin.request('POST', `/apps/${none.appId}/test-callback`);
    expect(refused.status).toBe(400);
    expect((await t.admin.request('POST', '/apps/nope/test-callback')).status).toBe(404);
  });

  it('gives up on an attempt that gets no answer in time', async () => {
    const t = await boot({ callbacks: { ...FAST, timeoutMs: 300 } });
    const rx = await startReceiver(() => new Promise<Reply>(() => undefined)); // never answers
    const app = await appWithCallback(t, rx.url);
    const started = Date.now();
    const r = await t.admin.request('POST', `/apps/${app.appId}/test-callback`);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(r.body).toMatchObject({ state: 'failed', lastError: 'timed out after 300 ms' });
    expect(r.body.attempts[0]).toMatchObject({ httpStatus: null, ok: false });
    expect(r.body.attempts[0].latencyMs).toBeGreaterThanOrEqual(290);
    expect(rx.received).toHaveLength(1);
  });

  it('pages the log newest first', async () => {
    const t = await boot();
    const rx = await startReceiver();
    const app = await appWithCallback(t, rx.url);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await t.admin.request('POST', `/apps/${app.appId}/test-callback`)).body.id);
    const p1 = await t.admin.request('GET', `/apps/${app.appId}/deliveries?limit=2`);
    expect(p1.body.deliveries.map((d: any) => d.id)).toEqual([ids[4], ids[3]]);
    const p2 = await t.admin.request('GET', `/apps/${app.appId}/deliveries?limit=2&before=${p1.body.nextBefore}`);
    expect(p2.body.deliveries.map((d: any) => d.id)).toEqual([ids[2], ids[1]]);
    const p3 = await t.admin.request('GET', `/apps/${app.appId}/deliveries?limit=2&before=${p2.body.nextBefore}`);
    expect(p3.body).toMatchObject({ nextBefore: null });
    expect(p3.body.deliveries.map((d: any) => d.id)).toEqual([ids[0]]);
    expect((await t.admin.request('GET', `/apps/${app.appId}/deliveries?limit=0`)).body.error.code).toBe('202');
    expect((await t.admin.request('GET', `/apps/${app.appId}/deliveries?before=nope`)).body.error.code).toBe('201');
    expect((await t.admin.request('GET', '/apps/nope/deliveries')).status).toBe(404);
  });

  it('keeps a pending delivery across a restart and delivers it afterwards', async () => {
    const dataDir = tempDataDir();
    const slowRetry: CallbackOptions = { ...FAST, retry: { maxRetries: 10_000, baseDelayMs: 20, maxDelayMs: 100, jitter: true } };
    // A port with nothing listening: every attempt is refused.
    const probe = await startReceiver();
    const port = probe.port;
    await probe.close();
    const url = `http://127.0.0.1:${port}/vop/callback`;

    const t1 = await boot({ dataDir, callbacks: slowRetry });
    const app = await appWithCallback(t1, url);
    const videoId = await videoThrough(t1, app, [5, 6, 1]);
    const pending = await waitUntil('a refused attempt', async () => {
      const d = (await deliveries(t1, app.appId)).find((x) => x.videoId === videoId);
      return d?.attempts.length >= 1 ? d : undefined;
    }, { timeoutMs: 10_000 });
    expect(pending.state).toBe('pending');
    expect(pending.attempts[0].httpStatus).toBeNull();
    expect(pending.attempts[0].error).toContain('ECONNREFUSED');
    await t1.close();

    const rx = await startReceiver(undefined, port);
    const t2 = await boot({ dataDir, callbacks: slowRetry });
    const d = await settled(t2, app.appId, videoId);
    expect(d.id).toBe(pending.id);
    expect(d.state).toBe('delivered');
    expect(d.attempts.at(-1)).toMatchObject({ ok: true, httpStatus: 200 });
    expect(rx.received).toHaveLength(1);
    expect(rx.received[0]!.headers['webhook-id']).toBe(pending.id);
    expect(verify(rx.received[0]!, app.secret)).toBe(true);
  });

  it('stores the delivery with the status (an outbox): a change whose process stopped before queueing it is still called back, once', async () => {
    const dataDir = tempDataDir();
    const rx = await startReceiver();
    const t1 = await boot({ dataDir, callbacks: { ...FAST, sweepMs: 60_000 } });
    const app = await appWithCallback(t1, rx.url);
    const id = await videoThrough(t1, app, [5, 6]);
    // The store directly, as if the process died right after the change was durable: no event,
    // so nothing queued its attempt. The delivery is there all the same, written with the status.
    expect(await t1.vop.stores.videos.setStatus(id, 1)).toBe(true);
    const [stored] = await deliveries(t1, app.appId);
    expect(stored).toMatchObject({ videoId: id, videoStatus: 1, state: 'pending', attempts: [] });
    await t1.close();

    const t2 = await boot({ dataDir });
    const d = await settled(t2, app.appId, id);
    expect(d).toMatchObject({ id: stored.id, state: 'delivered', videoStatus: 1 });
    expect(rx.received.map((r) => [r.fields.VideoId, r.headers['webhook-id']])).toEqual([[id, stored.id]]);
    await t2.close();

    // A third start finds nothing to send: no second callback.
    const t3 = await boot({ dataDir });
    // The start-up catch-up has finished (what it would queue is queued), and its jobs have run: none may be sent.
    expect(await t3.vop.services.callbacks.startCatchUp()).toEqual({ created: 0, requeued: 0 });
    await t3.vop.jobs.idle(['callback']);
    expect(rx.received).toHaveLength(1);
    expect(await deliveries(t3, app.appId)).toHaveLength(1);
  });

  it('sweeps the outbox while running: a delivery no job holds is sent by the next sweep, once', async () => {
    const rx = await startReceiver();
    const t = await boot({ callbacks: { ...FAST, sweepMs: 200 } });
    const app = await appWithCallback(t, rx.url);
    const id = await videoThrough(t, app, [5, 6]);
    expect(await t.vop.stores.videos.setStatus(id, 7)).toBe(true);
    const d = await settled(t, app.appId, id);
    expect(d).toMatchObject({ state: 'delivered', videoStatus: 7 });
    // Time is the subject here: two more sweeps (every 200 ms) must not send it again.
    await new Promise((r) => setTimeout(r, 500));
    await t.vop.jobs.idle(['callback']);
    expect(rx.received.map((r) => r.headers['webhook-id'])).toEqual([d.id]);
  });

  it('catches up in the background on a library that has no deliveries, slice by slice, a batch per write', async () => {
    // A library from before callbacks existed: finished videos stored without a delivery (the
    // store directly: no event). More than one read slice (2,000 videos) and write (1,000 rows).
    const dataDir = tempDataDir();
    const rx = await startReceiver();
    const t1 = await boot({ dataDir });
    const quiet = await t1.newApp();
    const loud = await appWithCallback(t1, rx.url);
    const quietVideos = Array.from({ length: 4_500 }, () => videoRecord(quiet.appId, { status: 1 }));
    const loudVideos = Array.from({ length: 3 }, () => videoRecord(loud.appId, { status: 4 }));
    await Promise.all([...quietVideos, ...loudVideos].map((v) => t1.vop.stores.videos.insert(v)));
    await t1.close();

    const t2 = await boot({ dataDir });
    expect(await t2.vop.services.callbacks.startCatchUp()).toEqual({ created: 4_503, requeued: 0 });
    await waitUntil('three callbacks', () => rx.received.length >= 3 || undefined, { timeoutMs: 10_000 });
    expect(rx.received.map((r) => r.fields.VideoId).sort()).toEqual(loudVideos.map((v) => v.id).sort());
    const skipped = await deliveries(t2, quiet.appId, '?limit=200');
    expect(skipped).toHaveLength(200);
    expect(skipped.every((d) => d.state === 'skipped' && d.lastError === 'no callback address')).toBe(true);
    await t2.close();

    // Nothing is left for the next start.
    const t3 = await boot({ dataDir });
    expect(await t3.vop.services.callbacks.startCatchUp()).toEqual({ created: 0, requeued: 0 });
    await t3.vop.jobs.idle(['callback']);
    expect(rx.received).toHaveLength(3);
  });

  it('stores one status delivery per change when many are written at once, and says which', async () => {
    const db = await DurableDatabase.open({ dir: tempDataDir() });
    try {
      const store = new SqlJsCallbackStore(db);
      let seq = 0;
      const delivery = (videoId: string, statusAt: number): DeliveryRecord => ({
        id: crypto.randomUUID(), seq: ++seq, appId: 'app', kind: 'status', videoId, videoStatus: 1, statusAt, state: 'skipped',
        series: 1, seriesAttempts: 0, firstAttemptAt: null, nextAttemptAt: null, deliveredAt: null, lastError: 'no callback address',
        attemptJob: '', createdAt: 1, updatedAt: 1,
      });
      const first = Array.from({ length: 250 }, (_, i) => delivery(`video-${i}`, 1000));
      expect(await store.insertMany(first)).toEqual(first.map(() => true));
      // The same changes again (the listener got there first), among new ones, across statements.
      const again = Array.from({ length: 300 }, (_, i) => delivery(`video-${i}`, i % 2 === 0 ? 1000 : 2000));
      expect(await store.insertMany(again)).toEqual(again.map((_, i) => i >= 250 || i % 2 === 1));
      expect(await store.insert(delivery('video-0', 1000))).toBe(false);
      expect(await store.insert(delivery('video-0', 3000))).toBe(true);
      expect((await store.listByApp('app', { limit: 1000 })).length).toBe(250 + 175 + 1);
    } finally {
      await db.close();
    }
  });

  it('ends the series when its attempt job is cancelled', async () => {
    const t = await boot({ callbacks: { ...FAST, retry: { maxRetries: 10, baseDelayMs: 60_000, maxDelayMs: 60_000, jitter: false } } });
    const rx = await startReceiver(() => ({ status: 500 }));
    const app = await appWithCallback(t, rx.url);
    const videoId = await videoThrough(t, app, [5, 6, 1]);
    const waiting = await waitUntil('the retry to be queued', async () => {
      const d = (await deliveries(t, app.appId)).find((x) => x.videoId === videoId);
      return d?.attempts.length === 1 && d.nextAttemptAt ? d : undefined;
    }, { timeoutMs: 10_000 });
    expect(Date.parse(waiting.nextAttemptAt)).toBeGreaterThan(Date.now() + 30_000);
    const job = await waitUntil('the retry job', async () => (await t.vop.stores.jobs.list({ types: ['callback'], states: ['queued'] }))[0], { timeoutMs: 10_000 });
    expect(await t.vop.jobs.cancel(job.id)).toBe(true);
    const d = await settled(t, app.appId, videoId);
    expect(d).toMatchObject({ state: 'failed', lastError: 'cancelled', nextAttemptAt: null });
    expect(rx.received).toHaveLength(1);
  });

  it('validates its options, naming the bad one', () => {
    const dataDir = tempDataDir();
    expect(() => resolveOptions({ dataDir, callbacks: { ...FAST, timeoutMs: 0 } })).toThrow(/callbacks\.timeoutMs/);
    expect(() => resolveOptions({ dataDir, callbacks: { ...FAST, windowMs: -1 } })).toThrow(/callbacks\.windowMs/);
    expect(() => resolveOptions({ dataDir, callbacks: { ...FAST, retry: { ...FAST.retry, maxRetries: -1 } } })).toThrow(/callbacks\.retry\.maxRetries/);
    expect(resolveOptions({ dataDir }).callbacks).toEqual(DEFAULT_CALLBACK_OPTIONS);
  });
});
