/**
 * A callback's failure, written by the server and read back by the console in its language
 * (issue 35, item 5: no raw `connect ECONNREFUSED 127.0.0.1:9` in a Chinese page). Real attempts
 * over loopback make each failure (a closed port, a silent server, a cut connection, a 500, a
 * redirect); server/callbacks/attemptFailure.ts must read what the sender wrote, and both
 * catalogues must say it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureWords, readFailure, type AttemptFailure } from '../../server/callbacks/attemptFailure.js';
import { sendCallback } from '../../server/callbacks/callbackHttp.js';
import { en } from '../../renderer/src/messages/en.js';
import { zhCN } from '../../renderer/src/messages/zh-CN.js';

/** A server on loopback answering each path its own way. */
let server: http.Server;
let base = '';
/** A port nothing listens on: taken, then let go. */
let closedPort = 0;
const held: http.ServerResponse[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/fail') res.writeHead(500).end('no');
    else if (req.url === '/moved') res.writeHead(302, { location: 'https://elsewhere.example/hook' }).end();
    else if (req.url === '/cut') req.socket.destroy();
    else held.push(res); // /silent: never answers
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const spare = http.createServer();
  await new Promise<void>((r) => spare.listen(0, '127.0.0.1', r));
  closedPort = (spare.address() as AddressInfo).port;
  await new Promise((r) => spare.close(r));
});

afterAll(async () => {
  for (const res of held) res.destroy();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** One real attempt to `url`: what the server would store. */
async function attempt(url: string, timeoutMs = 5_000): Promise<string> {
  const outcome = await sendCallback(url, { body: 'VideoId=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, { timeoutMs, excerptBytes: 64 });
  expect(outcome.ok).toBe(false);
  return outcome.error;
}

describe('a callback failure, written by the sender and read by the console', () => {
  it('reads back every failure a real attempt writes', async () => {
    const cases: Array<[string, AttemptFailure]> = [
      [await attempt(`http://127.0.0.1:${closedPort}/hook`), { kind: 'refused', address: `127.0.0.1:${closedPort}` }],
      [await attempt(`${base}/silent`, 300), { kind: 'timedOut', ms: 300 }],
      [await attempt(`${base}/cut`), { kind: 'reset' }],
      [await attempt(`${base}/fail`), { kind: 'httpStatus', status: 500 }],
      [await attempt(`${base}/moved`), { kind: 'redirect', status: 302, location: 'https://elsewhere.example/hook' }],
      [await attempt('ftp://127.0.0.1/hook'), { kind: 'badAddress', address: 'ftp://127.0.0.1/hook' }],
    ];
    for (const [words, failure] of cases) expect(readFailure(words), words).toEqual(failure);
  });

  it('reads back the reasons nothing was sent, and Node words it did not make itself', () => {
    for (const kind of ['noApplication', 'applicationDisabled', 'noCallbackAddress', 'cancelled'] as const) expect(readFailure(failureWords({ kind }))).toEqual({ kind });
    expect(readFailure('getaddrinfo ENOTFOUND hooks.example.invalid')).toEqual({ kind: 'unknownHost', host: 'hooks.example.invalid' });
    expect(readFailure('connect EHOSTUNREACH 10.9.9.9:443')).toEqual({ kind: 'unreachable', address: '10.9.9.9:443' });
    expect(readFailure('CERT_HAS_EXPIRED: certificate has expired')).toEqual({ kind: 'certificate', code: 'CERT_HAS_EXPIRED' });
    // Words it does not know are left to be shown as they are.
    expect(readFailure('something else went wrong')).toBeUndefined();
  });

  it('is said in each language, the Chinese without English words beyond codes and addresses', () => {
    const failures: AttemptFailure[] = [
      { kind: 'refused', address: '127.0.0.1:9' },
      { kind: 'unreachable', address: '10.9.9.9:443' },
      { kind: 'unknownHost', host: 'hooks.example.invalid' },
      { kind: 'reset' },
      { kind: 'timedOut', ms: 10_000 },
      { kind: 'certificate', code: 'CERT_HAS_EXPIRED' },
      { kind: 'httpStatus', status: 500 },
      { kind: 'redirect', status: 302, location: 'https://elsewhere.example/hook' },
      { kind: 'badAddress', address: 'ftp://x' },
      { kind: 'noApplication' },
      { kind: 'applicationDisabled' },
      { kind: 'noCallbackAddress' },
      { kind: 'cancelled' },
    ];
    for (const f of failures) {
      const zh = zhCN.serverWords.callbackFailure(f);
      expect(zh, f.kind).toMatch(/[\u4e00-\u9fff]/);
      // What is left once the codes, addresses and names the failure carries are taken out: no Latin word.
      const rest = Object.values(f).reduce((s: string, v) => s.split(String(v)).join(''), zh).split('http(s)').join('').replace(/\b(?:ECONNREFUSED|ECONNRESET|ENOTFOUND|HTTPS?|vop)\b/g, '');
      expect(rest, `${f.kind}: ${zh}`).not.toMatch(/[A-Za-z]{2,}/);
      expect(en.serverWords.callbackFailure(f).length, f.kind).toBeGreaterThan(5);
    }
    expect(zhCN.serverWords.callbackFailure({ kind: 'timedOut', ms: 10_000 })).toContain('10 秒');
  });
});
