/**
 * The harness of the playable-first crash tests (processing/playable-crash*.test.ts): a server
 * started as `npm start`'s entry in a process group of its own on a data folder with a three-rung
 * ladder, its whole group killed with SIGKILL, the ffmpeg steps told apart from the outside, and
 * what every case ends with on the restarted server (expectWholeLadder).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { parseMasterPlaylist } from '../../server/media/hls.js';
import { settledDeliveries, startCallbackReceiver, type CallbackReceiver } from './callbackReceiver.js';
import { AdminClient, SpecClient } from './client.js';
import { multipartUpload } from './ingest.js';
import { probe } from './probe.js';
import { processes, runs, type Proc } from './procs.js';
import { waitUntil } from './wait.js';
import { ADMIN_TOKEN, signalGroup, startNodeGroup, tempDataDir, type GroupNode } from './server.js';

/** Three rungs: a 640x360 source is copied as 360p and the ladder encodes 240p and 180p. */
const RUNGS = [
  { label: '360p', shortSide: 360, videoBitrateKbps: 800 },
  { label: '240p', shortSide: 240, videoBitrateKbps: 400 },
  { label: '180p', shortSide: 180, videoBitrateKbps: 300 },
];

/** What a case leaves to undo (servers, receivers, folders, watchers), undone by {@link runCleanups}. */
export const cleanups: Array<() => Promise<void> | void> = [];

/** Undoes what the case left, last first: each file's afterEach. */
export async function runCleanups(): Promise<void> {
  while (cleanups.length) await cleanups.pop()!();
}

/** A data folder with the three-rung ladder saved, one transcode at a time; removed after the case. */
export function dataDirWithLadder(): string {
  const dataDir = tempDataDir('vop-playable-crash-');
  fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ ladderRungs: RUNGS, transcodeConcurrency: 1 }));
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  return dataDir;
}

/** The server in a process group of its own; killed (the whole group) after the case if still there. */
export async function startVop(dataDir: string): Promise<GroupNode> {
  const node = await startNodeGroup('vop', ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], { VOP_ADMIN_TOKEN: ADMIN_TOKEN });
  cleanups.push(async () => {
    signalGroup(node.pid, 'SIGKILL');
    await node.exited;
  });
  return node;
}

/** `kill -9` of the node's whole process group; resolves once the server is gone. */
export async function killGroup(node: GroupNode): Promise<void> {
  signalGroup(node.pid, 'SIGKILL');
  expect(await node.exited).toBeNull();
  // Nothing of the group runs on (ffmpeg was in it).
  await waitUntil('the group to be gone', () => (groupProcesses(node.pid).length === 0 ? true : undefined), { timeoutMs: 5_000, pollMs: 20 });
}

/** The live processes of a process group, with their niceness and command line. */
export const groupProcesses = (pgid: number): Proc[] => processes((p) => p.pgid === pgid);

export const ffmpegs = (node: GroupNode) => groupProcesses(node.pid).filter((p) => runs(p, 'ffmpeg'));
export const isLadderEncode = (p: Proc) => p.cmdline.includes('libx264') && p.nice === 10;
export const isFirstEncode = (p: Proc) => p.cmdline.includes('libx264') && p.nice === 0;
export const isCopy = (p: Proc) => p.cmdline.includes('-c:v copy');

/** Waits until `p` of the group is stopped (SIGSTOP): held, not ended, when the kill comes. */
export async function waitHeld(node: GroupNode, p: Proc): Promise<void> {
  await waitUntil('the ffmpeg to be held', () => (groupProcesses(node.pid).find((q) => q.pid === p.pid)?.state === 'T' ? true : undefined), { timeoutMs: 5_000, pollMs: 10 });
}

export interface Upload {
  videoId: string;
  app: { appId: string; appSecret: string };
  receiver: CallbackReceiver;
}

/** Creates an application with a callback receiver and uploads `clip` through POST /Api/Video/Upload. */
export async function upload(node: GroupNode, clip: string): Promise<Upload> {
  const receiver = await startCallbackReceiver();
  cleanups.push(receiver.close);
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

export async function detail(node: GroupNode, u: Upload) {
  const body = (await new SpecClient(node.baseUrl, u.app.appId, u.app.appSecret).get('/Api/Video/Get', { Id: u.videoId })).body;
  return body as { VideoModel: { Status: number; Duration: number }; VideoPlayFile: PlayFile[]; HlsURL: string; MediaSever: { PlayURL: string } };
}

/**
 * The server started again on `dataDir`: the video is 1 at once, with its first rendition alone
 * listed (the ladder had not landed when the server was killed).
 */
export async function restartedWithFirstRendition(dataDir: string, u: Upload): Promise<GroupNode> {
  const second = await startVop(dataDir);
  const restarted = await detail(second, u);
  expect(restarted.VideoModel.Status).toBe(1);
  expect(restarted.VideoPlayFile.map((f) => f.BitrateLabel)).toEqual(['360p']);
  return second;
}

export async function adminVideo(node: GroupNode, videoId: string) {
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
export async function recoveries(node: GroupNode): Promise<Record<string, number>> {
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
export async function expectWholeLadder(node: GroupNode, dataDir: string, u: Upload, o: { labels: string[]; seconds: number; oneDelivery: boolean }) {
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
  const ones = u.receiver.webhookIds.filter((_, i) => u.receiver.received[i]!.VideoId === u.videoId && u.receiver.received[i]!.VideoStatus === '1');
  expect(u.receiver.received.every((c) => c.VideoId === u.videoId && c.VideoStatus === '1')).toBe(true);
  expect(new Set(ones).size).toBe(1);
  if (o.oneDelivery) expect(ones).toHaveLength(1);
}

export async function status(node: GroupNode, u: Upload): Promise<number> {
  return (await detail(node, u)).VideoModel.Status;
}
