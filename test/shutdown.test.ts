/**
 * Shutting down (issue 2): requests in flight finish, and the close does not wait out its grace
 * for the keep-alive connections they leave behind.
 */
import { expect, it } from 'vitest';
import { openTusPatch, tokenMetadata, tusCreate, tusMetadata } from './helpers/ingest.js';
import { startServer } from './helpers/server.js';

it('close() lets a request in flight finish, then returns without waiting out the grace for its keep-alive connection', async () => {
  const s = await startServer();
  const client = await s.newApp();
  const videoId = await client.register();
  const created = await tusCreate(s.baseUrl, 2000, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId)) });
  expect(created.res.status).toBe(201);

  // Half of a PATCH's body, on a keep-alive connection (Node's global agent keeps them alive).
  const patch = openTusPatch(created.url!, 1000);
  const answered = new Promise<number>((resolve, reject) => {
    patch.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    patch.on('error', reject);
  });
  patch.write(Buffer.alloc(500, 1));
  await new Promise((r) => setTimeout(r, 200));

  const graceMs = 30_000;
  let closed = false;
  const closing = s.vop.close(graceMs).then(() => (closed = true));
  await new Promise((r) => setTimeout(r, 200));
  expect(closed).toBe(false); // the PATCH is still in flight
  patch.end(Buffer.alloc(500, 2));
  expect(await answered).toBe(204);

  // Closed well before the grace is up (it took all 30 s before).
  const outcome = await Promise.race([closing.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still open'), 5_000))]);
  expect(outcome).toBe('closed');
}, 40_000);
