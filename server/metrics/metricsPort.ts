import http from 'node:http';
import { METRICS_CONTENT_TYPE, type VopMetrics } from './vopMetrics.js';

/** The loopback address the metrics port listens on: only this machine reaches it. */
export const METRICS_PORT_HOST = '127.0.0.1';

/**
 * The metrics on a port of their own (`metrics.port`, --metrics-port, VOP_METRICS_PORT), on
 * loopback, without the admin token: for a Prometheus (or an agent) on the same machine, which
 * then needs no copy of the token. It answers `GET /metrics` and nothing else: no API, no console.
 * Resolves once listening.
 */
export async function listenMetricsPort(metrics: VopMetrics, port: number, log: (line: string) => void): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('This port answers GET /metrics only.\n');
      return;
    }
    metrics.text().then(
      (text) => res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Cache-Control': 'no-store' }).end(text),
      (err: unknown) => {
        log(`Error on GET /metrics (the metrics port): ${(err as Error)?.stack ?? String(err)}`);
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
