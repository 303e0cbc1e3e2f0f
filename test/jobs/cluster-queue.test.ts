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
 * - an API node killed with -9 while the other serves, and a cancel from an API node stops the
 *   transcode on the worker that runs it.
 *
 * SIGSTOP of a worker past its lease and two workers transcoding at once are in
 * cluster-queue-workers.test.ts (one file ran over a minute); the cluster is
 * test/helpers/queueCluster.ts.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settledDeliveries } from '../helpers/callbackReceiver.js';
import { AdminClient, SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { callbacksFor, ffmpegIn, holdFfmpeg, holdsOf, type JobRow, LEASE_MS, type Node, objectsOf, q, startQueueCluster, status, stopQueueCluster, takenOver, transcodeJob, transcodingWorker, uploadVideo, waitForClusterStatus } from '../helpers/queueCluster.js';
import { waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, runToExit, signalGroup, tempDataDir } from '../helpers/server.js';

beforeAll(startQueueCluster, 180_000);
afterAll(stopQueueCluster, 60_000);

describe('cluster mode: transcode workers on a shared queue with leases', () => {
  it('gives each role its part: a worker answers /healthz only, an API node runs no transcode, /healthz says which and names the queue', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const worker = await (await fetch(`${q.workerA.baseUrl}/healthz`, { headers: admin })).json();
    expect(worker).toMatchObject({ status: 'ok', role: 'worker', queue: { engine: 'BullMQ on PostgreSQL', leaseMs: LEASE_MS } });
    expect(worker.queue.runs).toEqual(expect.arrayContaining(['transcode', 'download', 'callback']));
    const api = await (await fetch(`${q.api1.baseUrl}/healthz`, { headers: admin })).json();
    expect(api).toMatchObject({ role: 'api', queue: { engine: 'BullMQ on PostgreSQL' } });
    expect(api.queue.runs).toContain('callback');
    expect(api.queue.runs).not.toContain('transcode');
    expect(api.queue.runs).not.toContain('download');
    // Anyone gets the status only.
    expect(await (await fetch(`${q.workerA.baseUrl}/healthz`)).json()).toEqual({ status: 'ok' });
    // The API is on the API nodes: a worker says so in the spec's envelope.
    const r = await fetch(`${q.workerA.baseUrl}/Api/Video/GetList?AppId=x`);
    expect(r.status).toBe(404);
    expect(JSON.stringify(await r.json())).toContain('worker node');
    // A role that needs a shared database, without one: refused at start, saying what to set.
    const { code, output: out } = await runToExit(['--port', '0', '--data-dir', tempDataDir('vop-queue-norole-'), '--role', 'worker'], { VOP_DATABASE_URL: '' });
    expect(code).not.toBe(0);
    expect(out).toMatch(/role worker.*VOP_DATABASE_URL/s);
  });

  it('SIGKILL of the worker group holding a transcode: the other worker takes it over within 30 s and finishes it, one status-1 callback', async () => {
    // Short: the holder's ffmpeg is held (SIGSTOP) as soon as it is seen, so the kill lands in
    // the transcode however fast it is, and the take-over encodes the whole clip again.
    const clip = fs.readFileSync(await makeClip({ seconds: 12, width: 960, height: 540, name: 'queue-kill.mp4' }));
    const videoId = await uploadVideo(q.app, clip);
    const holder = await transcodingWorker(videoId);
    holdFfmpeg(holder, videoId);
    const other = holder === q.workerA ? q.workerB : q.workerA;
    // The API nodes never run ffmpeg.
    expect(ffmpegIn(q.api1).concat(ffmpegIn(q.api2))).toEqual([]);
    const before = await transcodeJob(videoId);
    expect(before.state).toBe('running');
    signalGroup(holder.pid, 'SIGKILL');
    const killedAt = Date.now();
    await holder.exited;
    // No worker joins in place of the killed one: the cancel case after this one needs one.
    await tookOver(videoId, before, other, killedAt);
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
    expect((await settledDeliveries(new AdminClient(q.api1.baseUrl, ADMIN_TOKEN), q.app.appId, { videoId })).map((d) => [d.videoStatus, d.state])).toEqual([[1, 'delivered']]);
    expect(callbacksFor(videoId, '1')).toHaveLength(1);
    expect(callbacksFor(videoId, '1')[0]![2]).not.toBe('');
    // The outputs are in the q.bucket, listed by the rows, and nothing of the killed attempt is left.
    const { rows } = await q.db.query<{ file: string }>('SELECT file FROM renditions WHERE video_id = $1', [videoId]);
    expect(rows.map((r) => r.file).sort()).toHaveLength(2);
    const play = (await objectsOf(videoId)).filter((o) => o.startsWith('play/'));
    expect(play.map((o) => o.split(' ')[0]!.slice('play/'.length)).sort()).toEqual(rows.map((r) => r.file).sort());
  }

  it('cancels from an API node a transcode a worker runs, and keeps serving through one API node while the other is killed with -9', async () => {
    // Long enough that the transcode still runs when the worker hears of the cancel (its check is every 2 s).
    const clip = fs.readFileSync(await makeClip({ seconds: 20, width: 960, height: 540, name: 'queue-cancel.mp4' }));
    const videoId = await uploadVideo(q.app, clip);
    const holder = await transcodingWorker(videoId);
    const job = await transcodeJob(videoId);
    expect(await holdsOf(holder)).toContainEqual(expect.objectContaining({ id: job.id, lease: job.lease }));
    const admin2 = new AdminClient(q.api2.baseUrl, ADMIN_TOKEN);
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

    signalGroup(q.api1.pid, 'SIGKILL');
    await q.api1.exited;
    const via2 = new SpecClient(q.api2.baseUrl, q.app.appId, q.app.secret);
    const list = await via2.get('/Api/Video/GetList', { PageSize: 50 });
    expect(list.body.AuthMsg.ResultCode).toBe('1');
    expect(list.body.VideoList.map((v: { Id: string }) => v.Id)).toContain(videoId);
  }, 180_000);
});
