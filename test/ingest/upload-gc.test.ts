/**
 * Uploads do not make V8 collect the whole heap over and over (issue 3's throughput target).
 *
 * Every socket read gives Node a fresh 64 KiB ArrayBuffer, and V8 counts those bytes against the
 * old generation's allocation limit until the next full collection. vop's heap (12 MB live) is
 * above the size where V8 starts incremental marking at all, and the limit V8 sets for so small a
 * heap leaves about 16 MB of room: an upload used to run 37 to 50 full collections (mark-compact)
 * per GiB, one every 20 to 28 MB, and vop spent about twice the CPU it does now. `npm start` gives
 * the old generation a 128 MB floor (`--initial-old-space-size=128`), and the young-generation
 * collections (scavenges) that free the buffers are then all it takes.
 *
 * Run on the bundle `npm start` runs, with its flags, and test/helpers/gcLines.mjs to report each
 * collection. Each count must see scavenges (the lines are read at all), and a control run
 * with the old generation capped shows that it would see the full collections.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, startNodeFlags } from '../../scripts/build-server.mjs';
import { AdminClient, SpecClient } from '../helpers/client.js';
import { tokenMetadata, tusCreate, tusMetadata } from '../helpers/ingest.js';
import { ADMIN_TOKEN, killStrayProcesses, startServerProcess, tempDataDir, type ServerProcess } from '../helpers/server.js';

const MIB = 1024 * 1024;
/** Big enough that the old flags ran a dozen full collections; small enough to take about a second. */
const UPLOAD_MIB = 256;
const FLOOR_FLAG = '--initial-old-space-size=128';
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

afterAll(() => killStrayProcesses());

beforeAll(async () => {
  await buildServer();
}, 60_000);

/** The collections test/helpers/gcLines.mjs reported in `output`: full (mark-compact) and young (scavenge). */
interface Collections {
  full: number;
  young: number;
}
function collections(output: string): Collections {
  return { full: (output.match(/^vop-gc major$/gm) ?? []).length, young: (output.match(/^vop-gc minor$/gm) ?? []).length };
}

/**
 * The output so far, once vop has turned its event loop after the upload (a /healthz round trip)
 * and what it wrote has had a moment to arrive: a window's lines belong to it.
 */
async function settledOutput(p: ServerProcess): Promise<string> {
  expect((await fetch(`${p.baseUrl}/healthz`)).status).toBe(200);
  // A bounded wait: no line marks the end of what the process wrote before the round trip.
  await new Promise((r) => setTimeout(r, 200));
  return p.output();
}

/** vop from the bundle with `flags` in a fresh data dir, and an application. */
async function startWith(flags: string[]): Promise<{ p: ServerProcess; client: SpecClient; dir: string }> {
  const dir = tempDataDir('vop-upload-gc-');
  const p = await startServerProcess(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--admin-token', ADMIN_TOKEN], {}, 'dist/server/main.js', [
    ...flags,
    '--import',
    path.join(import.meta.dirname, '../helpers/gcLines.mjs'),
  ]);
  const app = await new AdminClient(p.baseUrl, ADMIN_TOKEN).createApp('gc');
  return { p, client: new SpecClient(p.baseUrl, app.appId, app.appSecret), dir };
}

/** Stops vop and removes its data dir: the uploads stored there come to 768 MiB. */
async function stop({ p, dir }: { p: ServerProcess; dir: string }): Promise<void> {
  expect(await p.stop('SIGTERM')).toBe(0);
  fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * Sends `head`, then {@link UPLOAD_MIB} MiB (one MiB of a fixed pattern over and over, with backpressure),
 * then `tail`, as one request; resolves with the answer.
 */
function send(url: string, method: string, headers: Record<string, string>, head = Buffer.alloc(0), tail = Buffer.alloc(0)): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const block = Buffer.alloc(MIB);
  for (let i = 0; i < MIB; i += 4) block.writeUInt32LE((i * 2654435761) >>> 0, i);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { ...headers, 'content-length': String(head.length + UPLOAD_MIB * MIB + tail.length) } });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    let sent = 0;
    const more = () => {
      while (sent < UPLOAD_MIB) {
        sent++;
        if (!req.write(block)) return void req.once('drain', more);
      }
      req.end(tail);
    };
    req.write(head);
    more();
  });
}

