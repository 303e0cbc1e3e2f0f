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
 * failures go through the one catalogue (server/core/errors.ts) into the same envelope. Anything else
 * (other methods, paths and the 405 and 404 answers) goes on to Express. Dispatched by the one
 * table of hot paths (http/hotPaths.ts), with media, /healthz and the widget's files (issue 14).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { AuthService } from '../auth/authService.js';
import type { ViewContext } from '../videos/videoView.js';
import { READ_PATHS, type ReadCall, type RequestOrigin, type VideoReadCalls } from './videoApi.js';
import type { HotHandler, HotRequest } from '../http/hotPaths.js';
import { authenticateParams } from './appAuth.js';
import { JSON_CONTENT_TYPE, errorEnvelope, logIfUnexpected, toApiError } from '../http/errorResponses.js';
import { ParamBag } from '../http/params.js';

/** What {@link readCallPaths} answers with; each is the one the Express routes use. */
export interface FastReadPathDeps {
  auth: AuthService;
  reads: VideoReadCalls;
  /** The query string parser Express is set to (`app.get('query parser fn')`), so parameters read alike. */
  parseQuery: (query: string) => unknown;
  viewContext: (req: RequestOrigin) => ViewContext;
  log: (line: string) => void;
}

/**
 * The read paths as hot paths (http/hotPaths.ts, which matches them as Express does: without
 * regard to case, one trailing slash allowed, GET and HEAD only).
 */
export function readCallPaths(deps: FastReadPathDeps): Record<string, HotHandler> {
  return Object.fromEntries(READ_PATHS.map((p) => [p, (req, res, hot) => answer(deps, hot, deps.reads[p], req, res)] satisfies [string, HotHandler]));
}

async function answer(deps: FastReadPathDeps, hot: HotRequest, call: ReadCall, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let status = 200;
  let json: Buffer;
  try {
    const params = new ParamBag(deps.parseQuery(hot.query));
    const app = await authenticateParams(deps.auth, params, req);
    json = await call(app, params, deps.viewContext(origin(req)));
  } catch (err) {
    const apiErr = toApiError(err);
    logIfUnexpected(deps.log, apiErr, err, req.method, req.url);
    const envelope = errorEnvelope(apiErr);
    status = envelope.status;
    json = Buffer.from(JSON.stringify(envelope.body));
  }
  // The headers res.json sends (vop turns off ETag and X-Powered-By); written with the other
  // answers of this turn (hotPaths.ts, turns).
  hot.answer(res, status, { 'Content-Type': JSON_CONTENT_TYPE, 'Content-Length': json.length }, json);
}

/** Express's `req.protocol` and `req.host` with 'trust proxy' off, as app.ts runs it. */
function origin(req: IncomingMessage): RequestOrigin {
  return { protocol: (req.socket as TLSSocket).encrypted ? 'https' : 'http', host: req.headers.host as string };
}
