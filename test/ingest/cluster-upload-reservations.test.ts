/**
 * Upload space reservations across the nodes of a cluster (issue 12, item 7: "every limit and
 * reservation holds across nodes too"). Two API nodes as real processes, each in a process group
 * of its own and with its own data folder, on one real PostgreSQL (test/helpers/postgres.ts), with
 * one media folder both mount (`--shared-media`; here each data folder's `media` is a link to it):
 * every upload's bytes land on that one disk, so both nodes must count each other's reservations.
 *
 * With media in a bucket (Ceph RGW, test/helpers/ceph.ts; two nodes in this process, as
 * test/ingest/cluster-tus.test.ts runs them) the bytes land elsewhere: a tus upload's in the bucket, which
 * reports no free space, and a multipart body's on the receiving node's own disk. A tus upload is
 * then refused for no node's disk, and a multipart body counts against its node's disk alone; one
 * upload per video holds across nodes whatever the kind.
 *
 * The disk is the real one. Each pair of nodes starts with a margin that leaves ROOM of the
 * disk's free space: uploads are announced (tus Upload-Length, a multipart Content-Length) in GiB
 * and mostly never sent, so two fit and three do not, whatever other test files write or delete
 * meanwhile (less than half a GiB).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient, SpecClient } from '../helpers/client.js';
import { startCeph, type TestCeph } from '../helpers/ceph.js';
import { tokenMetadata, tusCreate, tusHead, tusMetadata, tusPatch } from '../helpers/ingest.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, buildEntry, signalGroup, startNodeGroup, startServer, tempDataDir, type GroupNode, type TestServer } from '../helpers/server.js';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
/** What an upload announces: two fit in ROOM, three do not. */
const SIZE = GiB;
const ROOM = 2.5 * GiB;
/** The nodes' lease (VOP_JOB_LEASE_MS): a multipart body's reservation outlives its dead node by at most this. */
const LEASE_MS = 3_000;

let pgServer: TestPostgres;
const nodes: Node[] = [];
const clients: pg.Client[] = [];

/** test/helpers/ingestNode.ts, built once (buildEntry): four starts through tsx cost some 3 CPU-seconds. */
let ingestNode: Awaited<ReturnType<typeof buildEntry>>;

beforeAll(async () => {
  [pgServer, ingestNode] = await Promise.all([startPostgres(), buildEntry('ingestNode')]);
}, 60_000);

afterAll(async () => {
  for (const n of nodes) signalGroup(n.pid, 'SIGKILL');
  await Promise.all(nodes.map((n) => n.exited));
  for (const c of clients) await c.end().catch(() => undefined);
  pgServer?.stop();
  ingestNode?.remove();
}, 30_000);

type Node = GroupNode;

/**
 * test/helpers/ingestNode.ts, built (server/main.ts's start-up with ingest options from the
 * environment), in a process group of its own, as a supervisor starts a node; resolves once it listens.
 */
async function startNode(name: string, args: string[], env: NodeJS.ProcessEnv): Promise<Node> {
  const node = await startNodeGroup(name, args, env, ingestNode.file);
  nodes.push(node);
  return node;
}

/** Free bytes of the disk holding `dir`, as the server reads them (statfs). */
function freeBytes(dir: string): number {
  const s = fs.statfsSync(dir);
  return s.bavail * s.bsize;
}

/**
 * Two API nodes on a new database and one media folder, whose margin leaves ROOM free for
 * uploads; one application, as each node's client sees it; and the test's own connection.
 */
