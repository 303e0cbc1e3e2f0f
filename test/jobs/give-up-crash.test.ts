/**
 * A stop between a job's end and its video's move. The queue writes a job's end first and then
 * moves the video (JobQueue.giveUp); a process killed between the two writes leaves a video in
 * 5/6 (or 2/3) whose job has ended, or, for a pull, a registration whose job was never queued.
 * The next start must finish what was cut off: the give-up (the video to 7 or 4 with the job's
 * reason, and its callback), not the work once more; and a download for a registration that
 * never got one. The database is left in those states (the states a kill at those instants
 * leaves) through the stores, in the data folder of a real server that is then started.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { JobRecord } from '../../server/storage/jobRecords.js';
import { openSqlJsStores } from '../../server/storage/sqljs/openSqlJsStores.js';
import type { VideoRecord } from '../../server/storage/types.js';
import { startCallbackReceiver } from '../helpers/callbackReceiver.js';
import { AdminClient } from '../helpers/client.js';
import { waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, killStrayProcesses, startServerProcess, tempDataDir } from '../helpers/server.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
  killStrayProcesses();
});

/** An application's callback endpoint on loopback, answering 200; closed after the case. */
async function startReceiver() {
  const receiver = await startCallbackReceiver();
  cleanups.push(receiver.close);
  return receiver;
}

