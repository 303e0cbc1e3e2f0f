/**
 * The ladder after the first rendition (processing/ladderJob.ts) in cluster mode, with real
 * processes as a supervisor runs them: one API node and two workers (`server/main.ts` each, in a
 * process group of its own) on one real PostgreSQL and one Ceph RGW bucket, the lease 4 s
 * (VOP_JOB_LEASE_MS) as in cluster-queue.test.ts.
 *
 * A worker whose process group is killed with SIGKILL while it encodes a video's ladder (the
 * video playable meanwhile with its first rendition) leaves the job to the other worker, which
 * takes it over once the lease lapses and completes it: the video stays 1 throughout, every rung
 * is listed once, in the bucket as a whole file and in the HLS master playlist, and nothing the
 * killed attempt stored is left.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { turnOfLease } from '../../server/jobs/turnQueue.js';
import { parseMasterPlaylist } from '../../server/media/hls.js';
import { openS3MediaStore, type S3MediaStore } from '../../server/storage/media/s3MediaStore.js';
import { settledDeliveries, startCallbackReceiver } from '../helpers/callbackReceiver.js';
import { clusterNodeEnv, startCeph, type TestCeph } from '../helpers/ceph.js';
import { AdminClient, SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { multipartUpload } from '../helpers/ingest.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { probe } from '../helpers/probe.js';
import { holdOnceWriting, processes, runs, type Proc } from '../helpers/procs.js';
import { waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, signalGroup, startNodeGroup, tempDataDir, type GroupNode } from '../helpers/server.js';

const LEASE_MS = 4_000;

let pgServer: TestPostgres;
let ceph: TestCeph;
let db: pg.Client;
let bucket: S3MediaStore;
let env: NodeJS.ProcessEnv;
const nodes: GroupNode[] = [];
const dataDirs: string[] = [];
let api: GroupNode;
let workerA: GroupNode;
let workerB: GroupNode;
let app: SpecClient;
/** The application's callback endpoint: the status callbacks' fields, in arrival order. */
let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;

async function startNode(name: string, role: 'api' | 'worker'): Promise<GroupNode> {
  const dataDir = tempDataDir(`vop-ladder-${name}-`);
  dataDirs.push(dataDir);
  // Three rungs: a 640x360 source is copied as 360p, the ladder encodes 240p and 180p (the first
  // node imports the file's settings into the database for all).
  const ladderRungs = [
    { label: '360p', shortSide: 360, videoBitrateKbps: 800 },
    { label: '240p', shortSide: 240, videoBitrateKbps: 400 },
    { label: '180p', shortSide: 180, videoBitrateKbps: 300 },
  ];
  fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ ladderRungs, transcodeConcurrency: 1 }));
  const node = await startNodeGroup(name, ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--role', role], env);
  nodes.push(node);
  return node;
}

/** The ffmpeg processes of a node's process group, with their niceness and command line. */
const ffmpegIn = (node: GroupNode): Proc[] => processes((p) => p.pgid === node.pid && runs(p, 'ffmpeg'));

/** The ladder's encode: libx264 at the ladder's lower priority (niceness 10). */
const ladderEncode = (node: GroupNode) => ffmpegIn(node).find((p) => p.cmdline.includes('libx264') && p.nice === 10);

async function video(videoId: string): Promise<{ status: number; ladder: string }> {
  const { rows } = await db.query<{ status: number; ladder: string }>('SELECT status, ladder FROM videos WHERE id = $1', [videoId]);
  return rows[0]!;
}

async function ladderJob(videoId: string): Promise<{ id: string; state: string; lease: string; attempts: number } | undefined> {
  const { rows } = await db.query<{ id: string; state: string; lease: string; attempts: number }>(
    `SELECT id, state, lease, attempts FROM jobs WHERE video_id = $1 AND type = 'ladder' ORDER BY seq DESC`,
    [videoId],
  );
  expect(rows.length).toBeLessThanOrEqual(1);
  return rows[0];
}

/**
 * The jobs a node says it holds now (its /healthz, to the admin), each with the lease its attempt
 * runs under: a job leaves the list once the node's attempt has wound down.
 */
