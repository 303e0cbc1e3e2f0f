/**
 * Playable with the first rendition, the rest of the ladder after (processing/ladderPlan.ts), cut
 * off by `kill -9` at each step: the server runs as `npm start`'s entry in a process group of its
 * own, as a supervisor starts it, and the whole group (ffmpeg included) is killed with SIGKILL,
 * then started again at once on the same data folder. Whatever the step, the video stays (or
 * becomes) playable, its ladder completes, and nothing half-written is listed or left behind:
 *
 * - during the ladder's rung encode (the ffmpeg at niceness 10);
 * - between the first rendition and the ladder (at the first sight of status 1);
 * - during the first rendition: the stream copy of an H.264 source (its ffmpeg caught with
 *   SIGSTOP, it is over in a blink), and the lowest-rung encode of a 4:4:4 source.
 *
 * The step is told from the outside: the video's status, and which ffmpeg runs in the group
 * (`-c:v copy` for the copy, libx264 at niceness 10 for the ladder, at 0 for a first rendition).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMasterPlaylist } from '../../server/media/hls.js';
import { openSqlJsStores } from '../../server/storage/sqljs/openSqlJsStores.js';
import { settledDeliveries } from '../helpers/callbackReceiver.js';
import { AdminClient, SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { multipartUpload } from '../helpers/ingest.js';
import { probe } from '../helpers/probe.js';
import { processes, runs, scratchOutputs, type Proc } from '../helpers/procs.js';
import { notYet, waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, signalGroup, startNodeGroup, tempDataDir, type GroupNode } from '../helpers/server.js';

/** Three rungs: a 640x360 source is copied as 360p and the ladder encodes 240p and 180p. */
const RUNGS = [
  { label: '360p', shortSide: 360, videoBitrateKbps: 800 },
  { label: '240p', shortSide: 240, videoBitrateKbps: 400 },
  { label: '180p', shortSide: 180, videoBitrateKbps: 300 },
];

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A status callback as received: the fields and the header a receiver de-duplicates on. */
interface Callback {
  videoId: string;
  status: string;
  webhookId: string;
}

