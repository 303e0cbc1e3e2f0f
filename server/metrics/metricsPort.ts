import http from 'node:http';
import { unexpectedErrorLine } from '../core/logLines.js';
import { METRICS_CONTENT_TYPE, type VopMetrics } from './vopMetrics.js';

/** The loopback address the metrics port listens on: only this machine reaches it. */
export const METRICS_PORT_HOST = '127.0.0.1';

/**
 * The metrics on a port of their own (`metrics.port`, --metrics-port, VOP_METRICS_PORT), on
 * loopback, without the admin token: for a Prometheus (or an agent) on the same machine, which
 * then needs no copy of the token. It answers `GET /metrics` and nothing else: no API, no console,
 * and only to a Host that names this server (`isOwnHost`, the main port's rule: http/hostCheck.ts).
 * Resolves once listening.
 */
export async function listenMetricsPort(metrics: VopMetrics, port: number, log: (line: string) => void, isOwnHost: (hostHeader: string | undefined) => boolean): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    // Loopback alone does not keep a browser out: a page whose name was made to resolve to
    // 127.0.0.1 (DNS rebinding) sends its own name as Host. As the main port refuses it.
    if (!isOwnHost(req.headers.host)) {
      res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' }).end('This port answers to this machine\'s names only (localhost, its address, its host name).\n');
      return;
    }
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('This port answers GET /metrics only.\n');
      return;
    }
    metrics.text().then(
      (text) => res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Cache-Control': 'no-store' }).end(text),
      (err: unknown) => {
        log(unexpectedErrorLine('GET /metrics', err, 'on the metrics port'));
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('The metrics could not be read; the server log says why.\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, METRICS_PORT_HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
