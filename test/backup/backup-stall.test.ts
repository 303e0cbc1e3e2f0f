/**
 * A backup download whose reader stops taking bytes does not hold the backup lock for as long as
 * its socket stays open: it is given up after the send timeout (as a stalled media answer is), and
 * the next backup starts.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';

let t: TestServer;

beforeAll(async () => {
  t = await startServer({ sendTimeoutMs: 400 });
  // Enough stored media that the download fills the socket's buffers and waits for its reader.
  const client = await t.newApp();
  const id = await client.register();
  const source = t.vop.media.path('sources', id, 'source');
  fs.mkdirSync(path.dirname(source), { recursive: true });
  fs.writeFileSync(source, crypto.randomBytes(32 * 1024 * 1024));
});
afterAll(async () => {
  await t?.close();
});

describe('a backup download nobody reads', () => {
  it('is given up after the send timeout, and the lock freed for the next backup', async () => {
    const { port } = new URL(t.baseUrl);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.on('error', () => undefined);
    socket.write(`GET /admin/api/backup?media=include HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${t.vop.adminToken}\r\n\r\n`);
    // Read the first bytes, then nothing more: the answer waits on a full socket.
    await new Promise((resolve) => socket.once('data', resolve));
    socket.pause();
    const busy = await t.admin.request('POST', '/backups', { media: 'none' });
    expect(busy.body.error?.code).toBe('311');

    // Given up once the socket's buffers are full and a few send timeouts passed (the backup is
    // paced to a share of the disk, so filling them takes a while): the lock is free.
    await expect.poll(async () => (await t.admin.request('GET', '/backups')).body.busy, { timeout: 45_000, interval: 200 }).toBeNull();
    const made = await t.admin.request('POST', '/backups', { media: 'none' });
    expect(made.status).toBe(200);
    socket.destroy();
  });
});