async function holdsOf(node: GroupNode): Promise<Array<{ id: string; lease: string }>> {
  const health = await (await fetch(`${node.baseUrl}/healthz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json();
  return health.queue.holds;
}

/** The whole object, into a file of its own (for ffprobe). */
async function download(key: string, dir: string): Promise<string> {
  const file = path.join(dir, key.split('/').join('_'));
  await pipeline(await bucket.openRange(key), fs.createWriteStream(file));
  return file;
}

async function text(key: string): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of await bucket.openRange(key)) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const withOutputs = (err: unknown) => new Error(`${(err as Error).message}\n${nodes.map((n) => `--- ${n.name}:\n${n.output().slice(-3000)}`).join('\n')}`);

beforeAll(async () => {
  [pgServer, ceph] = await Promise.all([startPostgres(), startCeph()]);
  const databaseUrl = await pgServer.createDatabase();
  const bucketName = `vop-ladder-${crypto.randomBytes(4).toString('hex')}`;
  env = clusterNodeEnv({ databaseUrl, ceph, bucket: bucketName, adminToken: ADMIN_TOKEN, leaseMs: LEASE_MS });
  receiver = await startCallbackReceiver();
  // The first node creates the schema; the workers start at once after it.
  api = await startNode('api', 'api');
  [workerA, workerB] = await Promise.all([startNode('workerA', 'worker'), startNode('workerB', 'worker')]);
  const { appId, appSecret } = await new AdminClient(api.baseUrl, ADMIN_TOKEN).createApp('ladder test', receiver.url);
  app = new SpecClient(api.baseUrl, appId, appSecret);
  db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  bucket = await openS3MediaStore({ endpoint: ceph.endpoint, bucket: bucketName, accessKeyId: ceph.accessKeyId, secretAccessKey: ceph.secretAccessKey, forcePathStyle: true, scratchDir: tempDataDir('vop-ladder-view-'), log: () => undefined });
}, 180_000);

afterAll(async () => {
  for (const n of nodes) signalGroup(n.pid, 'SIGKILL');
  await Promise.all(nodes.map((n) => n.exited));
  await db?.end().catch(() => undefined);
  bucket?.close();
  await receiver?.close();
  await ceph?.stop();
  await pgServer?.stop();
  for (const d of dataDirs) fs.rmSync(d, { recursive: true, force: true });
}, 60_000);

describe('cluster mode: the ladder after the first rendition', () => {
  it('a worker killed (its process group, SIGKILL) while it encodes a ladder leaves it to the other, which completes it; the video stays 1', async () => {
    // 20 s: the encode is held (SIGSTOP) once some way into it, so its length need not outlast the checks.
    const clip = fs.readFileSync(await makeClip({ seconds: 20, width: 640, height: 360 }));
    const videoId = await app.register();
    expect(await multipartUpload(app, videoId, clip)).toBe('1');

    // Playable with the copy; then a worker encodes 240p and 180p at the ladder's niceness.
    const [holder, encode] = await waitUntil('a worker encoding the ladder', () => {
      for (const w of [workerA, workerB]) {
        const p = ladderEncode(w);
        if (p) return [w, p] as const;
      }
      return undefined;
    }, { timeoutMs: 90_000, pollMs: 20 }).catch((err: unknown) => {
      throw withOutputs(err);
    });
    const other = holder === workerA ? workerB : workerA;
    expect(encode.cmdline).not.toContain('-c:v copy');
    expect(ffmpegIn(api)).toEqual([]);
    expect(await video(videoId)).toEqual({ status: 1, ladder: 'pending' });
    const before = (await ladderJob(videoId))!;
    expect(before.state).toBe('running');
    expect(await holdsOf(holder)).toContainEqual(expect.objectContaining({ id: before.id, lease: before.lease }));
    const { rows: listedBefore } = await db.query<{ label: string }>('SELECT label FROM renditions WHERE video_id = $1', [videoId]);
    expect(listedBefore.map((r) => r.label)).toEqual(['360p']);
    // Some way into the encode: outputs half-written in the holder's scratch folder; held there
    // (SIGSTOP) until the group's kill, which then lands in it however fast it is.
    await holdOnceWriting(encode);

    signalGroup(holder.pid, 'SIGKILL');
    const killedAt = Date.now();
    expect(await holder.exited).toBeNull();
    // Served all along: the API node answers with the first rendition meanwhile.
    const meanwhile = (await app.get('/Api/Video/Get', { Id: videoId })).body;
    expect(meanwhile.VideoModel.Status).toBe(1);
    expect(meanwhile.VideoPlayFile.map((f: { BitrateLabel: string }) => f.BitrateLabel)).toEqual(['360p']);

    try {
      // The other worker takes the job over and encodes: the shared queue hands the killed one's
      // turn on (JobStore.takeOver), so the job stays running under a new lease of the same turn,
      // which the other holds (its /healthz says so). A job queued again instead (the sweep's
      // requeue, then a fresh claim) would be leased under a turn of its own.
      const takenOver = await waitUntil('the take-over', async () => {
        const j = (await ladderJob(videoId))!;
        if (j.state !== 'running') return j;
        if (j.lease === before.lease || !ladderEncode(other)) return undefined;
        return (await holdsOf(other)).some((h) => h.id === j.id && h.lease === j.lease) ? j : undefined;
      }, { timeoutMs: 30_000, pollMs: 100 });
      expect(Date.now() - killedAt).toBeLessThan(30_000);
      expect(takenOver.state).toBe('running');
      expect(takenOver.lease).not.toBe(before.lease);
      expect(turnOfLease(takenOver.lease)).toBe(turnOfLease(before.lease));
      await waitUntil('the ladder to complete', async () => ((await video(videoId)).ladder !== 'pending' ? true : undefined), { timeoutMs: 120_000, pollMs: 200 });
      const job = await waitUntil('the job to end', async () => {
        const j = (await ladderJob(videoId))!;
        return j.state === 'running' || j.state === 'queued' ? undefined : j;
      }, { timeoutMs: 10_000, pollMs: 50 });
      expect(job).toMatchObject({ state: 'succeeded', lease: '' });
      // The cut-off attempt does not count against the job's tries.
      expect(job.attempts).toBe(before.attempts);
    } catch (err) {
      throw withOutputs(err);
    }
    expect(await video(videoId)).toEqual({ status: 1, ladder: '' });
    // Playable since the first rendition: one move to 1.
    const { rows: history } = await db.query<{ to_status: number }>('SELECT to_status FROM video_status_history WHERE video_id = $1 ORDER BY id', [videoId]);
    expect(history.map((h) => h.to_status)).toEqual([8, 5, 6, 1]);

    // Every rung listed once, each a whole file in the bucket; nothing else of the video in play/.
    const { rows } = await db.query<{ label: string; file: string; width: number; height: number }>('SELECT label, file, width, height FROM renditions WHERE video_id = $1 ORDER BY height DESC', [videoId]);
    expect(rows.map((r) => r.label)).toEqual(['360p', '240p', '180p']);
    const play = (await bucket.list('play')).map((o) => o.key).filter((k) => k.includes(videoId));
    expect(play.sort()).toEqual(rows.map((r) => `play/${r.file}`).sort());
    const dir = tempDataDir('vop-ladder-probe-');
    dataDirs.push(dir);
    for (const r of rows) {
      const info = await probe(await download(`play/${r.file}`, dir));
      expect(info.isVideo, `${r.file}: ${JSON.stringify(info)}`).toBe(true);
      if (!info.isVideo) continue;
      expect(Math.abs(info.durationSeconds - 20)).toBeLessThan(0.5);
      expect([info.width, info.height]).toEqual([r.width, r.height]);
    }

    // The master playlist lists each rung once, and each variant's playlist and segments are stored.
    const variants = parseMasterPlaylist(await text(`hls/${videoId}/master.m3u8`));
    expect(variants.map((v) => `${v.width}x${v.height}`).sort()).toEqual(rows.map((r) => `${r.width}x${r.height}`).sort());
    const hlsKeys = new Set((await bucket.list(`hls/${videoId}`)).map((o) => o.key));
    for (const v of variants) {
      const playlist = await text(`hls/${videoId}/${v.uri}`);
      expect(playlist).toContain('#EXT-X-ENDLIST');
      const segments = playlist.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
      expect(segments.length).toBeGreaterThan(0);
      for (const s of segments) expect(hlsKeys.has(`hls/${videoId}/${path.posix.join(path.posix.dirname(v.uri), s)}`), s).toBe(true);
    }
    // And through the API node, as a player gets them.
    const body = (await app.get('/Api/Video/Get', { Id: videoId })).body;
    expect(body.VideoPlayFile.map((f: { BitrateLabel: string }) => f.BitrateLabel)).toEqual(['360p', '240p', '180p']);
    const master = await fetch(body.HlsURL);
    expect(master.status).toBe(200);
    for (const v of parseMasterPlaylist(await master.text())) expect((await fetch(new URL(v.uri, body.HlsURL))).status).toBe(200);

    // One status-1 callback (the ladder sends none).
    await waitUntil('the status-1 callback', () => (receiver.received.some((c) => c.VideoId === videoId && c.VideoStatus === '1') ? true : undefined), { timeoutMs: 30_000, pollMs: 50 });
    // Every delivery final, its attempts recorded: a second callback, if one were sent, has arrived.
    expect((await settledDeliveries(new AdminClient(api.baseUrl, ADMIN_TOKEN), app.appId, { videoId })).map((d) => [d.videoStatus, d.state])).toEqual([[1, 'delivered']]);
    expect(receiver.received.filter((c) => c.VideoId === videoId).map((c) => c.VideoStatus)).toEqual(['1']);
  }, 300_000);
});
