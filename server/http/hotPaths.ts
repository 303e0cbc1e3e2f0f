/**
 * The hot paths (issue 14): media, covers, HLS, /healthz, the widget's static files and the spec
 * API's read calls, answered on node:http directly, ahead of Express. Everything else (the admin
 * API, the console, uploads, the spec's writes, and every method or path not listed here) goes on
 * to Express as before.
 *
 * Why not Express for these: it costs about 0.2 ms a request before any work is done, most of it
 * not its router but Express 5 giving every request and response its own prototype
 * (Object.setPrototypeOf), which leaves V8 with slow objects all through Node's HTTP code
 * (routes/fastReadPath.ts measured it: 70 to 100 µs a call). A media Range answer through Express
 * made 3,000 answers a second where nginx made 43,000 (issue 14's table).
 *
 * Why not a router package (find-my-way): the hot paths are a handful of fixed paths and one
 * prefix whose few shapes the media handler splits itself; a map lookup costs well under a
 * microsecond, and a dependency would bring parameters, wildcards and versions we do not use.
 * This is the one place a request is dispatched before Express: one table, one way to answer a
 * failure.
 *
 * Matching is Express's as vop sets it: paths without regard to case, one trailing slash allowed,
 * no decoding of the path (`/Api/Video/G%65t` matches nothing here, as it matches no route there).
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { ApiError } from '../core/errors.js';
import { unexpectedErrorLine } from '../core/logLines.js';
import { JSON_CONTENT_TYPE, errorEnvelope, logIfUnexpected, toApiError } from './errorResponses.js';
import { noteRoute } from './routeTemplate.js';

/** A request as the hot paths see it. */
export interface HotRequest {
  /** The path as sent (not decoded). */
  path: string;
  /** What follows the `?`, '' if nothing. */
  query: string;
  /** Sends a whole answer (headers and body in one write) with the others of this turn: see {@link turns}. */
  answer: Answer;
}

/**
 * Sends a whole answer: status, headers (an object, or names and values in one flat list) and the
 * body if any, one buffer or its parts in order (views of cached blocks, sent without joining
 * them; for HEAD, Node leaves the body out). Answers of one turn of the event loop go out together.
 */
export type Answer = (res: ServerResponse, status: number, headers: OutgoingHttpHeaders | readonly string[], body?: Body) => void;

/** A body to send: one buffer, or parts sent one after the other. */
export type Body = Buffer | readonly Buffer[];

/**
 * Writes a whole answer now: headers and body, parts included, in one write (the socket corked
 * around them, as `end` does for one buffer).
 */
export function writeAnswer(res: ServerResponse, status: number, headers: OutgoingHttpHeaders | readonly string[], body?: Body, done?: () => void): void {
  res.writeHead(status, headers as OutgoingHttpHeaders);
  if (body === undefined || Buffer.isBuffer(body)) {
    res.end(body, done);
    return;
  }
  const parts = body as readonly Buffer[];
  res.cork();
  for (let i = 0; i < parts.length - 1; i++) res.write(parts[i]);
  res.end(parts[parts.length - 1], done);
  res.uncork();
}

/**
 * Answers one request. A rejection or throw is answered by {@link sendHotError} (the spec
 * envelope with the catalogue's status), or, once the answer has begun, ends the connection.
 */
export type HotHandler = (req: IncomingMessage, res: ServerResponse, hot: HotRequest) => void | Promise<void>;

export interface HotRoutes {
  /** Exact paths, for GET and HEAD only: other methods go on to Express (which answers 405 or its own route). */
  exact: Record<string, HotHandler>;
  /**
   * Path prefixes ending in `/` (`/media/`), for every method: the handler answers what is not
   * its own (405, 404) itself.
   */
  prefixes: Record<string, HotHandler>;
}

/**
 * Hot requests handled in one turn of the event loop, at most: see {@link turns}.
 */
export const REQUESTS_PER_TURN = 16;

/**
 * Returns the dispatcher: it takes a request on a hot path and returns true, or returns false
 * without touching the request, for Express to take. A request taken is handled in this turn of
 * the event loop or a later one ({@link turns}).
 */
