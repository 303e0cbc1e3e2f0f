import type { IncomingMessage, ServerResponse } from 'node:http';
import type { VopLogger } from './logger.js';

/**
 * A path segment shaped like a signed media token (`<key id>.<expiry>[.<scope>].<mac>`,
 * keys/mediaTokens.ts), wherever it stands (`/media/S/<token>/…` reaches no route, yet its token
 * is good), or like any other secret: 32 or more URL-safe characters that are not a video id. It
 * opens something to whoever holds it, so the log shows where it stood, not what it was.
 */
const TOKEN_SEGMENT = /^(?:[a-z0-9]{1,16}\.[a-z0-9]{1,10}\.(?:[a-z]\.)?[A-Za-z0-9_-]{22}|[A-Za-z0-9_-]{32,})$/;
const VIDEO_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The path a request log line shows: the whole path as the client sent it, without the query
 * string (upload credentials, signatures and tokens travel there) and with every token-shaped
 * segment masked.
 */
export function loggedPath(url: string | undefined): string {
  const raw = url ?? '';
  const q = raw.search(/[?#]/);
  const path = q === -1 ? raw : raw.slice(0, q);
  return path
    .split('/')
    .map((segment) => {
      let decoded = segment;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        // Not percent-encoding: judged as it is.
      }
      return TOKEN_SEGMENT.test(decoded) && !VIDEO_ID.test(decoded) ? '…' : segment;
    })
    .join('/');
}

/**
 * The request log (`--log-requests`): one line per answered request, with its method, path,
 * client address (http/clientAddress.ts: behind a trusted proxy, the client's), status and
 * duration, written when the answer ends. Called first for every request, the hot
 * paths' included: its cost is a clock read and one listener per request.
 */
export function requestLogger(logger: VopLogger, clientOf: (req: IncomingMessage) => string): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const started = performance.now();
    // Read now: Express's routers cut their mount path off req.url on the way (`/keys` for
    // `/admin/api/keys`), and the line is written when the answer ends.
    const path = loggedPath(req.url);
    const client = clientOf(req);
    const done = () => {
      res.off('finish', done);
      res.off('close', done);
      logger.info(
        { method: req.method, path, client, status: res.statusCode, durationMs: Math.round((performance.now() - started) * 10) / 10, ...(res.writableFinished ? {} : { cut: true }) },
        'request',
      );
    };
    res.once('finish', done);
    // A client that goes away before the answer ends: still one line, marked cut off.
    res.once('close', done);
  };
}
