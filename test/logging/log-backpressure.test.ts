/**
 * The operator log when its reader falls behind. Standard output is a non-blocking pipe or socket
 * once Node has touched it (a log shipper's, a supervisor's, systemd's journal): a write to a full
 * one fails with EAGAIN. The log waits for room instead, as a blocking terminal would: a stalled
 * reader holds the server up, and it loses no line and does not bring the server down (a bare
 * writeSync did, in CI: a request line went missing from logging.test.ts).
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, killStrayProcesses, startServerProcess, tempDataDir, type ServerProcess } from '../helpers/server.js';

const running: ServerProcess[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) await p.stop();
});
afterAll(killStrayProcesses);

describe('the operator log under a slow reader', () => {
  it('holds the server up while nobody reads its output, loses no line, and goes on once the reader is back', async () => {
    const p = await startServerProcess(['--port', '0', '--host', '127.0.0.1', '--data-dir', tempDataDir('vop-logbp-'), '--log-format', 'json', '--log-requests'], { VOP_ADMIN_TOKEN: ADMIN_TOKEN });
    running.push(p);
    // Nobody reads: the pipe fills (a few hundred KB at most) and the server's writes meet EAGAIN.
    p.child.stdout!.pause();
    p.child.stderr!.pause();
    const asked = 1000;
    // A long path makes each line ~1 KB, so 1000 lines are well past any pipe's buffer (dots keep
    // the segment from looking like a token, which the log would mask).
    const filler = 'a.'.repeat(400);
    const answered: number[] = [];
    const ask = async (i: number) => {
      const res = await fetch(`${p.baseUrl}/no-such-page/${i}/${filler}`);
      await res.arrayBuffer();
      answered.push(res.status);
    };
    // Eight at a time.
    const all = (async () => {
      for (let i = 0; i < asked; i += 8) await Promise.all(Array.from({ length: Math.min(8, asked - i) }, (_, k) => ask(i + k)));
    })();
    // Until the answers stop coming: the log is full and the server waits for room.
    let seen = -1;
    for (let polls = 0; polls < 100 && answered.length !== seen; polls++) {
      seen = answered.length;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(answered.length).toBeLessThan(asked);
    p.child.stdout!.resume();
    p.child.stderr!.resume();
    await all;
    expect(answered.length).toBe(asked);
    expect(answered.every((s) => s === 404)).toBe(true);
    // Still up, and every line written.
    expect((await fetch(`${p.baseUrl}/healthz`)).status).toBe(200);
    const count = () => p.output().split('\n').filter((l) => l.includes('"msg":"request"') && l.includes('/no-such-page/')).length;
    for (let polls = 0; polls < 200 && count() < asked; polls++) await new Promise((r) => setTimeout(r, 100));
    expect(count()).toBe(asked);
    for (const l of p.output().split('\n').slice(0, -1)) expect(() => JSON.parse(l), l.slice(0, 200)).not.toThrow();
  }, 120_000);
});
