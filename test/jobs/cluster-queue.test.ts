/**
 * The shared queue with leases (issue 11, item 4), with real processes as a supervisor runs them:
 * two API nodes (`--role api`) and two workers (`--role worker`), each `server/main.ts` in a
 * process group of its own, on one real PostgreSQL (test/helpers/postgres.ts) and one Ceph RGW
 * bucket (test/helpers/ceph.ts). Jobs are leased through BullMQ's turns (jobs/turnQueue.ts); the
 * lease here is 4 s (VOP_JOB_LEASE_MS) so that the take-overs happen within a test's time.
 *
 * - roles: a worker answers /healthz only, an API node never transcodes, /healthz says who is what;
 * - SIGKILL of the worker group holding a transcode: the other worker takes the job over within
 *   30 s and finishes it, one status-1 callback;
 * - SIGSTOP of the worker group holding a transcode until the other has finished it, then SIGCONT:
 *   the woken worker writes nothing (the bucket and the rows are as the other left them);
 * - both workers transcode at once, and a console stream on an API node sees their progress;
 * - an API node killed with -9 while the other serves, and a cancel from an API node stops the
 *   transcode on the worker that runs it.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { turnOfLease } from '../../server/jobs/turnQueue.js';
import { openS3MediaStore, type S3MediaStore } from '../../server/storage/media/s3MediaStore.js';
import { settledDeliveries } from '../helpers/callbackReceiver.js';
import { clusterNodeEnv, startCeph, type TestCeph } from '../helpers/ceph.js';
import { AdminClient, SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { collectEvents } from '../helpers/console.js';
import { multipartUpload } from '../helpers/ingest.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, runToExit, signalGroup, startNodeGroup, tempDataDir, type GroupNode } from '../helpers/server.js';

const LEASE_MS = 4_000;

type Node = GroupNode & { role: 'api' | 'worker' };

let pgServer: TestPostgres;
let ceph: TestCeph;
let databaseUrl: string;
let db: pg.Client;
let bucket: S3MediaStore;
let env: NodeJS.ProcessEnv;
const nodes: Node[] = [];
let api1: Node;
let api2: Node;
let workerA: Node;
let workerB: Node;
let app: SpecClient;
/** Status callbacks received: [VideoId, VideoStatus, webhook-id]. */
const callbacks: Array<[string, string, string]> = [];
let receiver: http.Server;

/** A node as a supervisor starts it: its own process group, its own data folder (scratch). */
async function startNode(name: string, role: 'api' | 'worker'): Promise<Node> {
  const dataDir = tempDataDir(`vop-queue-${name}-`);
  // A small ladder, as an admin saves it from the console (the first node imports it for all).
  fs.writeFileSync(
    path.join(dataDir, 'settings.json'),
    JSON.stringify({ ladderRungs: [{ label: '180p', shortSide: 180, videoBitrateKbps: 300 }, { label: '120p', shortSide: 120, videoBitrateKbps: 200 }], transcodeConcurrency: 1 }),
  );
  const node = { ...(await startNodeGroup(name, ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--role', role], env)), role };
  nodes.push(node);
  return node;
}

/**
 * The ffmpeg processes of a node's process group (what it transcodes with); with `videoId`, only
 * those of that video's transcode (they write into its attempt's scratch folder): a worker may be
 * making an earlier video's seek previews or ladder at the same time.
 */
function ffmpegIn(node: Node, videoId?: string): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgid) !== node.pid || state === 'Z' || !fs.readlinkSync(`/proc/${entry}/exe`).endsWith('ffmpeg')) continue;
      if (videoId !== undefined && !fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(`/transcode/${videoId}.`)) continue;
      out.push(Number(entry));
    } catch {
      // It ended while we looked.
    }
  }
  return out;
}

async function status(videoId: string): Promise<number> {
  const { rows } = await db.query<{ status: number }>('SELECT status FROM videos WHERE id = $1', [videoId]);
  return rows[0]!.status;
}

