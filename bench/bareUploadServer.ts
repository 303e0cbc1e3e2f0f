/**
 * The reference the upload benchmark sets beside vop: a bare Node `http` server that writes each
 * request body to a file and does nothing else (no framework, no multipart, no checks). What it
 * costs is what receiving over HTTP costs in Node at all; what vop costs beyond it is vop's own.
 * Run as its own process, like vop:
 *
 *   node --import tsx bench/bareUploadServer.ts <dir>
 *
 * `PUT /<name>` writes the body to `<dir>/<name>` and answers 204 once the file is closed.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

/** The same write buffering as vop's upload paths (server/ingest), so that only the rest differs. */
const WRITE_HIGH_WATER_MARK = 1024 * 1024;

const dir = process.argv[2];
if (!dir) {
  console.error('usage: bareUploadServer.ts <dir>');
  process.exit(2);
}

const server = http.createServer((req, res) => {
  const name = (req.url ?? '/').slice(1);
  if (req.method === 'GET' && name === 'healthz') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    return;
  }
  if (req.method !== 'PUT' || !/^[\w.-]+$/.test(name)) {
    req.resume();
    res.writeHead(404).end();
    return;
  }
  pipeline(req, fs.createWriteStream(path.join(dir, name), { highWaterMark: WRITE_HIGH_WATER_MARK })).then(
    () => res.writeHead(204).end(),
    () => res.writeHead(500).end(),
  );
});
server.listen(0, '127.0.0.1', () => {
  console.log(`bare-upload listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
