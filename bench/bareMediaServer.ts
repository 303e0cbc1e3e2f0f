/**
 * The ceiling of Node for the delivery bench: a bare Node `http` server that answers each path
 * under a folder with that file's bytes, held in memory, doing no other work: a single
 * `Range: bytes=a-b` is answered 206 with those bytes, HEAD with the headers only. Run as its own
 * process, like vop:
 *
 *   node --import tsx bench/bareMediaServer.ts <folder> [<url prefix>]
 *
 * The headers are about as many as vop's (validators, cache and CORS headers), so that the bytes
 * on the wire are comparable.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

const root = process.argv[2];
const urlPrefix = process.argv[3] ?? '';
if (!root) {
  console.error('usage: bareMediaServer.ts <folder> [<url prefix>]');
  process.exit(2);
}

const files = new Map<string, Buffer>();
const walk = (dir: string, prefix: string) => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) walk(path.join(dir, e.name), `${prefix}/${e.name}`);
    else files.set(`${prefix}/${e.name}`, fs.readFileSync(path.join(dir, e.name)));
  }
};
walk(root, urlPrefix);
files.set('/healthz', Buffer.from('{"status":"ok"}')); // what spawnServer waits for

const COMMON = ['Accept-Ranges', 'bytes', 'ETag', 'W/"0123456789abcdef0123456789a"', 'Last-Modified', new Date().toUTCString(), 'Cache-Control', 'public, no-cache', 'X-Content-Type-Options', 'nosniff', 'Access-Control-Allow-Origin', '*', 'Content-Type', 'video/mp4'];

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const body = files.get(q === -1 ? url : url.slice(0, q));
  if (!body) {
    res.writeHead(404, { 'Content-Length': 0 }).end();
    return;
  }
  const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
  if (m && req.method === 'GET') {
    const start = Number(m[1]);
    const end = Math.min(Number(m[2]), body.length - 1);
    res.writeHead(206, [...COMMON, 'Content-Range', `bytes ${start}-${end}/${body.length}`, 'Content-Length', String(end - start + 1)]);
    res.end(body.subarray(start, end + 1));
    return;
  }
  res.writeHead(200, [...COMMON, 'Content-Length', String(body.length)]);
  res.end(body);
});
server.keepAliveTimeout = 65_000; // as vop sets it
server.listen(0, '127.0.0.1', () => {
  console.log(`bare listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => process.exit(0)); // nothing to flush
