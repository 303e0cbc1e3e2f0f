/**
 * `npm run bench -- transcode`: a 60 s 720p clip (generated) to the default ladder, through the
 * server — source placed, move to 5, until status 1 — against the same ffmpeg work run by hand in
 * the same run: ffprobe, the one transcode run, the cover samples and frame, the HLS packaging,
 * each spawned directly with the arguments the pure builders give. The ratio is what the server
 * adds: the queue, progress parsing, probes of the outputs, fsync and rename, the rows.
 *
 * Runs alternate (by hand, server, by hand, server, ...) so that a noisy neighbour hurts both, and
 * the fastest of each is compared: the least disturbed measure of the same work. The CPU time of
 * each (this process and its ffmpeg children: the server runs in this process) is printed too,
 * being far less sensitive to other work on the machine than wall time.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createServer, type VopServer } from '../server/app.js';
import { buildCoverArgs, buildFrameSampleArgs, DEFAULT_COVER_OPTIONS, SAMPLE_SIDE, isBlankFrame, lumaStats } from '../server/media/cover.js';
import { defaultFfmpegBinaries } from '../server/media/ffmpegBinaries.js';
import { run } from '../server/media/ffmpegRunner.js';
import { buildHlsArgs, resolveHlsOptions } from '../server/media/hls.js';
import { pickRungs } from '../server/media/ladder.js';
import { probe, type VideoInfo } from '../server/media/probe.js';
import { buildTranscodeArgs } from '../server/media/transcodeArgs.js';
import { DEFAULT_PROCESSING_OPTIONS, transcodeOptionsOf } from '../server/processing/processingOptions.js';
import { loadAverage, progress, verdict, type BenchSection, type Target } from './lib.js';

/** Settings of the transcode benchmark; the environment may change them. */
export interface TranscodeBenchSettings {
  /** Length of the clip, seconds. */
  seconds: number;
  width: number;
  height: number;
  /** Alternating pairs of runs (by hand, then through the server). */
  runs: number;
}

const DEFAULT_SETTINGS: TranscodeBenchSettings = { seconds: 60, width: 1280, height: 720, runs: 3 };

/** Issue 4's target: the server's wall time at most 10% over the same ffmpeg work by hand. */
const MAX_RATIO = 1.1;

export const transcodeSection: BenchSection = {
  name: 'transcode',
  about: 'a 60 s 720p clip to the default ladder, through the server vs the same ffmpeg work by hand (VOP_BENCH_TRANSCODE_RUNS, VOP_BENCH_TRANSCODE_SECONDS)',
  run: () =>
    transcodeBench({
      ...DEFAULT_SETTINGS,
      ...(process.env.VOP_BENCH_TRANSCODE_RUNS ? { runs: Number(process.env.VOP_BENCH_TRANSCODE_RUNS) } : {}),
      ...(process.env.VOP_BENCH_TRANSCODE_SECONDS ? { seconds: Number(process.env.VOP_BENCH_TRANSCODE_SECONDS) } : {}),
    }),
};