describe('a stop between a job\'s end and its video\'s move', () => {
  it('is finished at the next start: the give-up, not the work again; a registration without its download gets one', async () => {
    const dataDir = tempDataDir();
    const args = ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--admin-token', ADMIN_TOKEN];
    const receiver = await startReceiver();

    // The application, made by a server the way an admin makes it.
    const first = await startServerProcess(args);
    const { appId } = await new AdminClient(first.baseUrl, ADMIN_TOKEN).createApp('give-up app', receiver.url);
    expect(await first.stop()).toBe(0);

    // What kills at the instants in question leave behind.
    const t0 = Date.now() - 60_000;
    const stores = await openSqlJsStores({ dir: dataDir, log: () => undefined });
    const video = (id: string, status: number, sourceType = 1): VideoRecord => ({
      id, appId, title: id, description: '', tags: '', actors: '', createUser: 'u', status, statusReason: '',
      sourceType, sourceUrl: sourceType === 2 ? 'http://127.0.0.1:9/never.mp4' : '', duration: 0, coverFile: '',
      sourceFile: sourceType === 1 ? `${id}/source` : '', keepSource: false, createdAt: t0, updatedAt: t0,
    });
    let seq = 0;
    const job = (videoId: string, type: string, state: 'failed' | 'cancelled', error: string, finishedAt: number): JobRecord => ({
      id: `job-${videoId}`, type, videoId, appId, payload: { videoId }, state, priority: 0, seq: ++seq, attempts: 3, maxAttempts: 3,
      runAfter: 0, progress: 0, error, createdAt: t0 + 500, startedAt: t0 + 600, finishedAt, updatedAt: finishedAt,
    });
    // Transcode failed for good; killed before the video's move to 7.
    await stores.videos.insert(video('v-failed', 5));
    await stores.videos.setStatus('v-failed', 6, { now: t0 + 1_000 });
    await stores.jobs.insert(job('v-failed', 'transcode', 'failed', 'the source is broken', t0 + 2_000));
    // Transcode cancelled while queued; killed before the move.
    await stores.videos.insert(video('v-cancelled', 5));
    await stores.jobs.insert(job('v-cancelled', 'transcode', 'cancelled', '', t0 + 2_000));
    // Failed, moved to 7, then an admin's retry moved it back to 5 and was killed before queueing the job again.
    await stores.videos.insert(video('v-retried', 5));
    await stores.videos.setStatus('v-retried', 6, { now: t0 + 1_000 });
    await stores.jobs.insert(job('v-retried', 'transcode', 'failed', 'first failure', t0 + 2_000));
    await stores.videos.setStatus('v-retried', 7, { now: t0 + 2_001, reason: 'transcoding failed: first failure' });
    await stores.videos.setStatus('v-retried', 5, { now: t0 + 3_000 });
    // A pull that failed for good; killed before the move to 4.
    await stores.videos.insert(video('v-pull-failed', 2, 2));
    await stores.videos.setStatus('v-pull-failed', 3, { now: t0 + 1_000 });
    await stores.jobs.insert(job('v-pull-failed', 'download', 'failed', 'the address answered 404', t0 + 2_000));
    // A pull registered; killed before its job was queued.
    await stores.videos.insert(video('v-pull-unqueued', 2, 2));
    await stores.close();

    const second = await startServerProcess(args);
    cleanups.push(async () => void (await second.stop()));
    const admin = new AdminClient(second.baseUrl, ADMIN_TOKEN);
    // The detail lists every job of the video, the status callbacks' too: the queue's work only.
    const detail = async (id: string) => {
      const body = (await admin.request('GET', `/videos/${id}`)).body;
      return { ...body, jobs: body.jobs.filter((j: { type: string }) => j.type === 'transcode' || j.type === 'download') };
    };

    const failed = await waitUntil('v-failed to reach 7', async () => ((await detail('v-failed')).video.status === 7 ? detail('v-failed') : undefined), { timeoutMs: 20_000, pollMs: 50 });
    expect(failed.video.statusReason).toBe('transcoding failed: the source is broken');
    expect(failed.jobs.map((j: { id: string }) => j.id)).toEqual(['job-v-failed']);

    const cancelled = await waitUntil('v-cancelled to reach 7', async () => ((await detail('v-cancelled')).video.status === 7 ? detail('v-cancelled') : undefined), { timeoutMs: 20_000, pollMs: 50 });
    expect(cancelled.video.statusReason).toBe('transcoding cancelled');
    expect(cancelled.jobs).toHaveLength(1);

    const pullFailed = await waitUntil('v-pull-failed to reach 4', async () => ((await detail('v-pull-failed')).video.status === 4 ? detail('v-pull-failed') : undefined), { timeoutMs: 20_000, pollMs: 50 });
    expect(pullFailed.video.statusReason).toBe('download failed: the address answered 404');
    expect(pullFailed.jobs).toHaveLength(1);

    // The retry's work is due: a new transcode job (which fails here, the source being made up).
    const retried = await waitUntil('v-retried to get a new job', async () => {
      const d = await detail('v-retried');
      return d.jobs.length === 2 ? d : undefined;
    }, { timeoutMs: 20_000, pollMs: 50 });
    expect(retried.jobs.map((j: { type: string }) => j.type)).toEqual(['transcode', 'transcode']);

    // The registration's download is queued now (and refused: loopback is not pulled from by default).
    const unqueued = await waitUntil('v-pull-unqueued to get its download', async () => {
      const d = await detail('v-pull-unqueued');
      return d.jobs.length === 1 ? d : undefined;
    }, { timeoutMs: 20_000, pollMs: 50 });
    expect(unqueued.jobs[0].type).toBe('download');
    await waitUntil('v-pull-unqueued to end its download', async () => ((await detail('v-pull-unqueued')).video.status === 4 ? true : undefined), { timeoutMs: 20_000, pollMs: 50 });

    // The moves the stop cut off reach the application as any move does: one callback each.
    await waitUntil('the callbacks', () => (receiver.received.length >= 4 ? true : undefined), { timeoutMs: 30_000 });
    const byVideo = (id: string) => receiver.received.filter((f) => f.VideoId === id).map((f) => f.VideoStatus);
    expect(byVideo('v-failed')).toEqual(['7']);
    expect(byVideo('v-cancelled')).toEqual(['7']);
    expect(byVideo('v-pull-failed')).toEqual(['4']);
  }, 90_000);
});
