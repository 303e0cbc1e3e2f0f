/**
 * The operator's lines of a refused pull and of a callback that is not delivered, from a real
 * server in this process writing its log as JSON records into an array.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CALLBACK_OPTIONS } from '../../server/callbacks/options.js';
import { createLogger } from '../../server/logging/logger.js';
import { SpecClient } from '../helpers/client.js';
import { waitUntil } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer | undefined;
let endpoint: http.Server | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
  await new Promise((r) => (endpoint ? endpoint.close(r) : r(undefined)));
  endpoint = undefined;
});

async function serverWithLog(): Promise<{ s: TestServer; records: () => Array<Record<string, unknown>> }> {
  const out: string[] = [];
  const logger = createLogger({ format: 'json', level: 'debug', destination: { write: (t) => out.push(t) } });
  s = await startServer({ operatorLog: { logger, requests: false }, callbacks: { ...DEFAULT_CALLBACK_OPTIONS, retry: { maxRetries: 0, baseDelayMs: 10, maxDelayMs: 10, jitter: false } } });
  return { s, records: () => out.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('the operator log', () => {
  it('a pull the allow list would admit: refused, naming the setting with a CIDR; its callback given up', async () => {
    // The application's callback endpoint answers 500: its one attempt is given up (no retries).
    endpoint = http.createServer((req, res) => req.resume().on('end', () => res.writeHead(500).end()));
    await new Promise<void>((r) => endpoint!.listen(0, '127.0.0.1', r));
    const { s, records } = await serverWithLog();
    const { appId, appSecret } = await s.admin.createApp('pulls', `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/cb`);
    const client = new SpecClient(s.baseUrl, appId, appSecret);
    const videoId = await client.register({ SourceFileGetType: 2, SourceFilePath: 'http://127.0.0.1:9/clip.mp4' });

    const refused = await waitUntil('the refused pull', () => records().find((r) => r.msg === 'pull refused' && r.videoId === videoId), { timeoutMs: 20_000 });
    expect(refused).toMatchObject({ level: 'warn', appId, videoId, via: 'pull', code: '302' });
    expect(String(refused.setting)).toContain('ingest.pull.allow');
    expect(String(refused.setting)).toContain('--pull-allow');
    expect(String(refused.setting)).toContain('VOP_PULL_ALLOW');
    expect(String(refused.setting)).toMatch(/\d+\.\d+\.\d+\.\d+\/\d+/);
    expect(records().find((r) => r.msg === 'pull started' && r.videoId === videoId)).toMatchObject({ appId, videoId });

    // The video's move to 4 calls the application back: 500, and no retry is allowed.
    const givenUp = await waitUntil('the callback given up', () => records().find((r) => r.msg === 'callback given up' && r.videoId === videoId), { timeoutMs: 20_000 });
    expect(givenUp).toMatchObject({ level: 'error', appId, videoId, status: 4, httpStatus: 500, error: 'HTTP 500' });
  }, 30_000);
});
