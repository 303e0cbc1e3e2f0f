/**
 * What one client can hold (issue 12, item 9): a media answer whose client stops reading is given
 * up after the send timeout, and one address cannot open connections without end.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveOptions } from '../../server/config.js';
import { CACHED_READ_MAX_BYTES, sendMediaObject } from '../../server/http/fileResponse.js';
import { LocalObjectMediaStore } from '../../server/storage/media/localObjectMediaStore.js';
import { mediaKey, type MediaStore } from '../../server/storage/media/mediaStore.js';
import { LocalMediaRoot } from '../../server/storage/media/localMediaRoot.js';
import { makeTempDir } from '../helpers/clips.js';
import { startServer, tempDataDir, type TestServer } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';

/** Resolves when `socket` closes, with how long that took; rejects after `ms`. */
function closedWithin(socket: net.Socket, ms: number): Promise<number> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still open after ${ms} ms`)), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - started);
    });
  });
}

// Both ways delivery reads (http/fileResponse.ts): the local store's open file, and stat then
// openRange (what S3 has), taken by hiding openLocalFileSync.
describe.each(['openLocalFileSync', 'stat and openRange'])('a client that stops reading, read by %s', (way) => {
  it('has its answer given up after the send timeout, its file closed, while a reading client gets all of it', async () => {
    const dir = makeTempDir('vop-slow-');
    const file = path.join(dir, 'big.bin');
    // Larger than what loopback's socket buffers take in at once.
    fs.writeFileSync(file, Buffer.alloc(64 * 1024 * 1024, 7));
    const local = new LocalObjectMediaStore(new LocalMediaRoot(tempDataDir()));
    const store: MediaStore = local;
    if (way === 'stat and openRange') (store as { openLocalFileSync?: unknown }).openLocalFileSync = undefined;
    const key = mediaKey('play', '20260101', 'big.mp4');
    await store.put(key, { file });
    const openFds = () => fs.readdirSync('/proc/self/fd').length;
    const finished: string[] = [];
    const server = http.createServer((req, res) => {
      sendMediaObject(req, res, store, key, { contentType: 'application/octet-stream', maxAgeSeconds: 0, chunkBytes: 1024 * 1024, sendTimeoutMs: 500 }).then(
        () => finished.push(res.writableFinished ? 'complete' : 'destroyed'),
        (err: Error) => finished.push(`error: ${err.message}`),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    const fdsBefore = openFds();
    try {
      const stalled = net.connect(port, '127.0.0.1');
      await new Promise((resolve) => stalled.once('connect', resolve));
      stalled.write(`GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      await new Promise((resolve) => stalled.once('data', resolve));
      stalled.pause(); // reads nothing more
      const started = Date.now();
      // The server lets go of the answer, its buffers and its socket (what the kernel already
      // holds still drains to the client, which does not read it: the client sees no close).
      await expect.poll(() => finished, { timeout: 10_000 }).toEqual(['destroyed']);
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
      const connections = () => new Promise<number>((resolve) => server.getConnections((_e, n) => resolve(n)));
      await expect.poll(connections, { timeout: 5000 }).toBe(0);
      // The answer let go of its file: the open-file cache, told to forget it, closes it at once.
      local.openFiles.drop(key);
      await expect.poll(openFds, { timeout: 5000 }).toBeLessThanOrEqual(fdsBefore + 1); // the stalled client's socket is still ours
      stalled.destroy();

      // A client that reads gets the whole file through the same server.
      const res = await fetch(`http://127.0.0.1:${port}/big`);
      expect((await res.arrayBuffer()).byteLength).toBe(64 * 1024 * 1024);
      await expect.poll(() => finished).toEqual(['destroyed', 'complete']);
    } finally {
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

});

