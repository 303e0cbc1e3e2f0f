/**
 * The spec API's read calls (4.1, 4.3, 4.4) answered on node:http directly, ahead of Express.
 *
 * Why: they are what application servers call most, and Express cost about as much as the calls
 * themselves. Measured with 100,000 videos at 50 connections (bench/apiBench.ts), the same calls
 * with the same services and caches, server CPU per call: detail 255 µs through Express, 130 µs
 * here; a list page 130 µs through Express, 33 µs here; the bare Node server answering the same
 * bytes 20 to 26 µs. Most of that is not Express's router (mounting the spec API first saved
 * nothing measurable) but Express 5 giving every request and response its own prototype
 * (Object.setPrototypeOf), which leaves V8 with slow objects all through Node's HTTP code: that
 * step alone cost 70 to 100 µs a call.
 *
 * Nothing of the API is implemented twice: the calls are videoReadCalls (routes/videoApi.ts,
 * whose Express routes answer with the same functions), parameters are read by the query parser
 * Express is set to and ParamBag, the caller is authenticated by the same AuthService, and
 * failures go through the one catalogue (server/errors.ts) into the same envelope. Anything else
 * (other methods, paths and the 405 and 404 answers) goes on to Express.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { AuthService } from '../services/authService.js';
import type { ViewContext } from '../services/videoView.js';
import { READ_PATHS, type ReadCall, type RequestOrigin, type VideoReadCalls } from '../routes/videoApi.js';
import { authenticateParams } from './appAuth.js';
import { JSON_CONTENT_TYPE, errorEnvelope, logIfUnexpected, toApiError } from './errorResponses.js';
import { ParamBag } from './params.js';

/** What {@link fastReadPath} answers with; each is the one the Express routes use. */
export interface FastReadPathDeps {
  auth: AuthService;
  reads: VideoReadCalls;
  /** The query string parser Express is set to (`app.get('query parser fn')`), so parameters read alike. */
  parseQuery: (query: string) => unknown;
  viewContext: (req: RequestOrigin) => ViewContext;
  log: (line: string) => void;
}

/**
 * Returns a request handler that answers GET and HEAD on the read paths and returns true, or
 * returns false without touching the request, for Express to take.
 */
export function fastReadPath(deps: FastReadPathDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  // Express's routing, as vop sets it: paths without regard to case, one trailing slash allowed,
  // no decoding of the path (`/Api/Video/G%65t` is not a route there either).
  const calls = new Map<string, ReadCall>(READ_PATHS.map((p) => [p.toLowerCase(), deps.reads[p]]));
  const send = answerBatcher(deps.log);
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const url = req.url ?? '';
    const q = url.indexOf('?');
    let path = (q === -1 ? url : url.slice(0, q)).toLowerCase();
    if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
    const call = calls.get(path);
    if (!call) return false;
    void answer(deps, send, call, req, res, q === -1 ? '' : url.slice(q + 1));
    return true;
  };
}

async function answer(
  deps: FastReadPathDeps,
  send: (res: ServerResponse, status: number, json: Buffer) => void,
  call: ReadCall,
  req: IncomingMessage,
  res: ServerResponse,
  query: string,
): Promise<void> {
  let status = 200;
  let json: Buffer;
  try {
    const params = new ParamBag(deps.parseQuery(query));
    const app = await authenticateParams(deps.auth, params, req);
    json = await call(app, params, deps.viewContext(origin(req)));
  } catch (err) {
    const apiErr = toApiError(err);
    logIfUnexpected(deps.log, apiErr, err, req.method, req.url);
    const envelope = errorEnvelope(apiErr);
    status = envelope.status;
    json = Buffer.from(JSON.stringify(envelope.body));
  }
  send(res, status, json);
}

/**
 * Returns a function that writes an answer together with the others made in this turn of the
 * event loop, right after its poll phase (setImmediate), instead of each as soon as it is made.
 * Under load one turn reads requests from many connections; written in between, each answer's
 * send woke the client's side anew (on loopback the sender pays for that, in the kernel), and
 * `writev` took 30% of the server's time. Written back to back they cost less: 19,000 against
 * 24,500 detail calls per second at the same CPU (100,000 videos, 50 connections). With one
 * request in flight nothing waits: the check phase follows the poll phase at once.
 */
function answerBatcher(log: (line: string) => void): (res: ServerResponse, status: number, json: Buffer) => void {
  const answers: Array<{ res: ServerResponse; status: number; json: Buffer }> = [];
  const sendAll = () => {
    for (const { res, status, json } of answers.splice(0)) {
      try {
        // The headers res.json sends (vop turns off ETag and X-Powered-By); for HEAD, Node leaves out the body.
        res.writeHead(status, { 'Content-Type': JSON_CONTENT_TYPE, 'Content-Length': json.length });
        res.end(json);
      } catch (err) {
        log(`Error on ${res.req.method} ${res.req.url}: writing the answer failed: ${(err as Error)?.stack ?? String(err)}`);
        res.destroy();
      }
    }
  };
  return (res, status, json) => {
    answers.push({ res, status, json });
    if (answers.length === 1) setImmediate(sendAll);
  };
}

/** Express's `req.protocol` and `req.host` with 'trust proxy' off, as app.ts runs it. */
function origin(req: IncomingMessage): RequestOrigin {
  return { protocol: (req.socket as TLSSocket).encrypted ? 'https' : 'http', host: req.headers.host as string };
}
