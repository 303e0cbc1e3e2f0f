/**
 * The hot paths (issue 14): media, covers, HLS, /healthz, the widget's static files and the spec
 * API's read calls, answered on node:http directly, ahead of Express. Everything else (the admin
 * API, the console, uploads, the spec's writes, and every method or path not listed here) goes on
 * to Express as before.
 *
 * Why not Express for these: it costs about 0.2 ms a request before any work is done, most of it
 * not its router but Express 5 giving every request and response its own prototype
 * (Object.setPrototypeOf), which leaves V8 with slow objects all through Node's HTTP code
 * (http/fastReadPath.ts measured it: 70 to 100 µs a call). A media Range answer through Express
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
import { ApiError } from '../errors.js';
import { JSON_CONTENT_TYPE, errorEnvelope, logIfUnexpected, toApiError } from './errorResponses.js';

/** A request as the hot paths see it. */
export interface HotRequest {
  /** The path as sent (not decoded). */
  path: string;
  /** What follows the `?`, '' if nothing. */
  query: string;
  /** Sends a whole answer (headers and body in one write) with the others of this turn: see {@link answerBatcher}. */
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
 * Returns the dispatcher: it answers a request on a hot path and returns true, or returns false
 * without touching the request, for Express to take.
 */
export function hotPaths(routes: HotRoutes, log: (line: string) => void): (req: IncomingMessage, res: ServerResponse) => boolean {
  const exact = new Map<string, HotHandler>(Object.entries(routes.exact).map(([p, h]) => [p.toLowerCase(), h]));
  const prefixes = Object.entries(routes.prefixes).map(([p, h]) => [p.toLowerCase(), h] as const);
  const answer = answerBatcher(log);
  const run = (handler: HotHandler, req: IncomingMessage, res: ServerResponse, path: string, query: string) => {
    try {
      const done = handler(req, res, { path, query, answer });
      if (done) done.catch((err: unknown) => sendHotError(req, res, err, log, {}, answer));
    } catch (err) {
      sendHotError(req, res, err, log, {}, answer);
    }
  };
  return (req, res) => {
    const raw = req.url ?? '';
    const q = raw.indexOf('?');
    const path = q === -1 ? raw : raw.slice(0, q);
    const query = q === -1 ? '' : raw.slice(q + 1);
    for (const [prefix, handler] of prefixes) {
      if (path.length >= prefix.length && path.slice(0, prefix.length).toLowerCase() === prefix) {
        run(handler, req, res, path, query);
        return true;
      }
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    let key = path.toLowerCase();
    if (key.length > 1 && key.endsWith('/')) key = key.slice(0, -1);
    const handler = exact.get(key);
    if (!handler) return false;
    run(handler, req, res, path, query);
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
    if (!(err instanceof ApiError)) log(`Error on ${req.method} ${req.url} after the answer began: ${(err as Error)?.stack ?? String(err)}`);
    res.destroy();
    return;
  }
  const apiErr = toApiError(err);
  logIfUnexpected(log, apiErr, err, req.method, req.url);
  const { status, body } = errorEnvelope(apiErr);
  const json = Buffer.from(JSON.stringify(body));
  answer(res, status, { ...headers, 'Content-Type': JSON_CONTENT_TYPE, 'Content-Length': json.length }, json);
}

/**
 * Returns an {@link Answer} that writes an answer together with the others made in this turn of
 * the event loop, right after its poll phase (setImmediate), instead of each as soon as it is
 * made. Under load one turn reads requests from many connections; written in between, each
 * answer's send woke the client's side anew (on loopback the sender pays for that, in the
 * kernel), and `writev` took 30% of the server's time. Written back to back they cost less:
 * 19,000 against 24,500 detail calls per second at the same CPU (100,000 videos, 50
 * connections); a 1 KiB media Range answer spent a third of its CPU in `writev` before (issue
 * 14). With one request in flight nothing waits: the check phase follows the poll phase at once.
 */
function answerBatcher(log: (line: string) => void): Answer {
  type Pending = { res: ServerResponse; status: number; headers: OutgoingHttpHeaders | readonly string[]; body?: Body };
  const answers: Pending[] = [];
  const sendAll = () => {
    for (const { res, status, headers, body } of answers.splice(0)) {
      try {
        writeAnswer(res, status, headers, body);
      } catch (err) {
        log(`Error on ${res.req.method} ${res.req.url}: writing the answer failed: ${(err as Error)?.stack ?? String(err)}`);
        res.destroy();
      }
    }
  };
  return (res, status, headers, body) => {
    answers.push({ res, status, headers, body });
    if (answers.length === 1) setImmediate(sendAll);
  };
}
