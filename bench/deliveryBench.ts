/**
 * `npm run bench -- delivery`, in two parts, through vop and through nginx in the same run:
 *
 * 1. Throughput: a large rendition (1 GiB by default) downloaded in full by a few clients at once
 *    (`/media/play/...`); the figure is MB/s and vop's share of nginx's, with CPU per GB. The
 *    clients are curl processes writing to /dev/null, so that the load generator is not what
 *    limits either server.
 * 2. Requests (issue 14): what a player asks for, one request at a time — 1 and 64 KiB Ranges,
 *    HEAD, a cover at `?t=3`, an HLS playlist and a segment, and 200 viewers each walking an HLS
 *    rendition — through vop, nginx and a bare Node server answering the same bytes
 *    (bench/deliveryRequests.ts).
 *
 * All servers are single processes on loopback (nginx with `master_process off`: one process
 * serving, like vop). Each server's CPU time is printed too: on a machine shared with other work,
 * wall-clock rates move with the neighbours, CPU per byte or per request much less. nginx comes
 * from the distribution: if it is missing, the bench installs it when it runs as root on Debian
 * (`apt-get install -y nginx`, with the service kept from starting) or says what to run.
 * The same cases through an API node of a cluster (issue 14, item 4: media in S3, streamed by the
 * node through stat and openRange) are not measured here yet; bench/clusterBench.ts starts such a
 * node and is where they would go.
 */
import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { createServer } from '../server/app.js';
import { defaultFfmpegBinaries } from '../server/media/ffmpegBinaries.js';
import { COVER_FILE, HLS_MASTER, makeDateFolder, playFileName } from '../server/processing/mediaNames.js';
import { findExecutable } from '../server/media/findExecutable.js';
import { mediaKey, type MediaStore } from '../server/storage/media/mediaStore.js';
import { mirrorFromVop, runRequestCases, type RequestCase, type Served } from './deliveryRequests.js';
import { VOP_SERVER, cpuTimeMs, loadAverage, progress, ServerFleet, verdict, type BenchSection, type Target } from './lib.js';
import { findOrInstallNginx, nginxVersion, SBIN, startNginx, type RunningNginx } from './nginx.js';

/** Settings of the delivery benchmark; the environment may change them. */
export interface DeliveryBenchSettings {
  /** Size of the served file, MiB. */
  fileMb: number;
  /** Downloads running at once. */
  clients: number;
  /** Full downloads per client, per server. */
  rounds: number;
  /** Seconds of load per request case and server. */
  requestSeconds: number;
}

const DEFAULT_SETTINGS: DeliveryBenchSettings = { fileMb: 1024, clients: 4, rounds: 2, requestSeconds: 5 };

/** The small rendition the Range cases read (the size of issue 14's measurements), and the HLS rendition's shape. */
const SMALL_RENDITION_BYTES = 2_400_000;
const HLS_SEGMENTS = 12;
/** 2 s at about 750 kbit/s: a 360p segment. */
const HLS_SEGMENT_BYTES = 188 * 1000;

/** Issue 4's target: vop serves at least 70% of nginx's throughput. */
const MIN_RATIO = 0.7;
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

export const deliverySection: BenchSection = {
  name: 'delivery',
  about:
    'a 1 GiB rendition downloaded by parallel clients (MB/s), then Ranges, HEAD, covers, HLS and 200 viewers (req/s, p99, CPU per request), vop vs nginx vs bare Node ' +
    '(VOP_BENCH_DELIVERY_MB, VOP_BENCH_DELIVERY_CLIENTS, VOP_BENCH_DELIVERY_SECONDS)',
  run: () =>
    deliveryBench({
      ...DEFAULT_SETTINGS,
      ...(process.env.VOP_BENCH_DELIVERY_MB ? { fileMb: Number(process.env.VOP_BENCH_DELIVERY_MB) } : {}),
      ...(process.env.VOP_BENCH_DELIVERY_CLIENTS ? { clients: Number(process.env.VOP_BENCH_DELIVERY_CLIENTS) } : {}),
      ...(process.env.VOP_BENCH_DELIVERY_SECONDS ? { requestSeconds: Number(process.env.VOP_BENCH_DELIVERY_SECONDS) } : {}),
    }),
};

