import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An application's callback endpoint on loopback that answers 200 to everything and keeps each
 * body's form fields, in arrival order. `close` ends it; tests call it after each case.
 */
export async function startCallbackReceiver(): Promise<{ received: Array<Record<string, string>>; url: string; close: () => Promise<void> }> {
  const received: Array<Record<string, string>> = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c));
    req.on('end', () => {
      received.push(Object.fromEntries(new URLSearchParams(raw)));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return { received, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`, close };
}
