import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeClip } from '../helpers/clips.js';
import { ingestPath, sha256, sha256File, waitForIngest } from '../helpers/ingest.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, tempDataDir, type TestServer } from '../helpers/server.js';
import { SETTING_LABELS } from '../../server/settings/settingProblem.js';
import { isWarningLine } from '../../server/core/logLines.js';

const CAP = 1_000_000;
const quickRetry = { maxRetries: 2, baseDelayMs: 50, maxDelayMs: 100, jitter: false };

let clip: Buffer;
let source: http.Server;
let sourceBase: string;
/** Requests the source server saw, by path. */
const hits = new Map<string, number>();
/** Called by /stall.mp4 on its first request, once half the clip is sent. */
let onStall: (() => void) | undefined;

beforeAll(async () => {
  const file = await makeClip({ seconds: 2 });
  clip = fs.readFileSync(file);
  fs.rmSync(file);
  source = http.createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    const n = (hits.get(path) ?? 0) + 1;
    hits.set(path, n);
    const send = (body: Buffer, type = 'video/mp4') => res.writeHead(200, { 'content-type': type, 'content-length': body.length }).end(body);
    switch (path) {
      case '/clip.mp4':
        return send(clip);
      case '/text.mp4':
        return send(Buffer.from('not a video at all\n'.repeat(20)), 'text/plain');
      case '/big.mp4':
        return send(Buffer.alloc(CAP + 1));
      case '/big-chunked.mp4': {
        // No Content-Length: the cap is met while streaming.
        res.writeHead(200, { 'content-type': 'video/mp4' });
        const chunk = Buffer.alloc(64 * 1024);
        let sent = 0;
        const pump = () => {
          while (sent <= CAP + chunk.length) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('error', () => undefined);
        return pump();
      }
      case '/flaky.mp4':
        if (n === 1) return res.writeHead(503).end('busy');
        return send(clip);
      case '/moved.mp4':
        return res.writeHead(302, { location: '/clip.mp4' }).end();
      case '/to-metadata.mp4':
        return res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/x.mp4' }).end();
      case '/to-zero.mp4':
        return res.writeHead(301, { location: 'http://0.0.0.0/x.mp4' }).end();
      case '/loop.mp4':
        return res.writeHead(302, { location: `/loop.mp4?n=${n}` }).end();
      case '/stall.mp4':
        if (n === 1) {
          res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': clip.length });
          res.write(clip.subarray(0, clip.length >> 1));
          onStall?.();
          return; // never ends: the server is stopped while this hangs
        }
        return send(clip);
      default:
        return res.writeHead(404).end('no such file');
    }
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  sourceBase = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
});
afterAll(async () => {
  source.closeAllConnections();
  await new Promise((r) => source.close(r));
});

const servers: TestServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

/** The test's sources listen on loopback, which pulls reach only when opted in (issue 12, item 6). */
const LOOPBACK = ['127.0.0.0/8'];

async function boot(extra: Parameters<typeof startServer>[0] = {}) {
  const s = await startServer({ ingest: { pull: { maxBytes: CAP, retry: quickRetry, connectTimeoutMs: 2000, idleTimeoutMs: 2000, allow: LOOPBACK } }, ...extra });
  servers.push(s);
  return s;
}

async function pull(s: TestServer, path: string) {
  const client = await s.newApp();
  const videoId = await client.register({ SourceFileGetType: 2, SourceFilePath: path.startsWith('http') ? path : `${sourceBase}${path}` });
  const status = await waitForIngest(s.vop, videoId);
  const video = (await s.vop.stores.videos.get(videoId))!;
  return { videoId, status, video, history: await ingestPath(s.vop, videoId) };
}

describe('pull from a URL (SourceFileGetType 2)', () => {
  it('downloads, stores and checks the file: 2 → 3 → 5, with progress', async () => {
    const s = await boot();
    const progress: Array<{ percent: number; speed?: string }> = [];
    s.vop.events.on('job.progress', (p) => p.type === 'download' && progress.push(p));
    const { videoId, status, video, history } = await pull(s, '/clip.mp4');
    expect(status).toBe(5);
    expect(history).toEqual([2, 3, 5]);
    expect(video.sourceFile).toBe(`${videoId}/source`);
    expect(video.duration).toBe(2);
    expect(sha256File(s.vop.media.path('sources', videoId, 'source'))).toBe(sha256(clip));
    expect(progress.at(-1)).toMatchObject({ percent: 100, speed: expect.stringMatching(/MB\/s$/) });
    expect(fs.readdirSync(s.vop.media.path('incoming', videoId))).toEqual([]);
  });

  it('follows a redirect on the same policy', async () => {
    const s = await boot();
    expect((await pull(s, '/moved.mp4')).status).toBe(5);
  });

  it('a missing file (404): 4 with the reason, not retried', async () => {
    const s = await boot();
    const before = hits.get('/missing.mp4') ?? 0;
    const { status, video, history } = await pull(s, '/missing.mp4');
    expect(status).toBe(4);
    expect(history).toEqual([2, 3, 4]);
    expect(video.statusReason).toMatch(/HTTP 404/);
    expect((hits.get('/missing.mp4') ?? 0) - before).toBe(1);
  });

  it('a file that is not a video: 7 with the reason', async () => {
    const s = await boot();
    const { status, video, history } = await pull(s, '/text.mp4');
    expect(status).toBe(7);
    expect(history).toEqual([2, 3, 7]);
    expect(video.statusReason).toMatch(/^not a video: /);
    // What the source sent is not kept (issue 12, item 6).
    expect(video.sourceFile).toBe('');
    expect(fs.existsSync(s.vop.media.path('sources', video.id, 'source'))).toBe(false);
  });

  it('a source over the cap: 4, whether Content-Length says so or the stream shows it', async () => {
    const s = await boot();
    const announced = await pull(s, '/big.mp4');
    expect(announced.status).toBe(4);
    expect(announced.video.statusReason).toMatch(/over the .* limit/);
    const streamed = await pull(s, '/big-chunked.mp4');
    expect(streamed.status).toBe(4);
    expect(streamed.video.statusReason).toMatch(/over the .* limit/);
    expect(fs.readdirSync(s.vop.media.path('incoming', streamed.videoId))).toEqual([]);
  });

  it('a redirect to a refused address: 4, refused before connecting', async () => {
    const s = await boot();
    // Every outgoing connection of the pull goes through http.request: none may aim off the machine.
    const spy = vi.spyOn(http, 'request');
    const meta = await pull(s, '/to-metadata.mp4');
    expect(meta.status).toBe(4);
    expect(meta.video.statusReason).toMatch(/refused address 169\.254\.169\.254 \(cloud metadata service\)/);
    const zero = await pull(s, '/to-zero.mp4');
    expect(zero.status).toBe(4);
    expect(zero.video.statusReason).toMatch(/refused address 0\.0\.0\.0 \(unspecified\)/);
    const targets = spy.mock.calls.map((c) => String(c[0] instanceof URL ? c[0].hostname : (c[0] as { hostname?: string }).hostname ?? c[0]));
    spy.mockRestore();
    expect(targets.length).toBeGreaterThan(0);
    expect(targets.every((h) => h === '127.0.0.1')).toBe(true);
  });

  it('a source on a refused address or host is refused outright', async () => {
    const s = await boot();
    const client = await s.newApp();
    for (const [url, why] of [
      ['http://169.254.169.254/latest/x.mp4', /refused address 169\.254\.169\.254/],
      ['http://[fe80::1]/x.mp4', /refused address fe80::1 \(linkLocal;/],
      ['http://[::ffff:169.254.169.254]/x.mp4', /refused address .* \(cloud metadata service\)/],
      ['http://224.0.0.1/x.mp4', /multicast/],
      ['http://metadata.google.internal/computeMetadata/x.mp4', /refused host metadata\.google\.internal/],
    ] as const) {
      const videoId = await client.register({ SourceFileGetType: 2, SourceFilePath: url });
      expect(await waitForIngest(s.vop, videoId)).toBe(4);
      expect((await s.vop.stores.videos.get(videoId))!.statusReason).toMatch(why);
    }
  });

  it('more than 5 redirects: 4', async () => {
    const s = await boot();
    const { status, video } = await pull(s, '/loop.mp4');
    expect(status).toBe(4);
    expect(video.statusReason).toMatch(/more than 5 redirects/);
  });

  it('a transient 503 is retried with backoff, then succeeds', async () => {
    const s = await boot();
    const { status, history } = await pull(s, '/flaky.mp4');
    expect(status).toBe(5);
    expect(hits.get('/flaky.mp4')).toBe(2);
    expect(history).toEqual([2, 3, 5]);
  });

  it('a connection that goes quiet fails the attempt after the idle timeout; attempts used up: 4', async () => {
    const quiet = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write(Buffer.alloc(10)); // then nothing
    });
    await new Promise<void>((r) => quiet.listen(0, '127.0.0.1', r));
    try {
      const s = await boot({ ingest: { pull: { idleTimeoutMs: 200, retry: { maxRetries: 1, baseDelayMs: 10, maxDelayMs: 10, jitter: false } } } });
      const { status, video } = await pull(s, `http://127.0.0.1:${(quiet.address() as AddressInfo).port}/quiet.mp4`);
      expect(status).toBe(4);
      expect(video.statusReason).toMatch(/download failed/);
    } finally {
      quiet.closeAllConnections();
      await new Promise((r) => quiet.close(r));
    }
  });

  it('by default refuses this machine (loopback) before connecting, and names the setting that opts in', async () => {
    const s = await startServer({ ingest: { pull: { retry: quickRetry } } });
    servers.push(s);
    const before = hits.get('/clip.mp4') ?? 0;
    const { status, video } = await pull(s, '/clip.mp4');
    expect(status).toBe(4);
    expect(video.statusReason).toMatch(/refused address 127\.0\.0\.1 \(loopback; /);
    // The setting by every name it has (option, flag, variable, the console's field), and a CIDR for it.
    for (const name of ['ingest.pull.allow', '--pull-allow 127.0.0.1/32', 'VOP_PULL_ALLOW=127.0.0.1/32', `console's Settings (${SETTING_LABELS.pullAllow})`]) {
      expect(video.statusReason).toContain(name);
    }
    expect(video.statusReason).not.toMatch(/(?<![.\w])pull\.allow/);
    expect(hits.get('/clip.mp4') ?? 0).toBe(before);
  });

  it('warns at start about a saved allow entry that narrows nothing any more', async () => {
    const s = await boot({ ingest: { pull: { allow: [...LOOPBACK, '10.0.0.0/8'] } } });
    // One warning, for the entry that narrows nothing, naming the setting to use instead.
    const warnings = s.logs.filter(isWarningLine);
    const about = warnings.filter((l) => l.includes('10.0.0.0/8'));
    expect(about).toHaveLength(1);
    expect(about[0]).toContain('ingest.pull.deny');
    expect(warnings.some((l) => l.includes('127.0.0.0/8'))).toBe(false);
  });

  it('the admin can narrow the policy: a deny list refuses loopback', async () => {
    const s = await boot({ ingest: { pull: { allow: LOOPBACK, deny: ['127.0.0.0/8'] } } });
    const { status, video } = await pull(s, '/clip.mp4');
    expect(status).toBe(4);
    expect(video.statusReason).toMatch(/refused address 127\.0\.0\.1 \(in ingest\.pull\.deny\)/);
  });

  it('a download cut by a restart starts again on the next start and completes', async () => {
    const dataDir = tempDataDir();
    const s1 = await startServer({ dataDir, ingest: { pull: { retry: quickRetry, allow: LOOPBACK } } });
    const client = await s1.newApp();
    const stalled = new Promise<void>((r) => (onStall = r));
    const videoId = await client.register({ SourceFileGetType: 2, SourceFilePath: `${sourceBase}/stall.mp4` });
    await stalled;
    await waitForStatus(s1.vop, videoId, [3], { timeoutMs: 20_000 });
    await waitUntil('the partial download on disk', () => fs.existsSync(s1.vop.media.path('incoming', videoId, 'download.part')) || undefined, { timeoutMs: 5_000 });
    await s1.close();

    const s2 = await boot({ dataDir, ingest: { pull: { retry: quickRetry, allow: LOOPBACK } } });
    expect(await waitForIngest(s2.vop, videoId)).toBe(5);
    expect(hits.get('/stall.mp4')).toBe(2);
    expect(sha256File(s2.vop.media.path('sources', videoId, 'source'))).toBe(sha256(clip));
    expect(await ingestPath(s2.vop, videoId)).toEqual([2, 3, 5]);
  });
});