async function startPair(ingest: Record<string, unknown> = {}) {
  const databaseUrl = await pgServer.createDatabase();
  const media = tempDataDir('vop-shared-media-');
  const options = {
    freeSpaceMarginBytes: Math.floor(freeBytes(media) - ROOM),
    maxUploadBytes: { flash: 2 * GiB, silverlight: 2 * GiB },
    multipartMaxBytes: 2 * GiB,
    // One application from one address makes every upload here: its shares are left whole.
    appReservationShare: 1,
    addressReservationShare: 1,
    ...ingest,
  };
  const env = { VOP_DATABASE_URL: databaseUrl, VOP_SHARED_MEDIA: '1', VOP_ADMIN_TOKEN: ADMIN_TOKEN, VOP_JOB_LEASE_MS: String(LEASE_MS), VOP_TEST_INGEST: JSON.stringify(options) };
  const start = (name: string) => {
    const dataDir = tempDataDir(`vop-resv-${name}-`);
    fs.symlinkSync(media, path.join(dataDir, 'media'));
    return startNode(name, ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--role', 'api'], env);
  };
  // One after the other: the first migrates the new database.
  const a = await start('a');
  const b = await start('b');
  const { appId, appSecret } = await new AdminClient(a.baseUrl, ADMIN_TOKEN).createApp();
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  clients.push(db);
  return { a, b, media, db, viaA: new SpecClient(a.baseUrl, appId, appSecret), viaB: new SpecClient(b.baseUrl, appId, appSecret) };
}

/** A tus creation of `length` bytes for `videoId` through `client`'s node (the spec's values as metadata). */
async function create(client: SpecClient, videoId: string, length = SIZE) {
  const r = await tusCreate(client.baseUrl, length, { 'Upload-Metadata': tusMetadata(tokenMetadata(client, videoId)) });
  return { status: r.res.status, url: r.url, body: r.body };
}

/**
 * A multipart upload (`POST /Api/Video/Upload`) announcing `length` bytes, of which the fields,
 * the file part's head and `sent` bytes of the file are sent; the request stays open (a body
 * still arriving) until the test ends it. Resolves the answer, if the server gives one.
 */
function openMultipart(client: SpecClient, videoId: string, length: number, sent: number) {
  const boundary = '----vop-reservations';
  const fields = Object.entries({ ...client.auth(), VideoId: videoId })
    .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
    .join('');
  const head = `${fields}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="clip.mp4"\r\nContent-Type: video/mp4\r\n\r\n`;
  const target = new URL('/Api/Video/Upload', client.baseUrl);
  const req = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'Content-Length': String(length) } });
  const answer = new Promise<{ status: number; body: string } | undefined>((resolve) => {
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', () => resolve(undefined));
  });
  req.write(head);
  req.write(Buffer.alloc(sent, 7));
  return { req, answer };
}

/** The reservations every node sees, as the database holds them. */
async function reservations(db: pg.Client) {
  const { rows } = await db.query<{ key: string; kind: string; video_id: string; size: string; written: string; node: string; expires_at: string | null }>(
    'SELECT key, kind, video_id, size, written, node, expires_at FROM upload_reservations ORDER BY created_at',
  );
  return rows.map((r) => ({ ...r, size: Number(r.size), written: Number(r.written) }));
}

