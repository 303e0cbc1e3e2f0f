/**
 * The cluster of the shared-queue tests (jobs/cluster-queue*.test.ts), with real processes as a
 * supervisor runs them: two API nodes (`--role api`) and two workers (`--role worker`), each
 * the server in a process group of its own, on one real PostgreSQL (postgres.ts) and one
 * Ceph RGW bucket (ceph.ts), a callback receiver, and what the tests read of them: the jobs' rows,
 * the ffmpeg each node runs, the jobs each node holds, the bucket's objects. The lease is 4 s
 * (VOP_JOB_LEASE_MS) so that the take-overs happen within a test's time.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { expect } from 'vitest';
import { turnOfLease } from '../../server/jobs/turnQueue.js';
import { openS3MediaStore, type S3MediaStore } from '../../server/storage/media/s3MediaStore.js';
import { clusterNodeEnv, startCeph, type TestCeph } from './ceph.js';
import { AdminClient, SpecClient } from './client.js';
import { startCallbackReceiver, type CallbackReceiver } from './callbackReceiver.js';
import { multipartUpload } from './ingest.js';
import { hold } from './procs.js';
import { startPostgres, type TestPostgres } from './postgres.js';
import { waitForStatus, waitUntil } from './wait.js';
import { ADMIN_TOKEN, signalGroup, startNodeGroup, tempDataDir, type GroupNode } from './server.js';

export const LEASE_MS = 4_000;

export type Node = GroupNode & { role: 'api' | 'worker' };

/**
 * The running cluster, filled by {@link startQueueCluster}: its nodes, the application its videos
 * are registered for (through api1), a connection to the shared database and the test's own view
 * of the bucket. One file's at a time: the files of a worker share this module (the full tier
 * runs without isolation), and {@link stopQueueCluster} leaves it empty for the next.
 */
export const q = {} as { api1: Node; api2: Node; workerA: Node; workerB: Node; app: SpecClient; db: pg.Client; bucket: S3MediaStore };

