/**
 * The HTTP server: the hot paths ahead of Express, a worker's /healthz-only answers, a cap on
 * each address's connections, and a close that lets requests in flight finish. It is the last
 * part to start (everything it serves is ready by then) and the first to stop.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express } from 'express';
import type { ServerOptions } from '../config.js';
import { addressLimitKey } from '../core/addressLimitKey.js';
import { ApiError } from '../core/errors.js';
import { clientAddress, noteClientAddress, TrustedProxies } from '../http/clientAddress.js';
import { envelopeErrorHandler } from '../http/errorResponses.js';
import { hotPaths, type HotHandler } from '../http/hotPaths.js';
import { noteExpressRoutes } from '../http/routeTemplate.js';
import { requestLogger } from '../logging/requestLog.js';
import type { VopMetrics } from '../metrics/vopMetrics.js';
import { ADDRESS_FILE, removeServerAddress, writeServerAddress } from '../storage/serverAddress.js';
import type { Part } from './parts.js';

export interface HttpServerDeps {
  options: ServerOptions;
  app: Express;
  /** Answers what it takes ahead of Express; false for the rest. */
  hot: (req: IncomingMessage, res: ServerResponse) => boolean;
  health: HotHandler;
  metrics?: { metrics: VopMetrics; route: express.Router };
  /** Called first when the server closes: open event streams would hold the close for the whole grace period. */
  onClosing(): void;
}

export interface HttpServer {
  /** Where the next start listens (VopServer.listen). */
  bind(port: number, host?: string): void;
  address(): AddressInfo | undefined;
  part: Part;
}

export function createHttpServer(deps: HttpServerDeps): HttpServer {
  const { options } = deps;
  const { log } = options;
  let at: { port: number; host?: string } = { port: 0 };
  let server: http.Server | undefined;
  let closing = false;
  const listen = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const proxies = new TrustedProxies(options.trustedProxies);
      const logRequest = options.operatorLog?.requests ? requestLogger(options.operatorLog.logger, clientAddress) : undefined;
      const requests = deps.metrics?.metrics.requests;
      // A worker answers /healthz only (its supervisor's and load balancer's question).
      const serve = options.role === 'worker' ? workerOnly(deps.health, deps.metrics?.route, log) : (req: IncomingMessage, res: ServerResponse) => {
        // The hot paths skip Express (see http/hotPaths.ts); everything else goes to it.
        if (!deps.hot(req, res)) deps.app(req, res);
      };
      const s = http.createServer((req, res) => {
        noteClientAddress(req, proxies);
        logRequest?.(req, res);
        // Once closing, answers say so: the client takes a new connection for its next request
        // instead of sending it on one that is about to go.
        if (closing) res.setHeader('Connection', 'close');
        requests?.track(req, res);
        serve(req, res);
      });
      server = s;
      limitConnectionsPerAddress(s, options.maxConnectionsPerAddress);
      s.keepAliveTimeout = 65_000;
      // Node's default of 300 s for a whole request would cut off large uploads (a 2 GB
      // multipart body, a tus PATCH) on slow links; header reads keep their own timeout.
      s.requestTimeout = 0;
      s.once('error', reject);
      s.listen(at.port, at.host, () => {
        s.off('error', reject);
        noteAddress(options, s.address() as AddressInfo);
        resolve();
      });
    });
  const close = async (graceMs: number): Promise<void> => {
    closing = true;
    deps.onClosing();
    if (server) {
      const s = server;
      // close() lets go of the connections idle at the time only. One with a request in flight
      // stayed open after its answer for the keep-alive time (65 s), holding the close for the
      // whole grace. Node arms that time when an answer has been handed to the kernel, and reads
      // it then: 1 ms lets such a connection go right after its last byte. (Closing idle
      // connections again and again would not do: Node counts a connection idle from the end()
      // of its answer, while the end of a large file may still be queued behind a slow reader.)
      s.keepAliveTimeout = 1;
      const stopped = new Promise<void>((resolve) => s.close(() => resolve()));
      s.closeIdleConnections();
      const timer = setTimeout(() => s.closeAllConnections(), graceMs);
      await stopped;
      clearTimeout(timer);
    }
    removeServerAddress(options.dataDir);
  };
  return {
    bind(port, host) {
      at = { port, host };
    },
    address: () => server?.address() as AddressInfo | undefined,
    part: { name: 'the HTTP server', start: listen, stop: close },
  };
}

/** For `vop backup --data-dir` (storage/serverAddress.ts): an address that answers the admin API (loopback by default). */
function noteAddress(options: ServerOptions, bound: AddressInfo): void {
  const host = ['0.0.0.0', '::'].includes(bound.address) ? '127.0.0.1' : bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  try {
    writeServerAddress(options.dataDir, { url: `http://${host}:${bound.port}`, pid: process.pid });
  } catch (err) {
    options.log(`Could not write ${ADDRESS_FILE} in the data folder (vop backup will need --server): ${(err as Error).message}`);
  }
}

/** A worker node's answers: /healthz, /metrics, and for anything else a 404 that says why, in the spec's envelope. */
function workerOnly(health: HotHandler, metrics: express.Router | undefined, log: (line: string) => void): (req: IncomingMessage, res: ServerResponse) => void {
  const hot = hotPaths({ exact: { '/healthz': health }, prefixes: {} }, log);
  const rest = express();
  rest.disable('x-powered-by');
  noteExpressRoutes(rest.request);
  // Its own metrics too: the transcodes and pulls are timed on the workers.
  if (metrics) rest.use(metrics);
  rest.all('/{*rest}', () => {
    throw new ApiError('NOT_FOUND', 'this is a worker node (--role worker): it answers /healthz only; the API is on the API nodes');
  });
  rest.use(envelopeErrorHandler(log));
  return (req, res) => {
    if (!hot(req, res)) rest(req, res);
  };
}

/**
 * Closes a client's connections past `max` open at once, as they arrive (issue 12, item 9): one
 * address cannot hold the server's sockets and answer buffers without end.
 */
function limitConnectionsPerAddress(server: http.Server, max: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    // Counted per /64 for IPv6 (core/addressLimitKey.ts).
    const address = addressLimitKey(socket.remoteAddress ?? 'unknown');
    const n = (open.get(address) ?? 0) + 1;
    if (n > max) {
      socket.destroy();
      return;
    }
    open.set(address, n);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