export async function transcodeBench(s: TranscodeBenchSettings): Promise<Target[]> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-bench-transcode-'));
  let vop: VopServer | undefined;
  try {
    const bins = await defaultFfmpegBinaries();
    const o = DEFAULT_PROCESSING_OPTIONS;
    console.log(
      `transcode: ${s.seconds} s ${s.width}x${s.height} clip, default ladder, preset ${o.preset}, HLS ${o.hls ? 'on' : 'off'}; ` +
        `${s.runs} run(s) each way; ${os.cpus().length} cores, load average ${loadAverage().toFixed(1)}; ${bins.ffmpeg.version.slice(0, 40)}…`,
    );
    const clip = path.join(work, 'source.mp4');
    progress(`generating the ${s.seconds} s clip`);
    await run([
      '-filter_complex', `testsrc2=s=${s.width}x${s.height}:r=30:d=${s.seconds}[v];sine=f=440:sample_rate=48000:d=${s.seconds}[a]`,
      '-map', '[v]', '-map', '[a]', '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '128k', '-f', 'mp4', '-y', clip,
    ]);
    const info = await probe(clip, { ffprobePath: bins.ffprobe.path });
    if (!info.isVideo) throw new Error(`the generated clip is not a video: ${info.reason}`);
    const rungs = pickRungs(info, o.ladder);

    vop = await createServer({ dataDir: path.join(work, 'data'), adminToken: 'bench-admin-token-0123456789abcdef', log: () => undefined });
    await vop.listen(0, '127.0.0.1');
    await vop.services.processing.tools.binaries();
    const app = await vop.services.apps.create({ name: 'bench transcode' });

    const byHand: Timed[] = [];
    const server: Timed[] = [];
    for (let i = 0; i < s.runs; i++) {
      progress(`run ${i + 1}/${s.runs}: by hand`);
      byHand.push(await timed(() => runByHand(clip, info, path.join(work, `hand-${i}`), bins.ffmpeg.path, bins.ffprobe.path)));
      progress(`run ${i + 1}/${s.runs}: through the server`);
      server.push(await timed(() => runThroughServer(vop!, app.appId, clip)));
    }
    const hand = Math.min(...byHand.map((r) => r.wallMs));
    const ours = Math.min(...server.map((r) => r.wallMs));
    const ratio = ours / hand;
    const cpuRatio = Math.min(...server.map((r) => r.cpuMs)) / Math.min(...byHand.map((r) => r.cpuMs));
    const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    const runs = (rs: Timed[]) => rs.map((r) => `${secs(r.wallMs)} (CPU ${secs(r.cpuMs)})`).join(', ');
    console.log(`  rungs: ${rungs.map((r) => `${r.label} ${r.width}x${r.height}`).join(', ')}`);
    console.log(`  by hand (ffprobe, transcode, cover, HLS): ${runs(byHand)}  → best ${secs(hand)}`);
    console.log(`  through the server (5 → 1):              ${runs(server)}  → best ${secs(ours)}`);
    const met = ratio <= MAX_RATIO;
    console.log(`  server / by hand: ${ratio.toFixed(3)}  (target ≤ ${MAX_RATIO.toFixed(2)})  ${verdict(met)}; CPU time ratio ${cpuRatio.toFixed(3)}`);
    return [{ what: 'server/by-hand wall time', text: `${ratio.toFixed(3)} (≤ ${MAX_RATIO.toFixed(2)})`, met }];
  } finally {
    await vop?.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

interface Timed {
  wallMs: number;
  /** CPU time of this process and of its children that ended meanwhile (user and system). */
  cpuMs: number;
}

/** Runs `work` (which resolves with its own wall time, excluding set-up) and measures the CPU spent. */
async function timed(work: () => Promise<number>): Promise<Timed> {
  const before = selfAndChildrenCpuMs();
  const wallMs = await work();
  return { wallMs, cpuMs: selfAndChildrenCpuMs() - before };
}

/** utime + stime + cutime + cstime of this process, from /proc/self/stat (fields 14 to 17). */
function selfAndChildrenCpuMs(): number {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / 100;
}

/** The server's work for one video: from the move to 5 until status 1 (the source already stored). */
async function runThroughServer(vop: VopServer, appId: string, clip: string): Promise<number> {
  const appRecord = (await vop.stores.apps.get(appId))!;
  const video = await vop.services.videos.register(appRecord, { VideoTitle: 'bench', SourceFileGetType: '1' });
  const dest = vop.media.path('sources', video.id, 'source');
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.copyFileSync(clip, dest);
  await vop.stores.videos.updateMedia(video.id, { sourceFile: `${video.id}/source` });
  const done = new Promise<number>((resolve) => {
    const onStatus = ({ videoId, to }: { videoId: string; to: number }) => {
      if (videoId !== video.id || (to !== 1 && to !== 7)) return;
      vop.events.off('video.status', onStatus);
      resolve(to);
    };
    vop.events.on('video.status', onStatus);
  });
  const started = performance.now();
  await vop.services.lifecycle.move(video.id, 5);
  const to = await done;
  const took = performance.now() - started;
  if (to !== 1) throw new Error(`the bench video ended in ${to}: ${(await vop.stores.videos.get(video.id))?.statusReason}`);
  return took;
}

/**
 * The same ffmpeg work, each command spawned directly and one after the other, as a person would
 * type them (the server takes the cover while the renditions encode).
 */
async function runByHand(clip: string, info: VideoInfo, dir: string, ffmpeg: string, ffprobe: string): Promise<number> {
  fs.mkdirSync(dir, { recursive: true });
  const o = DEFAULT_PROCESSING_OPTIONS;
  const rungs = pickRungs(info, o.ladder);
  const started = performance.now();

  await promisify(execFile)(ffprobe, ['-v', 'error', '-hide_banner', '-print_format', 'json', '-show_format', '-show_streams', `file:${clip}`], { maxBuffer: 8 << 20 });
  const outputs = rungs.map((r) => ({ rendition: r, path: path.join(dir, `${r.label}.mp4`) }));
  await ffmpegRun(ffmpeg, buildTranscodeArgs(clip, info, outputs, transcodeOptionsOf(o)));

  // The cover: the samples (in parallel, as extractCover takes them), then the chosen frame.
  const last = Math.max(0, info.durationSeconds - 0.1);
  const times = [...new Set(DEFAULT_COVER_OPTIONS.sampleFractions.map((f) => Math.min(last, f * info.durationSeconds)))];
  const samples = await Promise.all(times.map(async (t) => ({ t, gray: await ffmpegRun(ffmpeg, buildFrameSampleArgs(clip, t), true) })));
  const judged = samples.filter((x) => x.gray.length >= SAMPLE_SIDE * SAMPLE_SIDE).map((x) => ({ t: x.t, ...lumaStats(x.gray) }));
  const pool = judged.filter((x) => !isBlankFrame(x));
  const chosen = (pool.length > 0 ? pool : judged).reduce((a, b) => (b.stdDev > a.stdDev ? b : a));
  await ffmpegRun(ffmpeg, buildCoverArgs(clip, chosen.t, path.join(dir, 'cover.jpg')));

  if (o.hls) {
    const variants = rungs.map((r, i) => ({ input: outputs[i]!.path, dir: path.join(dir, 'hls', r.label) }));
    for (const v of variants) fs.mkdirSync(v.dir, { recursive: true });
    await ffmpegRun(ffmpeg, buildHlsArgs(variants, resolveHlsOptions({ segmentSeconds: o.hlsSegmentSeconds })));
  }
  return performance.now() - started;
}

/** Spawns ffmpeg as a person would (no progress pipe, no wrapper); resolves with stdout when asked. */
export function ffmpegRun(ffmpeg: string, args: string[], keepStdout = false): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpeg, ['-hide_banner', '-nostdin', '-loglevel', 'error', ...args], { stdio: ['ignore', keepStdout ? 'pipe' : 'ignore', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    child.stdout?.on('data', (c: Buffer) => out.push(c));
    child.stderr!.on('data', (c: Buffer) => (err += c));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`ffmpeg exited with ${code}: ${err.slice(-500)}`))));
  });
}
