/**
 * The hot paths' turns (server/http/hotPaths.ts, turns; issue 14): requests read together are
 * handled at most REQUESTS_PER_TURN a turn of the event loop, in the order they came, so that a
 * connection opened meanwhile is taken in (libuv accepts one a turn) before the others are all
 * handled; and every answer reaches its own connection in the turn its request was handled.
 *
 * The server here is node:http with the hot paths' dispatcher and a route that notes when each
 * request was handled; the clients are raw sockets, so that forty requests are written at once
 * and read by the server in one poll phase.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { REQUESTS_PER_TURN, hotPaths, type HotHandler } from '../../server/http/hotPaths.js';
import { notYet, waitUntil } from '../helpers/wait.js';

interface Run {
  /** The turn (counted by a setImmediate chain) each request was handled in, by its number. */
  handledIn: Map<number, number>;
  /** Order of events: `h<n>` request n handled, `late` the connection opened during the first turn taken in. */
  order: string[];
  /** The turn each answer was written in, by its request's number. */
  writtenIn: Map<number, number>;
  /** The answers each client got: status and body. */
  answers: { status: number; body: string }[];
}

const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

/**
 * Opens `n` connections, waits until the server has taken them all in, writes one request on
 * each in one go, and opens one more connection when the first request is handled. Requests
 * with an odd number are answered after a promise job, the others at once.
 */
async function run(n: number, perTurn?: number): Promise<Run> {
  let turn = 0;
  let ticking = true;
  const tick = () => {
    turn++;
    if (ticking) setImmediate(tick);
  };
  const r: Run = { handledIn: new Map(), order: [], writtenIn: new Map(), answers: [] };
  let late: net.Socket | undefined;
  let port = 0;
  const handler: HotHandler = async (req, res, hot) => {
    const i = Number(new URLSearchParams(hot.query).get('i'));
    r.handledIn.set(i, turn);
    r.order.push(`h${i}`);
    if (!late) late = net.connect(port, '127.0.0.1');
    const end = res.end.bind(res) as (...args: unknown[]) => http.ServerResponse;
    res.end = ((...args: unknown[]) => {
      r.writtenIn.set(i, turn);
      return end(...args);
    }) as typeof res.end;
    const body = Buffer.from(`answer ${i}`);
    if (i % 2 === 1) await Promise.resolve();
    hot.answer(res, 200, { 'Content-Type': 'text/plain', 'Content-Length': body.length }, body);
  };
  const dispatch = hotPaths({ exact: { '/t': handler }, prefixes: {} }, () => {}, perTurn);
  const server = http.createServer((req, res) => {
    if (!dispatch(req, res)) res.writeHead(404).end();
  });
  servers.push(server);
  let connected = 0;
  server.on('connection', () => {
    connected++;
    if (connected === n + 1) r.order.push('late');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;

  const sockets = await Promise.all(
    Array.from({ length: n }, () => new Promise<net.Socket>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s));
    })),
  );
  await waitUntil(`the server to have taken in ${n} connections`, () => connected >= n || notYet({ connected }), { timeoutMs: 5_000, pollMs: 2 });
  expect(connected).toBe(n);
  const replies = sockets.map(
    (s) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        let text = '';
        s.setEncoding('latin1');
        s.on('data', (d: string) => {
          text += d;
          const head = text.indexOf('\r\n\r\n');
          const length = Number(/content-length: (\d+)/i.exec(text)?.[1]);
          if (head !== -1 && text.length >= head + 4 + length) resolve({ status: Number(text.slice(9, 12)), body: text.slice(head + 4) });
        });
        s.once('error', reject);
      }),
  );
  setImmediate(tick);
  sockets.forEach((s, i) => s.write(`GET /t?i=${i} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
  r.answers = await Promise.all(replies);
  // The connection opened while the first request was handled: taken in by now, or soon after.
  await waitUntil('the late connection taken in', () => r.order.includes('late') || notYet(r.order.slice(-3)), { timeoutMs: 5_000, pollMs: 2 });
  ticking = false;
  for (const s of sockets) s.destroy();
  late?.destroy();
  return r;
}

describe('hot path turns', () => {
  it(`handles at most ${REQUESTS_PER_TURN} requests a turn, in order, and takes in a connection opened meanwhile before it has handled them all`, async () => {
    const n = 40;
    const r = await run(n);
    // Every client got its own answer.
    expect(r.answers).toEqual(Array.from({ length: n }, (_, i) => ({ status: 200, body: `answer ${i}` })));
    // In the order they were written, at most REQUESTS_PER_TURN a turn, in turns one after the other.
    const handled = r.order.filter((e) => e.startsWith('h'));
    expect(handled).toEqual(Array.from({ length: n }, (_, i) => `h${i}`));
    const perTurn = new Map<number, number>();
    for (const t of r.handledIn.values()) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(REQUESTS_PER_TURN);
    expect(perTurn.size).toBeGreaterThanOrEqual(Math.ceil(n / REQUESTS_PER_TURN));
    // The connection opened while the first turn ran was taken in before the last request was handled.
    expect(r.order.indexOf('late')).toBeGreaterThan(-1);
    expect(r.order.indexOf('late')).toBeLessThan(r.order.indexOf(`h${n - 1}`));
    // Answers made at once and after a promise job alike were written in the turn that handled them.
    expect(r.writtenIn).toEqual(r.handledIn);
  });

  it('handled all in one turn (no limit), the same connection waits until every request is handled', async () => {
    // What the limit is for: without it the forty are handled in the turn that read them, and
    // the connection opened meanwhile is taken in only after.
    const n = 40;
    const r = await run(n, Number.MAX_SAFE_INTEGER);
    expect(r.answers.every((a, i) => a.status === 200 && a.body === `answer ${i}`)).toBe(true);
    expect(new Set(r.handledIn.values()).size).toBe(1);
    expect(r.order.indexOf('late')).toBeGreaterThan(r.order.indexOf(`h${n - 1}`));
  });
});