describe('upload reservations across two API nodes on one shared media folder', () => {
  let pair: Awaited<ReturnType<typeof startPair>>;
  beforeAll(async () => {
    pair = await startPair();
  }, 120_000);

  it('takes, of creations through both nodes at once, exactly those that fit together; a release through one node makes room on the other', async () => {
    const { viaA, viaB, db } = pair;
    const videos = await Promise.all([1, 2, 3, 4].map(() => viaA.register()));
    // Two through each node, at once: room for two in all, not two per node.
    const answers = await Promise.all(videos.map((v, i) => create(i % 2 === 0 ? viaA : viaB, v)));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 507, 507]);
    for (const refused of answers.filter((a) => a.status === 507)) {
      expect(refused.body).toMatch(/^ErrorCode : 507, ErrorMessage : Insufficient Storage: 1.0 GB does not fit: .* 2.0 GB promised to uploads under way/);
    }
    const rows = await reservations(db);
    expect(rows.map((r) => [r.kind, r.size]).sort()).toEqual([
      ['tus', SIZE],
      ['tus', SIZE],
    ]);

    // Node B is full with what both nodes took...
    const fifth = await viaB.register();
    expect((await create(viaB, fifth)).status).toBe(507);
    // ...until an upload is ended (tus DELETE) through node A, whichever node made it.
    const ended = answers.find((a) => a.status === 201)!.url!;
    const onA = `${pair.a.baseUrl}${new URL(ended).pathname}`;
    expect((await fetch(onA, { method: 'DELETE', headers: { 'Tus-Resumable': '1.0.0' } })).status).toBe(204);
    const taken = await create(viaB, fifth);
    expect(taken.status, taken.body).toBe(201);
    expect((await create(viaA, await viaA.register())).status).toBe(507);
  }, 60_000);

  it('takes one upload per video across nodes: tus and multipart through the other node are refused (303)', async () => {
    const { viaA, viaB, media, db } = pair;
    const videoId = await viaA.register();
    expect((await create(viaA, videoId, MiB)).status).toBe(201);
    const again = await create(viaB, videoId, MiB);
    expect(again.status).toBe(403);
    expect(again.body).toMatch(/^ErrorCode : 303, ErrorMessage : Video State Conflict: another upload of this video is under way \(0 bytes of 1.0 MB received\)/);
    const form = new FormData();
    for (const [k, v] of Object.entries({ ...viaB.auth(), VideoId: videoId })) form.append(k, v);
    form.append('file', new Blob([new Uint8Array(MiB)]), 'clip.mp4');
    const res = await fetch(`${viaB.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form });
    expect((await res.json()).AuthMsg.ResultCode).toBe('303');
    expect(fs.existsSync(path.join(media, 'incoming', videoId))).toBe(false);
    expect((await reservations(db)).filter((r) => r.video_id === videoId)).toHaveLength(1);
  }, 60_000);
});

describe('a node killed with -9 while it holds reservations', () => {
  it("stops counting its multipart body's bytes within a lease; its tus upload, which any node resumes, counts until it expires", async () => {
    // Long enough for the lease to run out well before it, short enough to wait for.
    const expiryMs = 12_000;
    const { a, b, viaA, viaB, db } = await startPair({ uploadExpiryMs: expiryMs });
    // Node A: a tus upload, and a multipart body of which 2 MiB have arrived.
    const tusVideo = await viaA.register();
    // Before the request: the server's expiry counts from a moment after this.
    const tusCreatedAt = Date.now();
    const tus = await create(viaA, tusVideo);
    expect(tus.status, tus.body).toBe(201);
    const bodyVideo = await viaA.register();
    const body = openMultipart(viaA, bodyVideo, SIZE, 2 * MiB);
    // The written bytes reach the database (at a bounded rate, not per chunk), under node A's name.
    const row = await waitUntil('the body to be reserved, its bytes written', async () => {
      const r = (await reservations(db)).find((x) => x.video_id === bodyVideo);
      return r && r.written >= 2 * MiB ? r : undefined;
    }, { timeoutMs: 10_000, pollMs: 50 });
    expect(row).toMatchObject({ kind: 'multipart', size: SIZE });
    expect(row.node).not.toBe('');
    expect(Number(row.expires_at)).toBeLessThanOrEqual(Date.now() + LEASE_MS + 1000);
    // The body's video is taken on node B too.
    expect((await create(viaB, bodyVideo, MiB)).status).toBe(403);
    const next = await viaB.register();
    expect((await create(viaB, next)).status).toBe(507);

    signalGroup(a.pid, 'SIGKILL');
    await a.exited;
    body.req.destroy();
    const killedAt = Date.now();
    // Still promised right after the kill: the lease has not run out.
    expect((await create(viaB, next)).status).toBe(507);
    // Then the body's bytes stop counting, within a lease (plus a poll).
    await waitUntil('the dead node\'s body to stop counting', async () => ((await create(viaB, next)).status === 201 ? true : undefined), { timeoutMs: LEASE_MS + 5_000, pollMs: 200 });
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS + 5_000);

    // The tus upload lives on: node B resumes it, and it still counts...
    expect((await tusHead(`${b.baseUrl}${new URL(tus.url!).pathname}`)).headers.get('upload-offset')).toBe('0');
    const last = await viaB.register();
    expect((await create(viaB, last)).status).toBe(507);
    // ...until it expires.
    await waitUntil('the dead node\'s tus upload to expire', async () => ((await create(viaB, last)).status === 201 ? true : undefined), { timeoutMs: expiryMs + 5_000, pollMs: 250 });
    expect(Date.now() - tusCreatedAt).toBeGreaterThanOrEqual(expiryMs);
  }, 90_000);
});

describe('with media in a bucket: where the bytes land', () => {
  let ceph: TestCeph;
  const servers: TestServer[] = [];
  /** Node A's disk has no room left (its margin is over its free space); node B's has ROOM. */
  let a: TestServer;
  let b: TestServer;
  let viaA: SpecClient;
  let viaB: SpecClient;
  let db: pg.Client;

  beforeAll(async () => {
    ceph = await startCeph();
    const databaseUrl = await pgServer.createDatabase();
    const objectStorage = {
      endpoint: ceph.endpoint,
      bucket: `vop-resv-${crypto.randomBytes(4).toString('hex')}`,
      accessKeyId: ceph.accessKeyId,
      secretAccessKey: ceph.secretAccessKey,
      forcePathStyle: true,
    };
    const sizes = { maxUploadBytes: { flash: 2 * GiB, silverlight: 2 * GiB }, multipartMaxBytes: 2 * GiB, appReservationShare: 1, addressReservationShare: 1 };
    const free = freeBytes(tempDataDir());
    a = await startServer({ databaseUrl, objectStorage, ingest: { ...sizes, freeSpaceMarginBytes: free + 1024 * GiB } });
    servers.push(a);
    b = await startServer({ databaseUrl, objectStorage, ingest: { ...sizes, freeSpaceMarginBytes: Math.floor(free - ROOM) } });
    servers.push(b);
    viaA = await a.newApp();
    viaB = new SpecClient(b.baseUrl, viaA.appId, viaA.secret);
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    clients.push(db);
  }, 120_000);

  afterAll(async () => {
    for (const s of servers) await s.close();
    await ceph?.stop();
  }, 60_000);

  it("takes a tus upload on a node whose disk is full, as its bytes go to the bucket; a multipart body counts against its node's disk alone", async () => {
    // Node A's disk is full: a tus upload is taken all the same, and its bytes are too.
    const videoId = await viaA.register();
    const tus = await create(viaA, videoId);
    expect(tus.status, tus.body).toBe(201);
    const patched = await tusPatch(tus.url!, 0, Buffer.alloc(MiB, 1));
    expect(patched.status, await patched.clone().text()).toBe(204);
    // A multipart body would land on node A's own disk: refused.
    const form = new FormData();
    for (const [k, v] of Object.entries({ ...viaA.auth(), VideoId: await viaA.register() })) form.append(k, v);
    form.append('file', new Blob([new Uint8Array(MiB)]), 'clip.mp4');
    const res = await fetch(`${a.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form });
    expect(res.status).toBe(507);
    // One upload per video across nodes, whatever the kind: node B refuses a multipart body for
    // the video whose tus upload node A took.
    const other = openMultipart(viaB, videoId, MiB, 64 * 1024);
    const answer = await other.answer;
    other.req.destroy();
    expect(JSON.parse(answer!.body).AuthMsg.ResultCode).toBe('303');

    // Node B receives a 2 GiB body: its disk has room for 0.5 GiB more, the bucket for anything.
    const bodyVideo = await viaB.register();
    const body = openMultipart(viaB, bodyVideo, 2 * GiB, MiB);
    try {
      const row = await waitUntil('the body to be reserved', async () => (await reservations(db)).find((r) => r.video_id === bodyVideo), { timeoutMs: 10_000, pollMs: 50 });
      expect(row.kind).toBe('multipart');
      const more = openMultipart(viaB, await viaB.register(), SIZE, 64 * 1024);
      const refused = await more.answer;
      more.req.destroy();
      expect(refused?.status).toBe(507);
      expect(refused?.body).toMatch(/2.0 GB promised to uploads under way/);
      expect((await create(viaB, await viaB.register())).status).toBe(201);
    } finally {
      body.req.destroy();
    }
  }, 120_000);
});