async function startReceiver(): Promise<{ url: string; received: Callback[] }> {
  const received: Callback[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d));
    req.on('end', () => {
      const f = new URLSearchParams(raw);
      received.push({ videoId: f.get('VideoId') ?? '', status: f.get('VideoStatus') ?? '', webhookId: String(req.headers['webhook-id'] ?? '') });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`, received };
}

/** A data folder with the three-rung ladder saved, one transcode at a time; removed after the case. */
function dataDirWithLadder(): string {
  const dataDir = tempDataDir('vop-playable-crash-');
  fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ ladderRungs: RUNGS, transcodeConcurrency: 1 }));
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  return dataDir;
}

/** The server in a process group of its own; killed (the whole group) after the case if still there. */
async function startVop(dataDir: string): Promise<GroupNode> {
  const node = await startNodeGroup('vop', ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], { VOP_ADMIN_TOKEN: ADMIN_TOKEN });
  cleanups.push(async () => {
    signalGroup(node.pid, 'SIGKILL');
    await node.exited;
  });
  return node;
}

/** `kill -9` of the node's whole process group; resolves once the server is gone. */
async function killGroup(node: GroupNode): Promise<void> {
  signalGroup(node.pid, 'SIGKILL');
  expect(await node.exited).toBeNull();
  // Nothing of the group runs on (ffmpeg was in it).
  await waitUntil('the group to be gone', () => (groupProcesses(node.pid).length === 0 ? true : undefined), { timeoutMs: 5_000, pollMs: 20 });
}

/** The live processes of a process group, with their niceness and command line. */
const groupProcesses = (pgid: number): Proc[] => processes((p) => p.pgid === pgid);

const ffmpegs = (node: GroupNode) => groupProcesses(node.pid).filter((p) => runs(p, 'ffmpeg'));
const isLadderEncode = (p: Proc) => p.cmdline.includes('libx264') && p.nice === 10;
const isFirstEncode = (p: Proc) => p.cmdline.includes('libx264') && p.nice === 0;
const isCopy = (p: Proc) => p.cmdline.includes('-c:v copy');

interface Upload {
  videoId: string;
  app: { appId: string; appSecret: string };
  receiver: Awaited<ReturnType<typeof startReceiver>>;
}

/** Creates an application with a callback receiver and uploads `clip` through POST /Api/Video/Upload. */
async function upload(node: GroupNode, clip: string): Promise<Upload> {
  const receiver = await startReceiver();
  const app = await new AdminClient(node.baseUrl, ADMIN_TOKEN).createApp('crash app', receiver.url);
  const client = new SpecClient(node.baseUrl, app.appId, app.appSecret);
  const videoId = await client.register();
  expect(await multipartUpload(client, videoId, fs.readFileSync(clip))).toBe('1');
  return { videoId, app, receiver };
}

interface PlayFile {
  BitrateLabel: string;
  VideoURL: string;
}

async function detail(node: GroupNode, u: Upload) {
  const body = (await new SpecClient(node.baseUrl, u.app.appId, u.app.appSecret).get('/Api/Video/Get', { Id: u.videoId })).body;
  return body as { VideoModel: { Status: number; Duration: number }; VideoPlayFile: PlayFile[]; HlsURL: string; MediaSever: { PlayURL: string } };
}

async function adminVideo(node: GroupNode, videoId: string) {
  return (await new AdminClient(node.baseUrl, ADMIN_TOKEN).request('GET', `/videos/${videoId}`)).body as {
    video: { status: number; ladder?: string };
    statusHistory: Array<{ to: number }>;
    renditions: Array<{ label: string; width: number; height: number; file: string }>;
    jobs: Array<{ type: string; state: string; attempts: number; createdAt: number }>;
  };
}

/**
 * What the server's /metrics counts of `vop_job_recoveries_total`: `<type> <outcome>` → count,
 * each a job cut off whose type's recover ran (and removed what its attempt left, or failed).
 */
async function recoveries(node: GroupNode): Promise<Record<string, number>> {
  const text = await (await fetch(`${node.baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  const out: Record<string, number> = {};
  for (const [, labels, value] of text.matchAll(/^vop_job_recoveries_total\{(.*)\} (\S+)$/gm)) {
    const l = Object.fromEntries([...labels!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    out[`${l.type} ${l.outcome}`] = Number(value);
  }
  return out;
}

/** Waits for the ladder to have landed (or given up) and its job to have ended; returns the admin view. */
async function ladderDone(node: GroupNode, videoId: string, timeoutMs = 150_000) {
  try {
    return await waitUntil('the ladder to complete', async () => {
      const v = await adminVideo(node, videoId);
      if ([7].includes(v.video.status)) return v;
      const live = v.jobs.some((j) => ['queued', 'running'].includes(j.state));
      return v.video.status === 1 && v.video.ladder !== 'pending' && !live ? v : undefined;
    }, { timeoutMs: timeoutMs, pollMs: 100 });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- server output:\n${node.output().slice(-4000)}`);
  }
}

/**
 * What every case ends with, on the restarted server: the video is 1 with every rung listed and
 * its ladder done, once; each listed file is a whole video; the HLS master's variants all play;
 * nothing unlisted, partial or of an attempt left in the media or scratch folders; one status-1
 * callback (by its id: a delivery cut off by the kill may be sent again, the same message).
 */
async function expectWholeLadder(node: GroupNode, dataDir: string, u: Upload, o: { labels: string[]; seconds: number; oneDelivery: boolean }) {
  const v = await ladderDone(node, u.videoId);
  expect(v.video.status, v.video.status === 7 ? JSON.stringify(v) : '').toBe(1);
  expect(v.video.ladder).toBe('');
  // Playable since its first rendition: one move to 1, never through 7.
  expect(v.statusHistory.map((c) => c.to)).toEqual([8, 5, 6, 1]);
  expect(v.jobs.filter((j) => j.type === 'transcode')).toMatchObject([{ state: 'succeeded' }]);
  expect(v.jobs.filter((j) => j.type === 'ladder')).toMatchObject([{ state: 'succeeded' }]);

  const body = await detail(node, u);
  expect(body.VideoModel.Status).toBe(1);
  expect(body.VideoModel.Duration).toBe(o.seconds);
  expect(body.VideoPlayFile.map((f) => f.BitrateLabel)).toEqual(o.labels);
  const media = path.join(dataDir, 'media');
  for (const f of body.VideoPlayFile) {
    const row = v.renditions.find((r) => r.file === f.VideoURL)!;
    expect(row, f.VideoURL).toBeDefined();
    const info = await probe(path.join(media, 'play', ...f.VideoURL.split('/')));
    expect(info.isVideo, `${f.VideoURL}: ${JSON.stringify(info)}`).toBe(true);
    if (!info.isVideo) continue;
    expect(Math.abs(info.durationSeconds - o.seconds), `${f.VideoURL} lasts ${info.durationSeconds} s`).toBeLessThan(0.5);
    expect([info.width, info.height]).toEqual([row.width, row.height]);
    expect(Math.min(info.width, info.height)).toBeLessThanOrEqual(Number.parseInt(f.BitrateLabel, 10) + 1);
    // Served whole, over HTTP.
    const res = await fetch(`${body.MediaSever.PlayURL}${f.VideoURL}`);
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(fs.statSync(path.join(media, 'play', ...f.VideoURL.split('/'))).size);
  }

  // The master playlist lists a variant per rung, and each variant's playlist and segments resolve.
  expect(body.HlsURL).toMatch(/\/master\.m3u8$/);
  const master = await fetch(body.HlsURL);
  expect(master.status).toBe(200);
  const variants = parseMasterPlaylist(await master.text());
  expect(variants.map((x) => `${x.width}x${x.height}`).sort()).toEqual(v.renditions.map((r) => `${r.width}x${r.height}`).sort());
  for (const variant of variants) {
    const url = new URL(variant.uri, body.HlsURL);
    const res = await fetch(url);
    expect(res.status, url.href).toBe(200);
    const playlist = await res.text();
    expect(playlist).toContain('#EXT-X-ENDLIST');
    const segments = playlist.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
    expect(segments.length).toBeGreaterThan(0);
    let total = 0;
    for (const m of playlist.matchAll(/#EXTINF:([\d.]+)/g)) total += Number(m[1]);
    expect(Math.abs(total - o.seconds), `${variant.uri} lists ${total} s`).toBeLessThan(1);
    for (const s of segments) {
      const seg = await fetch(new URL(s, url));
      expect(seg.status, s).toBe(200);
      expect((await seg.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }
  }

  // Nothing unlisted: the play folder holds the listed files of the video (no hidden partial put),
  // its HLS folder the master and one folder per variant, and the scratch folder nothing.
  const all = (dir: string) => (fs.readdirSync(dir, { recursive: true }) as string[]).map((f) => f.split(path.sep).join('/'));
  const played = all(path.join(media, 'play')).filter((f) => f.includes(u.videoId));
  expect(played.sort()).toEqual(body.VideoPlayFile.map((f) => f.VideoURL).sort());
  const hlsTop = fs.readdirSync(path.join(media, 'hls', u.videoId)).sort();
  expect(hlsTop).toEqual(['master.m3u8', ...variants.map((x) => x.uri.split('/')[0]!)].sort());
  expect(all(media).filter((f) => path.basename(f).startsWith('.') || f.includes('.partial-'))).toEqual([]);
  // The scratch folder: its kinds' folders (the transcodes', the seek previews'), each empty.
  const scratch = all(path.join(dataDir, 'scratch'));
  expect(scratch.filter((f) => f.includes('/'))).toEqual([]);
  expect(scratch.filter((f) => !['transcode', 'storyboard'].includes(f))).toEqual([]);

  // One status callback, status 1 (the ladder sends none).
  await waitUntil('the status-1 callback', () => (u.receiver.received.length > 0 ? true : undefined), { timeoutMs: 30_000, pollMs: 50 });
  // Every delivery final, its attempts recorded: a second callback, if one were sent, has arrived.
  const deliveries = await settledDeliveries(new AdminClient(node.baseUrl, ADMIN_TOKEN), u.app.appId);
  expect(deliveries.map((d) => [d.videoId, d.videoStatus, d.state])).toEqual([[u.videoId, 1, 'delivered']]);
  const ones = u.receiver.received.filter((c) => c.videoId === u.videoId && c.status === '1');
  expect(u.receiver.received.every((c) => c.videoId === u.videoId && c.status === '1')).toBe(true);
  expect(new Set(ones.map((c) => c.webhookId)).size).toBe(1);
  if (o.oneDelivery) expect(ones).toHaveLength(1);
}

async function status(node: GroupNode, u: Upload): Promise<number> {
  return (await detail(node, u)).VideoModel.Status;
}

describe.runIf(process.platform === 'linux')('kill -9 of the server at each step of a video made playable first, its ladder after', () => {
  it('during the ladder\'s rung encode: the video stays playable, and after a restart the ladder completes', async () => {
    const dataDir = dataDirWithLadder();
    const clip = await makeClip({ seconds: 40, width: 640, height: 360 });
    const first = await startVop(dataDir);
    const u = await upload(first, clip);

    // Playable with the copy, then the ladder's ffmpeg at work on 240p and 180p.
    const ladder = await waitUntil('the ladder encode', () => ffmpegs(first).find(isLadderEncode), { timeoutMs: 90_000, pollMs: 20 });
    expect(ladder.cmdline).not.toContain('-c:v copy');
    // Some way into it: outputs half-written in scratch.
    await waitUntil('outputs half-written in scratch', () => scratchOutputs(ladder).some((f) => f.size > 0) || notYet(scratchOutputs(ladder)), { timeoutMs: 60_000 });
    expect(ffmpegs(first).find((p) => p.pid === ladder.pid)).toBeDefined();
    const before = await detail(first, u);
    expect(before.VideoModel.Status).toBe(1);
    expect(before.VideoPlayFile.map((f) => f.BitrateLabel)).toEqual(['360p']);
    expect((await adminVideo(first, u.videoId)).video.ladder).toBe('pending');
    await killGroup(first);

    const second = await startVop(dataDir);
    // The ladder's cut-off attempt was recovered before it ran again (the server answers once its
    // jobs have started, the cut-off ones recovered first), and its recover did not fail.
    const recovered = await recoveries(second);
    expect(recovered['ladder recovered']).toBe(1);
    expect(Object.keys(recovered).filter((k) => k.endsWith(' failed'))).toEqual([]);
    // Served all along: playable at once after the restart, before the ladder is done.
    const restarted = await detail(second, u);
    expect(restarted.VideoModel.Status).toBe(1);
    expect(restarted.VideoPlayFile.map((f) => f.BitrateLabel)).toEqual(['360p']);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 40, oneDelivery: true });
  }, 240_000);

  it('while the ladder stores its outputs (just after its master playlist): after a restart the master lists each rung once', async () => {
    const dataDir = dataDirWithLadder();
    const clip = await makeClip({ seconds: 30, width: 640, height: 360 });
    const first = await startVop(dataDir);
    const u = await upload(first, clip);
    await waitUntil('the ladder encode', () => ffmpegs(first).find(isLadderEncode), { timeoutMs: 90_000, pollMs: 20 });

    // The ladder stores its HLS variants, then the master playlist that lists them with the first
    // rendition's, then its MP4s, then the rows: killed as the master lands (inotify), with the
    // MP4s and rows still to come.
    const hlsDir = path.join(dataDir, 'media', 'hls', u.videoId);
    const masterBefore = fs.readFileSync(path.join(hlsDir, 'master.m3u8'), 'utf8');
    expect(parseMasterPlaylist(masterBefore)).toHaveLength(1);
    const landed = new Promise<void>((resolve) => {
      const watcher = fs.watch(hlsDir, (_event, name) => {
        if (name !== 'master.m3u8') return;
        signalGroup(first.pid, 'SIGKILL');
        watcher.close();
        resolve();
      });
      cleanups.push(() => watcher.close());
    });
    await Promise.race([landed, new Promise((_, reject) => setTimeout(() => reject(new Error(`the ladder stored no master playlist in time:\n${first.output()}`)), 90_000))]);
    await killGroup(first);
    // The master on disk lists the ladder's variants too.
    expect(parseMasterPlaylist(fs.readFileSync(path.join(hlsDir, 'master.m3u8'), 'utf8'))).toHaveLength(3);

    const second = await startVop(dataDir);
    const restarted = await detail(second, u);
    expect(restarted.VideoModel.Status).toBe(1);
    // The kill came before the rows named the ladder's files (the window this case is about).
    expect(restarted.VideoPlayFile.map((f) => f.BitrateLabel)).toEqual(['360p']);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 30, oneDelivery: true });
  }, 240_000);

  it('between the first rendition and the ladder (at the first sight of status 1): after a restart the ladder completes', async () => {
    const dataDir = dataDirWithLadder();
    const clip = await makeClip({ seconds: 30, width: 640, height: 360 });
    const first = await startVop(dataDir);
    const u = await upload(first, clip);

    await waitUntil('status 1', async () => ((await status(first, u)) === 1 ? true : undefined), { timeoutMs: 90_000, pollMs: 5 });
    await killGroup(first);

    const second = await startVop(dataDir);
    const restarted = await detail(second, u);
    expect(restarted.VideoModel.Status).toBe(1);
    // The ladder had not landed: the kill came with the first rendition alone listed.
    expect(restarted.VideoPlayFile.map((f) => f.BitrateLabel)).toEqual(['360p']);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 30, oneDelivery: false });
  }, 240_000);

  it('between the move to 1 and the queueing of the ladder (no ladder job recorded): start-up queues it, and it completes', async () => {
    const dataDir = dataDirWithLadder();
    const clip = await makeClip({ seconds: 20, width: 640, height: 360 });
    const first = await startVop(dataDir);
    const u = await upload(first, clip);
    await waitUntil('status 1', async () => ((await status(first, u)) === 1 ? true : undefined), { timeoutMs: 90_000, pollMs: 5 });
    await killGroup(first);

    // The kill landed a moment later than the window this case is about (the ladder's job is
    // queued a few milliseconds after the move, in the same process): what a kill inside it
    // leaves is made so, the job's row removed from the stopped server's database.
    const stores = await openSqlJsStores({ dir: dataDir, log: () => undefined });
    expect((await stores.videos.get(u.videoId))).toMatchObject({ status: 1, ladder: 'pending' });
    await stores.db.write([[`DELETE FROM jobs WHERE video_id = ? AND type = 'ladder'`, [u.videoId]]]);
    expect(await stores.jobs.list({ types: ['ladder'], videoId: u.videoId, limit: 10 })).toEqual([]);
    await stores.close();

    const restartedAt = Date.now();
    const second = await startVop(dataDir);
    // Start-up queued the ladder (the server answers once it has looked): a job of the new server's.
    const queued = (await adminVideo(second, u.videoId)).jobs.filter((j) => j.type === 'ladder');
    expect(queued).toHaveLength(1);
    expect(queued[0]!.createdAt).toBeGreaterThanOrEqual(restartedAt);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 20, oneDelivery: false });
  }, 240_000);

  it('during the stream copy of an H.264 source (its ffmpeg held with SIGSTOP): after a restart it is 1 and the ladder completes', async () => {
    const dataDir = dataDirWithLadder();
    const clip = await makeClip({ seconds: 30, width: 640, height: 360 });
    const first = await startVop(dataDir);
    const u = await upload(first, clip);

    // The copy is over in a fraction of a second: caught as soon as it is spawned, and held.
    const copy = await waitUntil('the copy', () => {
      const p = ffmpegs(first).find(isCopy);
      if (p) process.kill(p.pid, 'SIGSTOP');
      return p;
    }, { timeoutMs: 60_000, pollMs: 1 });
    await waitUntil('the copy to be stopped', () => (groupProcesses(first.pid).find((p) => p.pid === copy.pid)?.state === 'T' ? true : undefined), { timeoutMs: 5_000, pollMs: 10 });
    expect(await status(first, u)).toBe(6);
    expect((await detail(first, u)).VideoPlayFile).toEqual([]);
    await killGroup(first);

    const second = await startVop(dataDir);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 30, oneDelivery: true });
    const v = await adminVideo(second, u.videoId);
    // Cut off once, run again from the start.
    expect(v.statusHistory.map((c) => c.to)).toEqual([8, 5, 6, 1]);
  }, 240_000);

  it('during the lowest-rung encode of a 4:4:4 source: after a restart it is 1 and the ladder completes', async () => {
    const dataDir = dataDirWithLadder();
    // Odd sizes are encoded 4:4:4: not copied, 180p is encoded first and the ladder makes 360p and 240p.
    const clip = await makeClip({ seconds: 30, width: 641, height: 361 });
    const first = await startVop(dataDir);
    const u = await upload(first, clip);

    const encode = await waitUntil('the first-rendition encode', () => ffmpegs(first).find(isFirstEncode), { timeoutMs: 60_000, pollMs: 10 });
    expect(encode.cmdline).not.toContain('-c:v copy');
    // Some way into it: outputs half-written in scratch.
    await waitUntil('outputs half-written in scratch', () => scratchOutputs(encode).some((f) => f.size > 0) || notYet(scratchOutputs(encode)), { timeoutMs: 60_000 });
    expect(await status(first, u)).toBe(6);
    expect(ffmpegs(first).some(isLadderEncode)).toBe(false);
    await killGroup(first);

    const second = await startVop(dataDir);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 30, oneDelivery: true });
  }, 240_000);
});