// A phone on a poor link reads steadily but slowly: a whole chunk (1 MiB) can take longer than the
// send timeout to be taken, and that is no stall (nginx's send_timeout counts between two writes:
// any progress resets it). The kernel hands a writer room in steps as its reader reads: on TCP
// over loopback in steps of about 1.4 MB (the send buffer grows to 4 MB there, and a writer is
// woken when a third of it is free), so HTTP goes over a Unix socket here, whose fixed 208 KiB
// buffer gives steps of about 200 KB, as a slow link's small TCP window does. This client reads
// at most 64 KiB every 40 ms (about 1.6 MB/s): each 1 MiB chunk takes it about 640 ms, the send
// timeout is 500 ms, and a step comes every 130 ms or so.
describe.each(['openLocalFileSync', 'stat and openRange'])('a slow but steady client, read by %s', (way) => {
  it('gets the whole file although a chunk takes it longer than the send timeout; one that stops is still cut off', async () => {
    const dir = makeTempDir('vop-steady-');
    const file = path.join(dir, 'big.bin');
    const size = 8 * 1024 * 1024;
    fs.writeFileSync(file, Buffer.alloc(size, 3));
    const store: MediaStore = new LocalObjectMediaStore(new LocalMediaRoot(tempDataDir()));
    if (way === 'stat and openRange') (store as { openLocalFileSync?: unknown }).openLocalFileSync = undefined;
    const key = mediaKey('play', '20260101', 'steady.mp4');
    await store.put(key, { file });
    const socketPath = path.join(dir, 'http.sock');
    const finished: string[] = [];
    const server = http.createServer((req, res) => {
      sendMediaObject(req, res, store, key, { contentType: 'application/octet-stream', maxAgeSeconds: 0, chunkBytes: 1024 * 1024, sendTimeoutMs: 500 }).then(
        () => finished.push(res.writableFinished ? 'complete' : 'destroyed'),
        (err: Error) => finished.push(`error: ${err.message}`),
      );
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      const client = net.connect(socketPath);
      await new Promise((resolve) => client.once('connect', resolve));
      client.write('GET /steady HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      let received = 0;
      const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
      client.on('data', (d: Buffer) => {
        received += d.length;
        // Time itself: 40 ms a read (64 KB), so a 1 MB chunk takes the client some 640 ms, over
        // the 500 ms send timeout, while no single pause comes near it even on a loaded machine
        // (a 15 ms pause against a 150 ms timeout was once stretched past it in CI).
        client.pause();
        setTimeout(() => client.resume(), 40);
      });
      await closed;
      // The headers and every byte of the body.
      expect(received).toBeGreaterThan(size);
      expect(finished).toEqual(['complete']);

      // One that takes a few chunks and then stops is still given up.
      const stalling = net.connect(socketPath);
      await new Promise((resolve) => stalling.once('connect', resolve));
      stalling.write('GET /steady HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      let taken = 0;
      await new Promise<void>((resolve) =>
        stalling.on('data', (d: Buffer) => {
          taken += d.length;
          if (taken > 2 * 1024 * 1024) {
            stalling.pause();
            resolve();
          }
        }),
      );
      await expect.poll(() => finished, { timeout: 10_000 }).toEqual(['complete', 'destroyed']);
      stalling.destroy();
    } finally {
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe('a mid-sized answer (an HLS segment: read whole, sent in one write)', () => {
  it('is given up too when its client stops reading, and a reading client gets all of it', async () => {
    const dir = makeTempDir('vop-mid-');
    const file = path.join(dir, 'segment.ts');
    const body = Buffer.alloc(CACHED_READ_MAX_BYTES, 9); // more than a Unix socket's buffer takes in at once
    fs.writeFileSync(file, body);
    const store = new LocalObjectMediaStore(new LocalMediaRoot(tempDataDir()));
    const key = mediaKey('hls', 'v1', '360p', 'seg_00000.ts');
    await store.put(key, { file });
    const socketPath = path.join(dir, 'http.sock');
    // How each answer ended. (writableFinished cannot tell here: a destroyed socket completes the
    // pending write, and Node then says 'finish' too.)
    const finished: string[] = [];
    const server = http.createServer((req, res) => {
      const started = Date.now();
      sendMediaObject(req, res, store, key, { contentType: 'video/mp2t', maxAgeSeconds: 0, chunkBytes: 64 * 1024, sendTimeoutMs: 300 }).then(
        () => finished.push(res.socket === null || res.socket.destroyed ? `closed after ${Date.now() - started} ms` : 'sent'),
        (err: Error) => finished.push(`error: ${err.message}`),
      );
    });
    // A Unix socket: its fixed 208 KiB buffer cannot take the whole answer, as loopback TCP's 4 MB could.
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      // Twice: the first reads the file, the second finds it all in the store's blocks.
      for (let round = 1; round <= 2; round++) {
        const stalled = net.connect(socketPath);
        await new Promise((resolve) => stalled.once('connect', resolve));
        stalled.write('GET /segment HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
        let taken = 0;
        stalled.on('data', (d: Buffer) => {
          taken += d.length;
          stalled.pause(); // reads nothing more
        });
        await expect.poll(() => finished.length, { timeout: 10_000 }).toBe(round);
        // Given up between one and two send timeouts after the socket last took anything; the client
        // had taken a fraction of it (the rest can be neither in its buffers nor in the kernel's).
        const after = Number(/^closed after (\d+) ms$/.exec(finished[round - 1]!)?.[1]);
        expect(after, finished[round - 1]).toBeGreaterThanOrEqual(300);
        expect(after).toBeLessThan(3000);
        expect(taken).toBeLessThan(body.length / 2);
        const connections = () => new Promise<number>((resolve) => server.getConnections((_e, n) => resolve(n)));
        await expect.poll(connections, { timeout: 5000 }).toBe(0);
        stalled.destroy();
      }
      expect(store.openFiles.cachedBytes).toBe(body.length);

      const reader = net.connect(socketPath);
      reader.write('GET /segment HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      const chunks: Buffer[] = [];
      reader.on('data', (d: Buffer) => chunks.push(d));
      await new Promise((resolve) => reader.once('close', resolve));
      const answer = Buffer.concat(chunks);
      expect(answer.subarray(answer.length - body.length).equals(body)).toBe(true);
      expect(answer.subarray(0, 15).toString()).toBe('HTTP/1.1 200 OK');
      await expect.poll(() => finished.length).toBe(3);
    } finally {
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a slow store', () => {
  it("is not the client's stall: time waiting for the store's bytes does not count against the send timeout", async () => {
    const dir = makeTempDir('vop-slow-store-');
    const file = path.join(dir, 'object.bin');
    fs.writeFileSync(file, Buffer.alloc(3 * 64 * 1024, 5));
    const store = new LocalObjectMediaStore(new LocalMediaRoot(tempDataDir()));
    const key = mediaKey('play', '20260101', 'object.mp4');
    await store.put(key, { file });
    // As a far bucket answers: each chunk after a pause longer than the send timeout.
    const slow: MediaStore = Object.assign(Object.create(store) as MediaStore, {
      openLocalFileSync: undefined,
      openRange: async (k: string, range?: { start: number; end: number }) => {
        const source = await store.openRange(k, range);
        return Readable.from(
          (async function* () {
            for await (const chunk of source) {
              await new Promise((r) => setTimeout(r, 400));
              yield chunk as Buffer;
            }
          })(),
        );
      },
    });
    const server = http.createServer((req, res) => {
      void sendMediaObject(req, res, slow, key, { contentType: 'video/mp4', maxAgeSeconds: 0, chunkBytes: 64 * 1024, sendTimeoutMs: 200 });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}/object`);
      expect(Buffer.from(await res.arrayBuffer()).equals(fs.readFileSync(file))).toBe(true);
    } finally {
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the send timeout', () => {
  it('is 60 s by default', () => {
    expect(resolveOptions({ dataDir: 'x' }).sendTimeoutMs).toBe(60_000);
  });
});

describe('connections per address', () => {
  let t: TestServer;
  const sockets: net.Socket[] = [];
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await t?.close();
  });

  const open = async (localAddress: string) => {
    const s = net.connect({ port: Number(new URL(t.baseUrl).port), host: '127.0.0.1', localAddress });
    sockets.push(s);
    await new Promise((resolve) => s.once('connect', resolve));
    return s;
  };

  it('closes the connections past the limit as they arrive, from that address only', async () => {
    t = await startServer({ maxConnectionsPerAddress: 4 });
    const held = await Promise.all([1, 2, 3, 4].map(() => open('127.0.0.2')));
    const fifth = await open('127.0.0.2');
    await closedWithin(fifth, 5000);
    for (const s of held) expect(s.destroyed).toBe(false);
    // Another address is not affected…
    const other = await open('127.0.0.3');
    other.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const answer = await new Promise<string>((resolve) => other.once('data', (d: Buffer) => resolve(d.toString())));
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    // …and a connection that closes makes room again.
    held[0]!.destroy();
    // Once the server has seen it go, a new connection from that address is answered (one it
    // refuses meanwhile is closed at once, and counts no more).
    const again = await waitUntil('a connection from 127.0.0.2 answered again', async () => {
      const s = await open('127.0.0.2');
      s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      const answer = await new Promise<string>((resolve) => {
        s.once('data', (d: Buffer) => resolve(d.toString()));
        s.once('close', () => resolve('closed'));
      });
      return answer.startsWith('HTTP/1.1 ') ? answer : notYet(answer);
    });
    expect(again).toMatch(/^HTTP\/1\.1 200/);
  });

  it('allows 256 by default and refuses a limit below 1', () => {
    expect(resolveOptions({ dataDir: 'x' }).maxConnectionsPerAddress).toBe(256);
    expect(() => resolveOptions({ dataDir: 'x', maxConnectionsPerAddress: 0 })).toThrow(/maxConnectionsPerAddress/);
  });
});