async function multipartUpload(p: ServerProcess, client: SpecClient): Promise<Collections> {
  const videoId = await client.register({ VideoTitle: 'gc multipart' });
  const boundary = '----vop-gc-test-boundary';
  const fields = { ...client.auth(), VideoId: videoId };
  const head = Buffer.from(
    Object.entries(fields)
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join('') + `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="gc.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const before = (await settledOutput(p)).length;
  const res = await send(`${p.baseUrl}/Api/Video/Upload`, 'POST', { 'content-type': `multipart/form-data; boundary=${boundary}` }, head, Buffer.from(`\r\n--${boundary}--\r\n`));
  expect(res.status, res.body).toBe(200);
  expect(JSON.parse(res.body).AuthMsg.ResultCode).toBe('307'); // stored, then refused: not a video
  return collections((await settledOutput(p)).slice(before));
}

async function tusUpload(p: ServerProcess, client: SpecClient): Promise<Collections> {
  const videoId = await client.register({ VideoTitle: 'gc tus' });
  const created = await tusCreate(p.baseUrl, UPLOAD_MIB * MIB, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId, { filename: 'gc.bin' })) });
  expect(created.res.status, created.body).toBe(201);
  const before = (await settledOutput(p)).length;
  const res = await send(created.url!, 'PATCH', { 'tus-resumable': '1.0.0', 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' });
  // Every byte stored, then refused as not a video: the bytes are counted, not judged here.
  expect(res.status, res.body).toBe(422);
  expect(res.body).toMatch(/^ErrorCode : 307, /);
  return collections((await settledOutput(p)).slice(before));
}

/**
 * The collections during a multipart and a tus upload, after one upload not counted: until
 * its first full collections V8 sizes a fresh heap's limits for start-up, not for how it runs.
 */
async function countedUploads(p: ServerProcess, client: SpecClient): Promise<{ multipart: Collections; tus: Collections }> {
  await multipartUpload(p, client);
  return { multipart: await multipartUpload(p, client), tus: await tusUpload(p, client) };
}

describe("uploads with npm start's Node flags", () => {
  it('start with a floor under the old generation', () => {
    expect(startNodeFlags()).toContain(FLOOR_FLAG);
  });

  it(`take ${UPLOAD_MIB} MiB through multipart and tus without a run of full collections`, async () => {
    const vop = await startWith(startNodeFlags());
    try {
      const { multipart, tus } = await countedUploads(vop.p, vop.client);
      // A collection may fall into an upload for its own reasons (the memory reducer, say);
      // what the floor removes is one every 20 to 28 MB.
      expect(multipart.full).toBeLessThanOrEqual(2);
      expect(tus.full).toBeLessThanOrEqual(2);
      // The trace was read: 256 MiB of socket buffers take several scavenges.
      expect(multipart.young).toBeGreaterThan(0);
      expect(tus.young).toBeGreaterThan(0);
    } finally {
      await stop(vop);
    }
  }, 120_000);

  // V8's heuristics are its own and change with its versions: measured on Node 20 (V8 11.3), which
  // CI runs. Elsewhere the test above runs alone (a floor under the limit can only spare full
  // collections, not add any).
  // A control, not the behaviour: that the count sees full collections when V8 makes them. It is
  // tried up to three times; the test above, the behaviour, once.
  it.skipIf(NODE_MAJOR !== 20)('did with the old generation capped at 64 MB on Node 20 (the control: the count sees them)', { timeout: 120_000, retry: 2 }, async () => {
    // Without the floor alone, V8's full collections follow the heap start-up left behind, which
    // they no longer do reliably: the unbundled server ran 8 to 13 during the tus upload (0 to 4
    // when start-up recalled the ffmpeg proof), the bundle (scripts/build-server.mjs) none in
    // three runs. Capped at 64 MB, the limit V8 sets cannot leave the buffers room, whatever
    // start-up left: 11 to 15 during each upload, the proof recalled or made.
    const vop = await startWith([...startNodeFlags().filter((f) => f !== FLOOR_FLAG), '--max-old-space-size=64']);
    try {
      const { multipart, tus } = await countedUploads(vop.p, vop.client);
      expect(Math.max(multipart.full, tus.full)).toBeGreaterThanOrEqual(5);
    } finally {
      await stop(vop);
    }
  });
});