export async function deliveryBench(s: DeliveryBenchSettings): Promise<Target[]> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-bench-delivery-'));
  const dataDir = path.join(work, 'data');
  const fleet = new ServerFleet();
  let nginx: RunningNginx | undefined;
  try {
    const curl = findExecutable('curl', undefined, SBIN);
    if (!curl) throw new Error('the delivery bench downloads with curl: install it (apt-get install -y curl) and run again');
    console.log(
      `delivery: a ${s.fileMb} MiB file, ${s.clients} clients × ${s.rounds} full downloads per server, then request cases of ${s.requestSeconds} s; ` +
        `${os.cpus().length} cores, load average ${loadAverage().toFixed(1)}`,
    );

    progress(`seeding a playable video: a ${s.fileMb} MiB rendition, a small one, a cover and an HLS rendition`);
    const seeded = await seedVideo(dataDir, s.fileMb);
    const bytes = fs.statSync(seeded.bigFile).size;

    const vop = await fleet.start({
      name: 'vop',
      script: VOP_SERVER,
      args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--admin-token', ADMIN_TOKEN],
      listening: /vop listening on (http:\/\/\S+)/,
    });
    const vopRun = await measure('vop', curl, `${vop.baseUrl}/media/play/${seeded.bigUrl}`, bytes, s, vop.pid);

    const targets: Target[] = [];
    const mbps = (bps: number) => `${(bps / 1e6).toFixed(0)} MB/s`;
    const cpu = (r: Measured) => `${r.cpuMsPerGb.toFixed(0)} ms CPU per GB`;
    const nginxPath = findOrInstallNginx();
    // What nginx and bare Node serve for the request cases: vop's own answers, byte for byte.
    const docroot = path.join(work, 'docroot');
    await mirrorFromVop(vop.baseUrl, docroot, seeded.mirrored);
    if (nginxPath) {
      nginx = await startNginx(nginxPath, work, { '/media/play/': path.join(dataDir, 'media', 'play'), '/same/': docroot });
      const nginxRun = await measure('nginx', curl, `${nginx.baseUrl}/media/play/${seeded.bigUrl}`, bytes, s, nginx.pid);
      const ratio = vopRun.bytesPerSecond / nginxRun.bytesPerSecond;
      const met = ratio >= MIN_RATIO;
      console.log(`  whole ${s.fileMb} MiB downloads:`);
      console.log(`    vop:   ${mbps(vopRun.bytesPerSecond)}, ${cpu(vopRun)}`);
      console.log(`    nginx: ${mbps(nginxRun.bytesPerSecond)}, ${cpu(nginxRun)}  (sendfile on, one process; ${nginxVersion(nginxPath)})`);
      console.log(`    vop / nginx: ${ratio.toFixed(3)}  (target ≥ ${MIN_RATIO.toFixed(2)})  ${verdict(met)}; CPU per byte, nginx / vop: ${(nginxRun.cpuMsPerGb / vopRun.cpuMsPerGb).toFixed(3)}`);
      targets.push({ what: 'vop/nginx throughput', text: `${ratio.toFixed(3)} (≥ ${MIN_RATIO.toFixed(2)})`, met });
    } else {
      console.log(`  whole downloads: vop ${mbps(vopRun.bytesPerSecond)}, ${cpu(vopRun)}; nginx: not measured (see above)`);
      targets.push({ what: 'vop/nginx throughput', text: 'not measured: nginx is not installed', met: false });
    }

    const bare = await fleet.start({ name: 'bare', script: 'bench/bareMediaServer.ts', args: [docroot, '/same'], listening: /bare listening on (http:\/\/\S+)/ });
    const others: Served[] = [...(nginx ? [{ name: 'nginx', baseUrl: nginx.baseUrl, pid: nginx.pid }] : []), { name: 'bare', baseUrl: bare.baseUrl, pid: bare.pid }];
    targets.push(...(await runRequestCases(requestCases(seeded), { name: 'vop', baseUrl: vop.baseUrl, pid: vop.pid }, others, { seconds: s.requestSeconds })));
    console.log('  through an API node of a cluster (issue 14, item 4): not measured yet (see bench/deliveryBench.ts)');
    return targets;
  } finally {
    await fleet.stopAll();
    await nginx?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** What {@link seedVideo} made, as URLs below `/media/`. */
interface SeededVideo {
  /** `<date>/<file>` of the large rendition, and its file. */
  bigUrl: string;
  bigFile: string;
  /** `<date>/<file>` of the small rendition. */
  smallUrl: string;
  videoId: string;
  /** `<label>/<file>` of the HLS rendition's segments, in order, and its playlist. */
  segments: string[];
  playlist: string;
  /** What nginx and bare Node serve under `/same/`: vop's paths and theirs. */
  mirrored: Array<{ from: string; to: string }>;
}

/** The request cases (issue 14, item 3), each on the same bytes through every server. */
function requestCases(v: SeededVideo): RequestCase[] {
  const play = `/media/play/${v.smallUrl}`;
  const same = `/same/play/${v.smallUrl}`;
  const range = (from: number, length: number) => ({ Range: `bytes=${from}-${from + length - 1}` });
  const one = (name: string, vopPath: string, refPath: string, bodyBytes: number, extra: Partial<RequestCase> = {}, headers?: Record<string, string>): RequestCase => ({
    name,
    connections: 50,
    vop: [{ path: vopPath, headers, method: extra.head ? 'HEAD' : 'GET' }],
    reference: [{ path: refPath, headers, method: extra.head ? 'HEAD' : 'GET' }],
    bodyBytes,
    ...extra,
  });
  return [
    one('Range 1 KiB', play, same, 1024, { targeted: true }, range(1000, 1024)),
    one('Range 64 KiB', play, same, 64 * 1024, { targeted: true }, range(1_000_000, 64 * 1024)),
    one('HEAD', play, same, 0, { head: true }),
    one('cover ?t=3', `/media/cover/${v.videoId}.jpg?t=3`, `/same/cover/${v.videoId}/t3.jpg`, 1000),
    one('HLS playlist', `/media/hls/${v.videoId}/${v.playlist}`, `/same/hls/${v.videoId}/${v.playlist}`, 200),
    one('HLS segment', `/media/hls/${v.videoId}/${v.segments[0]}`, `/same/hls/${v.videoId}/${v.segments[0]}`, HLS_SEGMENT_BYTES),
    {
      name: 'many viewers (HLS walk)',
      connections: 200,
      // Each connection a viewer: the rendition's playlist, then its segments in order, then again.
      vop: [v.playlist, ...v.segments].map((f) => ({ path: `/media/hls/${v.videoId}/${f}` })),
      reference: [v.playlist, ...v.segments].map((f) => ({ path: `/same/hls/${v.videoId}/${f}` })),
      // In a short run a connection walks only part of the rendition, its playlist a larger share
      // of its answers than in a whole walk: half a segment on average still tells real answers from refusals.
      bodyBytes: HLS_SEGMENT_BYTES / 2,
    },
  ];
}

/**
 * A video in status 1, written through the server's own stores while no server runs: a
 * rendition of `mb` MiB and a small one (random bytes: the content does not matter to
 * delivery), a real cover (ffmpeg: the sizes of `?t=` are made from it) and an HLS rendition
 * (playlists and random segments).
 */
async function seedVideo(dataDir: string, mb: number): Promise<SeededVideo> {
  const vop = await createServer({ dataDir, adminToken: ADMIN_TOKEN, log: () => undefined });
  try {
    const app = await vop.services.apps.create({ name: 'bench delivery' });
    const appRecord = (await vop.stores.apps.get(app.appId))!;
    const video = await vop.services.videos.register(appRecord, { VideoTitle: 'large', SourceFileGetType: '1' });
    const date = makeDateFolder()(Date.now());
    const big = playFileName(video.id, '720p', 'mp4');
    const small = playFileName(video.id, '360p', 'mp4');
    const chunk = crypto.randomBytes(1024 * 1024);
    await put(vop.objects, mediaKey('play', date, big), Readable.from((function* () {
      for (let i = 0; i < mb; i++) yield chunk;
    })()));
    await put(vop.objects, mediaKey('play', date, small), Readable.from([crypto.randomBytes(SMALL_RENDITION_BYTES)]));
    await vop.stores.videos.setRenditions(video.id, [
      { videoId: video.id, label: '720p', width: 1280, height: 720, bitrateKbps: 2928, file: `${date}/${big}`, bytes: mb * 1024 * 1024 },
      { videoId: video.id, label: '360p', width: 640, height: 360, bitrateKbps: 800, file: `${date}/${small}`, bytes: SMALL_RENDITION_BYTES },
    ]);

    const cover = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'vop-bench-cover-')), COVER_FILE);
    const { ffmpeg } = await defaultFfmpegBinaries();
    await promisify(execFile)(ffmpeg.path, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=1280x720', '-frames:v', '1', '-y', cover]);
    await vop.objects.put(mediaKey('covers', video.id, COVER_FILE), { file: cover });
    fs.rmSync(path.dirname(cover), { recursive: true, force: true });
    await vop.stores.videos.updateMedia(video.id, { coverFile: mediaKey('covers', video.id, COVER_FILE) });

    const segments = Array.from({ length: HLS_SEGMENTS }, (_, i) => `seg_${String(i).padStart(5, '0')}.ts`);
    const playlist = ['#EXTM3U', '#EXT-X-VERSION:3', '#EXT-X-TARGETDURATION:2', '#EXT-X-PLAYLIST-TYPE:VOD', ...segments.flatMap((seg) => ['#EXTINF:2.000000,', seg]), '#EXT-X-ENDLIST', ''].join('\n');
    await put(vop.objects, mediaKey('hls', video.id, '360p', 'index.m3u8'), Readable.from([Buffer.from(playlist)]));
    await put(vop.objects, mediaKey('hls', video.id, HLS_MASTER), Readable.from([Buffer.from('#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360\n360p/index.m3u8\n')]));
    for (const seg of segments) await put(vop.objects, mediaKey('hls', video.id, '360p', seg), Readable.from([crypto.randomBytes(HLS_SEGMENT_BYTES)]));

    await vop.services.lifecycle.move(video.id, 1);
    const hlsFiles = ['360p/index.m3u8', ...segments.map((seg) => `360p/${seg}`)];
    return {
      bigUrl: `${date}/${big}`,
      bigFile: vop.media.path('play', date, big),
      smallUrl: `${date}/${small}`,
      videoId: video.id,
      segments: segments.map((seg) => `360p/${seg}`),
      playlist: '360p/index.m3u8',
      mirrored: [
        { from: `/media/play/${date}/${small}`, to: `play/${date}/${small}` },
        // The sized cover is made by vop's first request for it (the warm-up of a real player's first view).
        { from: `/media/cover/${video.id}.jpg?t=3`, to: `cover/${video.id}/t3.jpg` },
        ...hlsFiles.map((f) => ({ from: `/media/hls/${video.id}/${f}`, to: `hls/${video.id}/${f}` })),
      ],
    };
  } finally {
    await vop.close();
  }
}

