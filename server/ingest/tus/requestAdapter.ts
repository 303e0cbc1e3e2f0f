import type { IncomingMessage, ServerResponse } from 'node:http';
import { ReadableStream } from 'node:stream/web';
import type { Server } from '@tus/server';
import type { RequestHandler } from 'express';
import { sendNodeResponse } from 'srvx/node';
import { TUS_CORS_HEADERS } from './protocol.js';

/**
 * The Express handler for `/upload/tus{/*rest}` over `server`. It must be mounted before any body
 * parser: @tus/server reads the request stream itself.
 */
export function tusRequestHandler(server: Server): RequestHandler {
  return async (req, res) => {
    // tus 1.0 core: "The Request MUST include a Content-Type: application/offset+octet-stream
    // header"; @tus/server answers other types with 400, the protocol's answer is 415.
    if (req.method === 'PATCH') {
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== 'application/offset+octet-stream') {
        // With @tus/server's CORS headers: a page on another origin must be able to read the answer.
        res.status(415).set({ 'Tus-Resumable': '1.0.0', ...TUS_CORS_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' });
        res.send('Content-Type must be application/offset+octet-stream\n');
        return;
      }
      await sendNodeResponse(res, await server.handleWeb(patchRequest(req, res)));
      return;
    }
    await server.handle(req, res);
  };
}

/**
 * A PATCH as the web Request that @tus/server's handleWeb takes, its body the Node request's own
 * chunks (Buffers, hence Uint8Arrays). `handle` would wrap the request in srvx's NodeRequest, whose
 * body is `Readable.toWeb(req)`: on Node 20 that copies every chunk into a new Uint8Array and
 * pauses the request after each one.
 *
 * req and res ride along as srvx's `runtime.node`, as `handle` passes them: @tus/server listens
 * there for the request's 'error' (the client gone mid-PATCH), then ends the write with the bytes
 * that arrived and releases the upload's lock. The signal aborts as srvx's does (@tus/server 2.4
 * does not read it; a later one may). The URL's origin is a placeholder: @tus/server takes only
 * the upload id from a PATCH's URL.
 */
function patchRequest(req: IncomingMessage, res: ServerResponse): Request {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const aborted = new AbortController();
  res.once('close', () => {
    if (req.errored) aborted.abort(req.errored);
    else if (!res.writableEnded) aborted.abort();
  });
  // `duplex` (required with a stream body) is undici's, not in the DOM typings; nor is `from`.
  const init: RequestInit & { duplex: 'half' } = {
    method: 'PATCH',
    headers,
    // Pulled one chunk at a time, so the socket is read only as fast as the file is written.
    body: ReadableStream.from<Uint8Array>(req) as globalThis.ReadableStream<Uint8Array>,
    duplex: 'half',
    signal: aborted.signal,
  };
  // Resolved against the placeholder, so an absolute-form request target keeps its path as well.
  const request = new Request(new URL(req.url ?? '/', 'http://localhost'), init);
  return Object.assign(request, { runtime: { name: 'node', node: { req, res } } });
}
