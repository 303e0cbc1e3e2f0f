import type { IncomingMessage, ServerResponse } from 'node:http';
import type { VopLogger } from './logger.js';

/**
 * The token of a signed media address (`/media/s/<token>/…`, keys/mediaTokens.ts): it opens the
 * video to whoever holds it, so the log shows where it stood, not what it was.
 */
const SIGNED_MEDIA = /^\/media\/s\/[^/]+/;

/**
 * The path a request log line shows: without the query string (upload credentials, signatures and
 * tokens travel there) and without a signed media address's token.
 */
export function loggedPath(url: string | undefined): string {
  const raw = url ?? '';
  const q = raw.search(/[?#]/);
  const path = q === -1 ? raw : raw.slice(0, q);
  return path.replace(SIGNED_MEDIA, '/media/s/…');
}

/**
 * The request log (`--log-requests`): one line per answered request, with its method, path,
 * status and duration, written when the answer ends. Called first for every request, the hot
 * paths' included: its cost is a clock read and one listener per request.
 */
export function requestLogger(logger: VopLogger): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const started = performance.now();
    const done = () => {
      res.off('finish', done);
      res.off('close', done);
      logger.info(
        { method: req.method, path: loggedPath(req.url), status: res.statusCode, durationMs: Math.round((performance.now() - started) * 10) / 10, ...(res.writableFinished ? {} : { cut: true }) },
        'request',
      );
    };
    res.once('finish', done);
    // A client that goes away before the answer ends: still one line, marked cut off.
    res.once('close', done);
  };
}