async function put(objects: MediaStore, key: string, stream: Readable): Promise<void> {
  await objects.put(key, { stream });
}

interface Measured {
  bytesPerSecond: number;
  /** The server process's CPU time (user and system) per 10^9 bytes served. */
  cpuMsPerGb: number;
}

/** One warm-up download, then `clients` × `rounds` full downloads from the server process `pid`. */
async function measure(name: string, curl: string, url: string, bytes: number, s: DeliveryBenchSettings, pid: number): Promise<Measured> {
  progress(`${name}: warm-up download`);
  await download(curl, url, bytes);
  progress(`${name}: ${s.clients} clients × ${s.rounds} downloads`);
  const cpuBefore = cpuTimeMs(pid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: s.clients }, async () => {
      for (let i = 0; i < s.rounds; i++) await download(curl, url, bytes);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const total = s.clients * s.rounds * bytes;
  return { bytesPerSecond: total / seconds, cpuMsPerGb: ((cpuTimeMs(pid) - cpuBefore) * 1e9) / total };
}

/** One full GET with curl to /dev/null; rejects unless exactly `bytes` came with a 200. */
function download(curl: string, url: string, bytes: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(curl, ['-s', '-o', '/dev/null', '-w', '%{http_code} %{size_download}', url], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0 && out.trim() === `200 ${bytes}`) resolve();
      else reject(new Error(`download of ${url} failed: curl exit ${code}, "${out.trim()}"`));
    });
  });
}
