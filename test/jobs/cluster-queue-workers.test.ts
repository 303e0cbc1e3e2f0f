/**
 * The shared queue with leases (issue 11, item 4), its two workers at work, with real processes as
 * a supervisor runs them: two API nodes (`--role api`) and two workers (`--role worker`), each
 * `server/main.ts` in a process group of its own, on one real PostgreSQL (test/helpers/postgres.ts)
 * and one Ceph RGW bucket (test/helpers/ceph.ts); the lease here is 4 s (VOP_JOB_LEASE_MS).
 *
 * - both workers transcode at once, and a console stream on an API node sees their progress;
 * - SIGSTOP of the worker group holding a transcode until the other has finished it, then SIGCONT:
 *   the woken worker writes nothing (the bucket and the rows are as the other left them).
 *
 * Roles, SIGKILL of a worker and cancels are in cluster-queue.test.ts; the cluster is
 * test/helpers/queueCluster.ts.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settledDeliveries } from '../helpers/callbackReceiver.js';
import { AdminClient, SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { collectEvents } from '../helpers/console.js';
import { callbacksFor, ffmpegIn, holdFfmpeg, holdsOf, type Node, objectsOf, q, startQueueCluster, status, stopQueueCluster, takenOver, transcodeJob, transcodingWorker, uploadVideo, waitForClusterStatus } from '../helpers/queueCluster.js';
import { waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, signalGroup } from '../helpers/server.js';

beforeAll(startQueueCluster, 180_000);
afterAll(stopQueueCluster, 60_000);

describe('cluster mode: two workers on a shared queue with leases', () => {
  it('runs a transcode on each worker at once, and a console attached to an API node sees their progress live', async () => {
    // The console's event stream, on an API node: the transcodes run on the workers.
    const stream = new AbortController();
    const events: Array<{ event: string; data: { videoId?: string; to?: number; percent?: number } }> = [];
    const res = await fetch(`${q.api2.baseUrl}/admin/api/events`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: stream.signal });
    expect(res.status).toBe(200);
    collectEvents(res, events);
    // Each worker's transcode of it takes seconds: the two overlap, and report progress on the way.
    const clip = fs.readFileSync(await makeClip({ seconds: 16, width: 960, height: 540, name: 'queue-both.mp4' }));
    const via2 = new SpecClient(q.api2.baseUrl, q.app.appId, q.app.secret);
    const ids = await Promise.all([uploadVideo(q.app, clip), uploadVideo(via2, clip)]);
    await waitUntil('ffmpeg on both workers at once', () => {
      const on = (w: Node, id: string) => ffmpegIn(w, id).length > 0;
      return (on(q.workerA, ids[0]!) && on(q.workerB, ids[1]!)) || (on(q.workerA, ids[1]!) && on(q.workerB, ids[0]!)) ? true : undefined;
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

  // After the case above, on workers that have each run a transcode: a worker started just before
  // it took the job, stopped, never noticed its lost lease once woken (test/helpers/clips.ts).
  it('SIGSTOP of the worker group holding a transcode past its lease, then SIGCONT: the other finishes it and the woken one writes nothing', async () => {
    // Short: the holder's ffmpeg is held as soon as it is seen, before its whole group is.
    const clip = fs.readFileSync(await makeClip({ seconds: 12, width: 960, height: 540, name: 'queue-stop.mp4' }));
    const videoId = await uploadVideo(q.app, clip);
    const holder = await transcodingWorker(videoId);
    holdFfmpeg(holder, videoId);
    const other = holder === q.workerA ? q.workerB : q.workerA;
    const before = await transcodeJob(videoId);
    const renditions = async () => (await q.db.query('SELECT label, file, bytes FROM renditions WHERE video_id = $1 ORDER BY label', [videoId])).rows;
    const history = async () => (await q.db.query<{ status: number }>('SELECT to_status AS status FROM video_status_history WHERE video_id = $1 ORDER BY id', [videoId])).rows;
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
    expect((await settledDeliveries(new AdminClient(q.api1.baseUrl, ADMIN_TOKEN), q.app.appId, { videoId })).map((d) => [d.videoStatus, d.state])).toEqual([[1, 'delivered']]);
    expect(callbacksFor(videoId, '1')).toHaveLength(1);
    // The woken worker is still a worker: it serves /healthz and takes the next job.
    expect((await fetch(`${holder.baseUrl}/healthz`)).status).toBe(200);
  }, 300_000);

});