export function hotPaths(routes: HotRoutes, log: (line: string) => void, perTurn = REQUESTS_PER_TURN): (req: IncomingMessage, res: ServerResponse) => boolean {
  // Each path keeps its spelling as the route template of the request metrics (http/routeTemplate.ts).
  const exact = new Map<string, { handler: HotHandler; template: string }>(Object.entries(routes.exact).map(([p, h]) => [p.toLowerCase(), { handler: h, template: p }]));
  const prefixes = Object.entries(routes.prefixes).map(([p, h]) => [p.toLowerCase(), h, `${p}{*rest}`] as const);
  const { answer, take } = turns(perTurn, log, (w) => {
    const { handler, req, res } = w;
    try {
      const done = handler(req, res, { path: w.path, query: w.query, answer });
      if (done) done.catch((err: unknown) => sendHotError(req, res, err, log, {}, answer));
    } catch (err) {
      sendHotError(req, res, err, log, {}, answer);
    }
  });
  return (req, res) => {
    const raw = req.url ?? '';
    const q = raw.indexOf('?');
    const path = q === -1 ? raw : raw.slice(0, q);
    const query = q === -1 ? '' : raw.slice(q + 1);
    for (const [prefix, handler, template] of prefixes) {
      if (path.length >= prefix.length && path.slice(0, prefix.length).toLowerCase() === prefix) {
        noteRoute(res, template);
        take({ handler, req, res, path, query });
        return true;
      }
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    let key = path.toLowerCase();
    if (key.length > 1 && key.endsWith('/')) key = key.slice(0, -1);
    const route = exact.get(key);
    if (!route) return false;
    noteRoute(res, route.template);
    take({ handler: route.handler, req, res, path, query });
    return true;
  };
}

/**
 * Answers a failure with the spec's envelope and the catalogue's status (what the Express error
 * middleware sends), with `headers` added, through `answer`; unexpected failures are logged with their stack. Once
 * the answer has begun there is nothing to say: the connection is ended.
 */
export function sendHotError(req: IncomingMessage, res: ServerResponse, err: unknown, log: (line: string) => void, headers: Record<string, string>, answer: Answer): void {
  if (res.headersSent || res.destroyed) {
    if (!(err instanceof ApiError)) log(unexpectedErrorLine(`${req.method} ${req.url}`, err, 'after the answer began'));
    res.destroy();
    return;
  }
  const apiErr = toApiError(err);
  logIfUnexpected(log, apiErr, err, req.method, req.url);
  const { status, body } = errorEnvelope(apiErr);
  const json = Buffer.from(JSON.stringify(body));
  answer(res, status, { ...headers, 'Content-Type': JSON_CONTENT_TYPE, 'Content-Length': json.length }, json);
}

/** A request read and matched, waiting for its turn. */
interface Waiting {
  handler: HotHandler;
  req: IncomingMessage;
  res: ServerResponse;
  path: string;
  query: string;
}

/**
 * The hot paths' turns of the event loop: requests are handled at most `perTurn` a turn, in the
 * order they were read, and answers are written together.
 *
 * Why at most `perTurn` a turn: libuv (1.45 and later, Node 20) accepts one new connection per
 * turn of the loop. Handled as they were read, every request of every open connection was
 * handled in the same turn, so under load a turn took as long as all of them (50 connections of
 * 64 KiB ranges: 5 ms), and connections opened together waited one such turn each: the 50th
 * of 50 opened at once had its first answer after 100 to 190 ms, the last of 200 HLS viewers
 * after 2 s (`npm run bench -- delivery`, many viewers: p99 1.7 s). Handled 16 a turn, turns are
 * short whatever the number of connections, so new connections, timers and Express's requests
 * all come round soon: the viewers' p99 fell to 50 to 100 ms, with more answers a second and
 * less CPU each (smaller writes at once: fewer of them wait for the socket to drain).
 *
 * Why written together: under load one turn reads requests from many connections; written in
 * between, each answer's send woke the client's side anew (on loopback the sender pays for
 * that, in the kernel), and `writev` took 30% of the server's time. Written back to back they
 * cost less: 19,000 against 24,500 detail calls per second at the same CPU (100,000 videos, 50
 * connections); a 1 KiB media Range answer spent a third of its CPU in `writev` before.
 *
 * When: a turn runs in the loop's check phase (setImmediate) after the poll phase has read what
 * came in. It writes the answers made since the last one (those that waited for a file or the
 * database), handles the next `perTurn` requests, and writes their answers once the promise
 * jobs they started have all run: a tick queued from a promise job runs after the whole queue
 * of them (Node runs ticks, then promise jobs, in turn, until both are empty). With one request
 * in flight nothing waits: its answer goes out in the turn that read it.
 */
function turns(perTurn: number, log: (line: string) => void, handle: (w: Waiting) => void): { answer: Answer; take: (w: Waiting) => void } {
  type Pending = { res: ServerResponse; status: number; headers: OutgoingHttpHeaders | readonly string[]; body?: Body };
  let answers: Pending[] = [];
  let waiting: Waiting[] = [];
  let next = 0; // waiting[next] is the first not yet handled
  let scheduled = false;
  let flushQueued = false;
  const sendAll = () => {
    if (answers.length === 0) return;
    const sending = answers;
    answers = [];
    for (const { res, status, headers, body } of sending) {
      try {
        writeAnswer(res, status, headers, body);
      } catch (err) {
        log(unexpectedErrorLine(`${res.req.method} ${res.req.url}`, err, 'writing the answer'));
        res.destroy();
      }
    }
  };
  const flushAfterJobs = () => {
    flushQueued = false;
    sendAll();
  };
  const turn = () => {
    scheduled = false;
    sendAll();
    const end = Math.min(waiting.length, next + perTurn);
    if (next < end) {
      // Their answers, made now or by the promise jobs they start, are written by this tick.
      flushQueued = true;
      queueMicrotask(() => process.nextTick(flushAfterJobs));
      for (; next < end; next++) {
        const w = waiting[next]!;
        waiting[next] = undefined as unknown as Waiting; // let it go once handled
        handle(w);
      }
    }
    if (next === waiting.length) {
      waiting = [];
      next = 0;
    } else {
      if (next > 1024 && next * 2 > waiting.length) {
        waiting = waiting.slice(next);
        next = 0;
      }
      schedule();
    }
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(turn);
  };
  return {
    answer: (res, status, headers, body) => {
      answers.push({ res, status, headers, body });
      if (!flushQueued) schedule();
    },
    take: (w) => {
      waiting.push(w);
      schedule();
    },
  };
}