let pgServer: TestPostgres;
let ceph: TestCeph;
let env: NodeJS.ProcessEnv;
const nodes: Node[] = [];
let receiver: CallbackReceiver | undefined;

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
export function ffmpegIn(node: Node, videoId?: string): number[] {
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

export async function status(videoId: string): Promise<number> {
  const { rows } = await q.db.query<{ status: number }>('SELECT status FROM videos WHERE id = $1', [videoId]);
  return rows[0]!.status;
}

/** waitForStatus on the shared database; a timeout adds what each node said, which is what tells why. */
export async function waitForClusterStatus(videoId: string, wanted: number[], timeoutMs = 120_000): Promise<number> {
  try {
    return await waitForStatus(async (id) => ({ status: await status(id) }), videoId, wanted, { timeoutMs, pollMs: 100 });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${nodes.map((n) => `--- ${n.name}:\n${n.output().slice(-3000)}`).join('\n')}`);
  }
}

export interface JobRow {
  id: string;
  state: string;
  lease: string;
  attempts: number;
  error: string;
  /** Unix ms, as text (a BIGINT). */
  finished_at: string | null;
}

export async function transcodeJob(videoId: string): Promise<JobRow> {
  const { rows } = await q.db.query<JobRow>(
    `SELECT id, state, lease, attempts, error, finished_at FROM jobs WHERE video_id = $1 AND type = 'transcode' ORDER BY seq DESC LIMIT 1`,
    [videoId],
  );
  return rows[0]!;
}

/**
 * The jobs a node says it holds now (its /healthz, to the admin), each with the lease its attempt
 * runs under: a job leaves the list once the node's attempt has wound down.
 */
export async function holdsOf(node: Node): Promise<Array<{ id: string; lease: string }>> {
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
export async function takenOver(videoId: string, before: JobRow, other: Node, timeoutMs: number): Promise<JobRow> {
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
export async function uploadVideo(via: SpecClient, clip: Buffer): Promise<string> {
  const videoId = await via.register();
  expect(await multipartUpload(via, videoId, clip)).toBe('1');
  return videoId;
}

/**
 * Stops (SIGSTOP) the node's ffmpeg runs for the video as soon as it is called, so that its
 * transcode cannot end however short the clip; SIGCONT to the node's group lets them go on. A run
 * that ended meanwhile (a cover's, say) is passed over: the transcode's own is still there.
 */
export function holdFfmpeg(node: Node, videoId: string): void {
  for (const pid of ffmpegIn(node, videoId)) hold(pid);
}

/** The worker whose ffmpeg runs now (of A and B), waited for. */
export async function transcodingWorker(videoId: string): Promise<Node> {
  return waitUntil(`a worker transcoding ${videoId}`, () => [q.workerA, q.workerB].find((w) => w.child.exitCode === null && ffmpegIn(w, videoId).length > 0), { timeoutMs: 60_000, pollMs: 50 });
}

/** Every object of a video in the bucket, with its ETag: what was written. */
export async function objectsOf(videoId: string): Promise<string[]> {
  const out: string[] = [];
  for (const prefix of ['play', `covers/${videoId}`, `hls/${videoId}`]) {
    // The time too: the same bytes stored again have the same ETag.
    for (const o of await q.bucket.list(prefix)) if (o.key.includes(videoId)) out.push(`${o.key} ${o.etag} ${o.modifiedAt}`);
  }
  return out.sort();
}

/** The status callbacks received for the video with that status, each as [VideoId, VideoStatus, webhook-id]. */
export function callbacksFor(videoId: string, videoStatus: string): Array<[string, string, string]> {
  const r = receiver;
  if (!r) return [];
  return r.received.flatMap((f, i): Array<[string, string, string]> => (f.VideoId === videoId && f.VideoStatus === videoStatus ? [[videoId, videoStatus, r.webhookIds[i]!]] : []));
}

/** Starts the services, the receiver and the four nodes, and fills {@link q}: a file's beforeAll. */
export async function startQueueCluster(): Promise<void> {
  [pgServer, ceph] = await Promise.all([startPostgres(), startCeph()]);
  const databaseUrl = await pgServer.createDatabase();
  const bucketName = `vop-queue-${crypto.randomBytes(4).toString('hex')}`;
  env = clusterNodeEnv({ databaseUrl, ceph, bucket: bucketName, adminToken: ADMIN_TOKEN, leaseMs: LEASE_MS });
  receiver = await startCallbackReceiver();
  // The first node creates the schema (BullMQ's too); the others start at once after it.
  q.api1 = await startNode('api1', 'api');
  [q.api2, q.workerA, q.workerB] = await Promise.all([startNode('api2', 'api'), startNode('workerA', 'worker'), startNode('workerB', 'worker')]);
  const admin = new AdminClient(q.api1.baseUrl, ADMIN_TOKEN);
  const { appId, appSecret } = await admin.createApp('queue test', receiver.url, { wholeLadderFirst: true });
  q.app = new SpecClient(q.api1.baseUrl, appId, appSecret);
  q.db = new pg.Client({ connectionString: databaseUrl });
  await q.db.connect();
  q.bucket = await openS3MediaStore({ endpoint: ceph.endpoint, bucket: bucketName, accessKeyId: ceph.accessKeyId, secretAccessKey: ceph.secretAccessKey, forcePathStyle: true, scratchDir: tempDataDir('vop-queue-view-'), log: () => undefined });
}

/** Kills every node started and lets go of the rest: a file's afterAll. */
export async function stopQueueCluster(): Promise<void> {
  for (const n of nodes) signalGroup(n.pid, 'SIGKILL');
  await Promise.all(nodes.map((n) => n.exited));
  await q.db?.end().catch(() => undefined);
  q.bucket?.close();
  await receiver?.close();
  receiver = undefined;
  await ceph?.stop();
  pgServer?.stop();
  nodes.length = 0;
}
