/**
 * The ceiling the benchmarks compare vop with: a bare Node `http` server that answers each API
 * path with bytes captured from vop itself (same size, same JSON), doing no work at all. Run as
 * its own process, like vop:
 *
 *   node --import tsx bench/bareServer.ts <bodies.json>
 *
 * where bodies.json maps a path (`/Api/Video/Get`) to the base64 of the body to answer with.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const file = process.argv[2];
if (!file) {
  console.error('usage: bareServer.ts <bodies.json>');
  process.exit(2);
}
const bodies = new Map<string, Buffer>(
  Object.entries(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>).map(([p, b64]) => [p, Buffer.from(b64, 'base64')]),
);
bodies.set('/healthz', Buffer.from('{"status":"ok"}'));

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const body = bodies.get(q === -1 ? url : url.slice(0, q));
  // Read the request to its end (a POST form) before answering, as any real handler must.
  req.resume();
  req.on('end', () => {
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
    res.end(body);
  });
});
server.keepAliveTimeout = 65_000; // as vop sets it
server.listen(0, '127.0.0.1', () => {
  console.log(`bare listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => process.exit(0)); // nothing to flush
