/**
 * A transcode cut off by `kill -9` of the server (issue 4, item 2): no ffmpeg is left running,
 * the job runs again from the start after the restart, its partial outputs are gone, and the
 * video still reaches 1 with exactly one status callback. The server runs as a child process
 * (`npm start`'s entry), the way it is deployed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeClip } from '../helpers/clips.js';
import { holdWhenSeen } from '../helpers/procs.js';
import { settledDeliveries, startCallbackReceiver } from '../helpers/callbackReceiver.js';
import { AdminClient, SpecClient } from '../helpers/client.js';
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

/** PIDs listed in the server's record of live ffmpeg processes. */
function recordedPids(dataDir: string): number[] {
  try {
    return fs
      .readFileSync(path.join(dataDir, 'ffmpeg.pids'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { pid: number }).pid);
  } catch {
    return [];
  }
}

/** A running process (a zombie waiting to be reaped by init has stopped running: it does not count). */
function isRunning(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

function cmdline(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

describe.runIf(process.platform === 'linux')('a server killed with SIGKILL during a transcode', () => {
  it('leaves no ffmpeg behind, and after a restart the video still reaches 1 with one callback', async () => {
    const dataDir = tempDataDir();
    const args = ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--admin-token', ADMIN_TOKEN];
    // 12 s: the encode is held (SIGSTOP) as soon as it is seen, so its length need not outlast the kill.
    const clip = await makeClip({ seconds: 12, width: 640, height: 360 });
    const receiver = await startReceiver();

    const first = await startServerProcess(args);
    const admin = new AdminClient(first.baseUrl, ADMIN_TOKEN);
    const { appId, appSecret } = await admin.createApp('crash app', receiver.url, { wholeLadderFirst: true });
    const client = new SpecClient(first.baseUrl, appId, appSecret);
    const videoId = await client.register();

    // The file comes the way an application's server sends it: POST /Api/Video/Upload.
    const form = new FormData();
    for (const [k, v] of Object.entries({ ...client.auth(), VideoId: videoId })) form.append(k, v);
    form.append('file', new Blob([fs.readFileSync(clip)]), 'clip.mp4');
    const upload = await fetch(`${first.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form });
    expect((await upload.json()).AuthMsg.ResultCode).toBe('1');

    const status = async (c: SpecClient) => (await c.get('/Api/Video/Get', { Id: videoId })).body.VideoModel.Status as number;
    // Transcoding, with libx264 at work (not the probe or the cover).
    const ffmpegPid = await holdWhenSeen('ffmpeg to be encoding', async () => {
      if ((await status(client)) !== 6) return undefined;
      return recordedPids(dataDir).find((p) => isRunning(p) && cmdline(p).includes('libx264'));
    }, { timeoutMs: 30_000, pollMs: 10 });

    expect(await first.stop('SIGKILL')).toBeNull();
    // The kernel kills ffmpeg with its parent (setpriv --pdeathsig); give it a moment to go.
    await waitUntil('ffmpeg to end', () => (recordedPids(dataDir).some(isRunning) ? undefined : true), { timeoutMs: 5_000 });
    expect(isRunning(ffmpegPid)).toBe(false);

    const second = await startServerProcess(args);
    cleanups.push(async () => void (await second.stop()));
    const client2 = new SpecClient(second.baseUrl, appId, appSecret);
    await waitUntil('the video to reach 1 or 7', async () => ([1, 7].includes(await status(client2)) ? true : undefined), { timeoutMs: 60_000, pollMs: 100 });
    const body = (await client2.get('/Api/Video/Get', { Id: videoId })).body;
    expect(body.VideoModel.Status).toBe(1);
    expect(body.VideoModel.Duration).toBe(12);
    expect(body.VideoPlayFile.map((f: { BitrateLabel: string }) => f.BitrateLabel)).toEqual(['360p']);

    // Ran again from the start: 6 once, no failure; nothing half-written left anywhere.
    const admin2 = new AdminClient(second.baseUrl, ADMIN_TOKEN);
    // The job's end is written just after the video's move to 1: waited for, not raced.
    const video = await waitUntil('the transcode job to end', async () => {
      const v = (await admin2.request('GET', `/videos/${videoId}`)).body;
      return v.jobs.some((j: { type: string; state: string }) => j.type === 'transcode' && j.state === 'running') ? undefined : v;
    }, { timeoutMs: 10_000, pollMs: 50 });
    expect(video.statusHistory.map((c: { to: number }) => c.to)).toEqual([8, 5, 6, 1]);
    expect(video.jobs.filter((j: { type: string }) => j.type === 'transcode')).toMatchObject([{ state: 'succeeded', attempts: 1 }]);
    const media = path.join(dataDir, 'media');
    const leftovers = (fs.readdirSync(media, { recursive: true }) as string[]).filter((f) => path.basename(f).includes('.partial-'));
    expect(leftovers).toEqual([]);
    // The cut-off attempt's working folder went at the restart, the new attempt's once it ended.
    // (The seek previews' job, after the first rendition, has a kind of its own: left aside here.)
    expect((fs.readdirSync(path.join(dataDir, 'scratch'), { recursive: true }) as string[]).filter((f) => !f.startsWith('storyboard'))).toEqual(['transcode']);
    const playFiles = (fs.readdirSync(path.join(media, 'play'), { recursive: true }) as string[]).filter((f) => f.includes(videoId));
    expect(playFiles.map((f) => f.split(path.sep).join('/'))).toEqual(body.VideoPlayFile.map((f: { VideoURL: string }) => f.VideoURL));
    const played = await fetch(`${body.MediaSever.PlayURL}${body.VideoPlayFile[0].VideoURL}`, { headers: { Range: 'bytes=0-7' } });
    expect(played.status).toBe(206);

    // One final callback, status 1.
    await waitUntil('the callback', () => (receiver.received.length > 0 ? true : undefined), { timeoutMs: 30_000 });
    // Every delivery final, its attempts recorded: a second callback, if one were sent, has arrived.
    expect((await settledDeliveries(admin2, client2.appId)).map((d) => [d.videoId, d.videoStatus, d.state])).toEqual([[videoId, 1, 'delivered']]);
    expect(receiver.received.map((f) => [f.VideoId, f.VideoStatus])).toEqual([[videoId, '1']]);
  }, 150_000 /* a clip encoded twice, on two cores other tests share */);
});