/** waitForStatus on the shared database; a timeout adds what each node said, which is what tells why. */
async function waitForClusterStatus(videoId: string, wanted: number[], timeoutMs = 120_000): Promise<number> {
  try {
    return await waitForStatus(async (id) => ({ status: await status(id) }), videoId, wanted, { timeoutMs, pollMs: 100 });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${nodes.map((n) => `--- ${n.name}:\n${n.output().slice(-3000)}`).join('\n')}`);
  }
}

interface JobRow {
  id: string;
  state: string;
  lease: string;
  attempts: number;
  error: string;
  /** Unix ms, as text (a BIGINT). */
  finished_at: string | null;
}

async function transcodeJob(videoId: string): Promise<JobRow> {
  const { rows } = await db.query<JobRow>(
    `SELECT id, state, lease, attempts, error, finished_at FROM jobs WHERE video_id = $1 AND type = 'transcode' ORDER BY seq DESC LIMIT 1`,
    [videoId],
  );
  return rows[0]!;
}

/**
 * The jobs a node says it holds now (its /healthz, to the admin), each with the lease its attempt
 * runs under: a job leaves the list once the node's attempt has wound down.
 */
async function holdsOf(node: Node): Promise<Array<{ id: string; lease: string }>> {
  const health = await (await fetch(`${node.baseUrl}/healthz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json();
  return health.queue.holds;
}

/**
 * Waits for `other` to take the transcode of `videoId` over from a node that stopped answering;
 * returns the job's row then. A take-over is the shared queue handing the stalled turn on
 * (JobStore.takeOver): the job stays running, under a new lease of the same turn, which `other`
 * holds (its /healthz says so) and runs ffmpeg for. A job queued again instead (the sweep's
 * requeue, then a fresh claim) would be leased under a turn of its own.
 */
async function takenOver(videoId: string, before: JobRow, other: Node, timeoutMs: number): Promise<JobRow> {
  const job = await waitUntil('the take-over', async () => {
    const j = await transcodeJob(videoId);
    if (j.state !== 'running') return j;
    if (j.lease === before.lease || ffmpegIn(other, videoId).length === 0) return undefined;
    return (await holdsOf(other)).some((h) => h.id === j.id && h.lease === j.lease) ? j : undefined;
  }, { timeoutMs: timeoutMs, pollMs: 100 });
  expect(job.state).toBe('running');
  expect(job.lease).not.toBe(before.lease);
  expect(turnOfLease(job.lease)).toBe(turnOfLease(before.lease));
  return job;
}

/** Registers a video through `via` and uploads `clip` to it: its transcode is queued. */
async function uploadVideo(via: SpecClient, clip: Buffer): Promise<string> {
  const videoId = await via.register();
  expect(await multipartUpload(via, videoId, clip)).toBe('1');
  return videoId;
}

/** The worker whose ffmpeg runs now (of A and B), waited for. */
async function transcodingWorker(videoId: string): Promise<Node> {
  return waitUntil(`a worker transcoding ${videoId}`, () => [workerA, workerB].find((w) => w.child.exitCode === null && ffmpegIn(w, videoId).length > 0), { timeoutMs: 60_000, pollMs: 50 });
}

/** Every object of a video in the bucket, with its ETag: what was written. */
async function objectsOf(videoId: string): Promise<string[]> {
  const out: string[] = [];
  for (const prefix of ['play', `covers/${videoId}`, `hls/${videoId}`]) {
    // The time too: the same bytes stored again have the same ETag.
    for (const o of await bucket.list(prefix)) if (o.key.includes(videoId)) out.push(`${o.key} ${o.etag} ${o.modifiedAt}`);
  }
  return out.sort();
}

const callbacksFor = (videoId: string, videoStatus: string) => callbacks.filter(([v, s]) => v === videoId && s === videoStatus);

beforeAll(async () => {
  [pgServer, ceph] = await Promise.all([startPostgres(), startCeph()]);
  databaseUrl = await pgServer.createDatabase();
  const bucketName = `vop-queue-${crypto.randomBytes(4).toString('hex')}`;
  env = clusterNodeEnv({ databaseUrl, ceph, bucket: bucketName, adminToken: ADMIN_TOKEN, leaseMs: LEASE_MS });
  receiver = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const f = new URLSearchParams(raw);
      callbacks.push([f.get('VideoId') ?? '', f.get('VideoStatus') ?? '', String(req.headers['webhook-id'] ?? '')]);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  // The first node creates the schema (BullMQ's too); the others start at once after it.
  api1 = await startNode('api1', 'api');
  [api2, workerA, workerB] = await Promise.all([startNode('api2', 'api'), startNode('workerA', 'worker'), startNode('workerB', 'worker')]);
  const admin = new AdminClient(api1.baseUrl, ADMIN_TOKEN);
  const { appId, appSecret } = await admin.createApp('queue test', `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callback`, { wholeLadderFirst: true });
  app = new SpecClient(api1.baseUrl, appId, appSecret);
  db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  bucket = await openS3MediaStore({ endpoint: ceph.endpoint, bucket: bucketName, accessKeyId: ceph.accessKeyId, secretAccessKey: ceph.secretAccessKey, forcePathStyle: true, scratchDir: tempDataDir('vop-queue-view-'), log: () => undefined });
}, 180_000);

afterAll(async () => {
  for (const n of nodes) signalGroup(n.pid, 'SIGKILL');
  await Promise.all(nodes.map((n) => n.exited));
  await db?.end().catch(() => undefined);
  bucket?.close();
  receiver?.close();
  await ceph?.stop();
  pgServer?.stop();
}, 60_000);

describe('cluster mode: transcode workers on a shared queue with leases', () => {
  it('gives each role its part: a worker answers /healthz only, an API node runs no transcode, /healthz says which and names the queue', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const worker = await (await fetch(`${workerA.baseUrl}/healthz`, { headers: admin })).json();
    expect(worker).toMatchObject({ status: 'ok', role: 'worker', queue: { engine: 'BullMQ on PostgreSQL', leaseMs: LEASE_MS } });
    expect(worker.queue.runs).toEqual(expect.arrayContaining(['transcode', 'download', 'callback']));
    const api = await (await fetch(`${api1.baseUrl}/healthz`, { headers: admin })).json();
    expect(api).toMatchObject({ role: 'api', queue: { engine: 'BullMQ on PostgreSQL' } });
    expect(api.queue.runs).toContain('callback');
    expect(api.queue.runs).not.toContain('transcode');
    expect(api.queue.runs).not.toContain('download');
    // Anyone gets the status only.
    expect(await (await fetch(`${workerA.baseUrl}/healthz`)).json()).toEqual({ status: 'ok' });
    // The API is on the API nodes: a worker says so in the spec's envelope.
    const r = await fetch(`${workerA.baseUrl}/Api/Video/GetList?AppId=x`);
    expect(r.status).toBe(404);
    expect(JSON.stringify(await r.json())).toContain('worker node');
    // A role that needs a shared database, without one: refused at start, saying what to set.
    const { code, output: out } = await runToExit(['--port', '0', '--data-dir', tempDataDir('vop-queue-norole-'), '--role', 'worker'], { VOP_DATABASE_URL: '' });
    expect(code).not.toBe(0);
    expect(out).toMatch(/role worker.*VOP_DATABASE_URL/s);
  });

  it('SIGKILL of the worker group holding a transcode: the other worker takes it over within 30 s and finishes it, one status-1 callback', async () => {
    const clip = fs.readFileSync(await makeClip({ seconds: 40, width: 960, height: 540, name: 'queue-kill.mp4' }));
    const videoId = await uploadVideo(app, clip);
    const holder = await transcodingWorker(videoId);
    const other = holder === workerA ? workerB : workerA;
    // The API nodes never run ffmpeg.
    expect(ffmpegIn(api1).concat(ffmpegIn(api2))).toEqual([]);
    const before = await transcodeJob(videoId);
    expect(before.state).toBe('running');
    signalGroup(holder.pid, 'SIGKILL');
    const killedAt = Date.now();
    await holder.exited;
    try {
      await tookOver(videoId, before, other, killedAt);
    } finally {
      // A new worker joins in place of the killed one (the next tests use two).
      const replacement = await startNode(holder.name, 'worker');
      if (holder === workerA) workerA = replacement;
      else workerB = replacement;
    }
  }, 240_000);

  /** The rest of the SIGKILL case: the other worker's take-over and what it left. */
  async function tookOver(videoId: string, before: JobRow, other: Node, killedAt: number): Promise<void> {
    // The other worker takes the job over under a new lease of the killed one's turn, and runs ffmpeg for it.
    await takenOver(videoId, before, other, 30_000);
    expect(Date.now() - killedAt).toBeLessThan(30_000);
    expect(await waitForClusterStatus(videoId, [1, 7])).toBe(1);
    // The job's end is written just after the video's move.
    const job = await waitUntil('the job to end', async () => {
      const j = await transcodeJob(videoId);
      return j.state === 'running' ? undefined : j;
    }, { timeoutMs: 10_000, pollMs: 50 });
    expect(job).toMatchObject({ state: 'succeeded', lease: '' });
    // The cut-off attempt does not count against the job's tries.
    expect(job.attempts).toBe(before.attempts);
    await waitUntil('the status-1 callback', () => (callbacksFor(videoId, '1').length > 0 ? true : undefined), { timeoutMs: 30_000, pollMs: 50 });
    // Exactly one, its id the receiver can de-duplicate on. Its delivery final, its attempts
    // recorded: a second one, if any were sent, has arrived.
    expect((await settledDeliveries(new AdminClient(api1.baseUrl, ADMIN_TOKEN), app.appId, { videoId })).map((d) => [d.videoStatus, d.state])).toEqual([[1, 'delivered']]);
    expect(callbacksFor(videoId, '1')).toHaveLength(1);
    expect(callbacksFor(videoId, '1')[0]![2]).not.toBe('');
    // The outputs are in the bucket, listed by the rows, and nothing of the killed attempt is left.
    const { rows } = await db.query<{ file: string }>('SELECT file FROM renditions WHERE video_id = $1', [videoId]);
    expect(rows.map((r) => r.file).sort()).toHaveLength(2);
    const play = (await objectsOf(videoId)).filter((o) => o.startsWith('play/'));
    expect(play.map((o) => o.split(' ')[0]!.slice('play/'.length)).sort()).toEqual(rows.map((r) => r.file).sort());
  }

  it('SIGSTOP of the worker group holding a transcode past its lease, then SIGCONT: the other finishes it and the woken one writes nothing', async () => {
    const clip = fs.readFileSync(await makeClip({ seconds: 40, width: 960, height: 540, name: 'queue-stop.mp4' }));
    const videoId = await uploadVideo(app, clip);
    const holder = await transcodingWorker(videoId);
    const other = holder === workerA ? workerB : workerA;
    const before = await transcodeJob(videoId);
    const renditions = async () => (await db.query('SELECT label, file, bytes FROM renditions WHERE video_id = $1 ORDER BY label', [videoId])).rows;
    const history = async () => (await db.query<{ status: number }>('SELECT to_status AS status FROM video_status_history WHERE video_id = $1 ORDER BY id', [videoId])).rows;
    expect(await holdsOf(holder)).toContainEqual(expect.objectContaining({ id: before.id, lease: before.lease }));
    signalGroup(holder.pid, 'SIGSTOP');
    let left: { objects: string[]; renditions: unknown[]; history: Array<{ status: number }> };
    try {
      // Once the paused one's lease lapses, the other takes the job over (its turn handed on).
      await takenOver(videoId, before, other, 60_000);
      expect(await waitForClusterStatus(videoId, [1, 7], 180_000)).toBe(1);
      // What the other worker left, before the paused one wakes.
      left = { objects: await objectsOf(videoId), renditions: await renditions(), history: await history() };
    } finally {
      signalGroup(holder.pid, 'SIGCONT');
    }
    // The woken worker notices (its lock renewal or its check fails), stops its ffmpeg, and its
    // attempt winds down: the job leaves what it holds. Nothing it does after is the job's any more.
    await waitUntil('the woken worker to let go', async () => {
      if (ffmpegIn(holder, videoId).length > 0) return undefined;
      return (await holdsOf(holder)).some((h) => h.id === before.id) ? undefined : true;
    }, { timeoutMs: 30_000, pollMs: 100 });
    // Time is the subject: a late write of the woken worker, if it made one after letting go, would land within 2 s; none may.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(left.objects.length).toBeGreaterThan(4);
    expect(await objectsOf(videoId)).toEqual(left.objects);
    expect(await renditions()).toEqual(left.renditions);
    expect(await history()).toEqual(left.history);
    expect(left.history.filter((h) => h.status === 1)).toHaveLength(1);
    expect(await waitUntil('the job to end', async () => {
      const j = await transcodeJob(videoId);
      return j.state === 'running' ? undefined : j;
    }, { timeoutMs: 10_000, pollMs: 50 })).toMatchObject({ state: 'succeeded', lease: '', attempts: before.attempts });
    // The video's delivery final, its attempts recorded: a second status-1 callback, if the take-over sent one, has arrived.
    expect((await settledDeliveries(new AdminClient(api1.baseUrl, ADMIN_TOKEN), app.appId, { videoId })).map((d) => [d.videoStatus, d.state])).toEqual([[1, 'delivered']]);
    expect(callbacksFor(videoId, '1')).toHaveLength(1);
    // The woken worker is still a worker: it serves /healthz and takes the next job.
    expect((await fetch(`${holder.baseUrl}/healthz`)).status).toBe(200);
  }, 300_000);

  it('runs a transcode on each worker at once, and a console attached to an API node sees their progress live', async () => {
    // The console's event stream, on an API node: the transcodes run on the workers.
    const stream = new AbortController();
    const events: Array<{ event: string; data: { videoId?: string; to?: number; percent?: number } }> = [];
    const res = await fetch(`${api2.baseUrl}/admin/api/events`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: stream.signal });
    expect(res.status).toBe(200);
    collectEvents(res, events);
    const clip = fs.readFileSync(await makeClip({ seconds: 30, width: 960, height: 540, name: 'queue-both.mp4' }));
    const via2 = new SpecClient(api2.baseUrl, app.appId, app.secret);
    const ids = await Promise.all([uploadVideo(app, clip), uploadVideo(via2, clip)]);
    await waitUntil('ffmpeg on both workers at once', () => {
      const on = (w: Node, id: string) => ffmpegIn(w, id).length > 0;
      return (on(workerA, ids[0]!) && on(workerB, ids[1]!)) || (on(workerA, ids[1]!) && on(workerB, ids[0]!)) ? true : undefined;
    }, { timeoutMs: 90_000, pollMs: 50 });
    // Asked while transcoding: the API node has no HLS for it yet.
    expect((await via2.get('/Api/Video/Get', { Id: ids[0]! })).body.HlsURL).toBe('');
    for (const id of ids) expect(await waitForClusterStatus(id, [1, 7])).toBe(1);
    try {
      for (const id of ids) {
        await waitUntil(`the move to 1 of ${id} on the stream`, () => (events.some((e) => e.event === 'video.status' && e.data.videoId === id && e.data.to === 1) ? true : undefined), { timeoutMs: 10_000, pollMs: 50 });
        expect(events.some((e) => e.event === 'job.progress' && e.data.videoId === id && (e.data.percent ?? 0) > 0)).toBe(true);
      }
    } finally {
      stream.abort();
    }
    // The HLS the worker stored is in the API node's answer at once (its cache heard the move).
    expect((await via2.get('/Api/Video/Get', { Id: ids[0]! })).body.HlsURL).toMatch(/\/master\.m3u8$/);
  }, 240_000);

  it('cancels from an API node a transcode a worker runs, and keeps serving through one API node while the other is killed with -9', async () => {
    const clip = fs.readFileSync(await makeClip({ seconds: 40, width: 960, height: 540, name: 'queue-cancel.mp4' }));
    const videoId = await uploadVideo(app, clip);
    const holder = await transcodingWorker(videoId);
    const job = await transcodeJob(videoId);
    expect(await holdsOf(holder)).toContainEqual(expect.objectContaining({ id: job.id, lease: job.lease }));
    const admin2 = new AdminClient(api2.baseUrl, ADMIN_TOKEN);
    const r = await admin2.request('POST', `/jobs/${job.id}/cancel`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.state).toBe('cancelled');
    expect(await waitForClusterStatus(videoId, [7], 10_000)).toBe(7);
    const cancelled = await transcodeJob(videoId);
    expect(cancelled).toMatchObject({ state: 'cancelled', error: 'cancelled', lease: '' });
    // The worker hears of it within its check (2 s), stops ffmpeg, and its attempt winds down
    // without a write of its own: the job leaves what it holds, its row as the cancel left it.
    await waitUntil('ffmpeg stopped', () => (ffmpegIn(holder, videoId).length === 0 ? true : undefined), { timeoutMs: 15_000, pollMs: 100 });
    await waitUntil('the worker to let go of the job', async () => ((await holdsOf(holder)).some((h) => h.id === job.id) ? undefined : true), { timeoutMs: 10_000, pollMs: 100 });
    expect(await transcodeJob(videoId)).toEqual(cancelled);

    signalGroup(api1.pid, 'SIGKILL');
    await api1.exited;
    const via2 = new SpecClient(api2.baseUrl, app.appId, app.secret);
    const list = await via2.get('/Api/Video/GetList', { PageSize: 50 });
    expect(list.body.AuthMsg.ResultCode).toBe('1');
    expect(list.body.VideoList.map((v: { Id: string }) => v.Id)).toContain(videoId);
  }, 180_000);
});
