/**
 * `npm run bench -- playable`: how soon an upload becomes playable, and what the ladder after it
 * costs, against the ffmpeg floors of the same work measured in the same run.
 *
 * vop runs as `npm start` runs it (its own process, embedded mode: sql.js and local disk, default
 * processing options: ladder 1080p/720p/480p/360p, preset veryfast, HLS on). Sources are made
 * with ffmpeg (testsrc2 and a sine tone):
 *  - an H.264 1080p30 MP4 with AAC, which the server copies as its first rendition, made once for
 *    each keyframe layout of a list (default: a keyframe every 1 s, as phones write them; every
 *    2 s, as cameras do; every 8.33 s, x264's default of 250 frames; a single keyframe, as some
 *    screen recorders and editors write short clips). The layout is what decides what a copied
 *    source costs beyond the copy: the covers are taken from the first keyframe after each
 *    sampled moment (server/media/cover.ts), and the moments with no keyframe before the next one
 *    from the video's first seconds, decoded in one more run;
 *  - an HEVC 10-bit (yuv420p10le) 1080p30 MP4 with AAC, whose first rendition is the 360p rung
 *    alone.
 * A source whose keyframes divide a 10 s piece (1 s, 2 s; and the HEVC one) is that piece encoded
 * once and looped with `-stream_loop` and stream copy to its length: encoding 2 minutes of 1080p
 * HEVC with libx265 would take longer than the rest of the bench, and the encoders downstream cost
 * the same per frame whether the picture repeats or not (every loop starts on a keyframe). The
 * others are encoded whole (a loop would add a keyframe at each piece's start). Each source's
 * keyframes are counted from its packets (ffprobe) and printed: the layout measured is the one
 * said.
 *
 * What is measured, all from the upload's answer (the source is stored and probed, the video is
 * in 5), each file sent through `POST /Api/Video/Upload` (multipart, as an application's server sends it):
 *  - first playable: until `/Api/Video/Get` says Status 1 (polled every {@link STATUS_POLL_MS}
 *    ms), and until the first rendition it lists answers a range request (206): the latter is the
 *    figure held to the goals;
 *  - for each H.264 layout: its sequential uploads, then `together` (3) uploads sent at once, each
 *    timed from its own answer, `togetherRounds` times (the goal held to the median round's slowest);
 *  - whole ladder (of one H.264 layout, 2 s when listed, and of the HEVC source): until the
 *    video's `ladder` is '' and its ladder job succeeded (the admin API's view of the video,
 *    polled every {@link LADDER_POLL_MS} ms).
 * Uploads run one after another on an otherwise idle server: a video whose whole ladder is not
 * measured has its ladder job cancelled once it is playable (and its ffmpeg gone), so that it
 * does not share the machine with the next upload.
 *
 * The floors, spawned directly from this process with the same ffmpeg binary the server resolves:
 *  - for each H.264 layout, what a copied first rendition does before its video is in status 1,
 *    done by ffmpeg alone: the stream copy to a faststart MP4 (`-c copy -movflags +faststart`,
 *    the first rendition itself: the copy, then the rewrite that moves the index to the front),
 *    the HLS cut of that MP4 (`-c copy -f hls`; the server cuts its HLS from the copy, after it),
 *    and the covers: `extractCover` of server/media/cover.ts run alone with spec 2.3's sizes (the
 *    server's own code: one ffmpeg run for every moment with a keyframe near, one more for the
 *    moments none reaches, from the start window, then one that encodes the chosen picture as
 *    the cover and its sizes; its run count is printed).
 *    The copy floor is both copies: the MP4 alone leaves out the HLS the server must also write
 *    before status 1, the HLS alone the MP4 the player is given. The playable p50 is compared
 *    with copy + covers; the server runs the covers beside the copy, so on an idle machine it
 *    could come in under 1.0;
 *  - one 360p rung alone, veryfast (buildTranscodeArgs with the last rung of pickRungs), from the
 *    HEVC source and, for reference, from the H.264 source whose ladder is measured: what an
 *    encoded first rendition cannot beat;
 *  - today's one-pass ladder: one run of buildTranscodeArgs with every rung of pickRungs, from
 *    each source whose whole ladder is measured: what the ladder made in two steps is compared with.
 * Floors and uploads alternate (the copy and cover floors before every sequential upload of their
 * layout), so that other work on the machine hurts both alike; floors are compared by their
 * median. p50 and p95 are nearest-rank percentiles of the runs: with 5 runs, p95 is the slowest.
 *
 * Settings (environment): VOP_BENCH_SECONDS sets both source lengths (a short run: 10);
 * VOP_BENCH_PLAYABLE_H264_SECONDS (default 60, the issue's 1-minute uploads);
 * VOP_BENCH_PLAYABLE_KEYFRAMES (default `1,2,8.33,one`) the H.264 layouts, a comma list of seconds
 * between keyframes or `one` for a single keyframe (`8.33` alone for a short run);
 * VOP_BENCH_PLAYABLE_HEVC_SECONDS (default 30: the issue's 2-minute source, 120, adds some ten
 * minutes on two cores, mostly the two whole-ladder runs) set one each; VOP_BENCH_PLAYABLE_RUNS
 * (5) sequential uploads of each source (layout); VOP_BENCH_PLAYABLE_FLOOR_RUNS (3) runs of each
 * 360p floor; VOP_BENCH_PLAYABLE_LADDER_RUNS (1; 0: none) of those uploads whose whole ladder is
 * waited for, each followed by one one-pass run of the same source.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { COVER_SIZES, extractCover } from '../server/media/cover.js';
import { defaultFfmpegBinaries } from '../server/media/ffmpegBinaries.js';
import { pickRungs, type Rendition } from '../server/media/ladder.js';
import { probe, type VideoInfo } from '../server/media/probe.js';
import { demuxerOf } from '../server/media/sourcePolicy.js';
import { buildTranscodeArgs } from '../server/media/transcodeArgs.js';
import { DEFAULT_PROCESSING_OPTIONS, transcodeOptionsOf } from '../server/processing/processingOptions.js';
import { ServerFleet, loadAverage, median, progress, sleep, verdict, type BenchSection, type ChildServer, type Target, VOP_SERVER } from './lib.js';
import { ffmpegRun } from './transcodeBench.js';
import { ADMIN_TOKEN, benchApp, multipartUpload, type BenchApp } from './uploadClients.js';

/** Settings of the playable benchmark; the environment may change them (see the file comment). */
export interface PlayableBenchSettings {
  h264Seconds: number;
  hevcSeconds: number;
  /** Sequential uploads of each source (each H.264 layout, the HEVC source). */
  runs: number;
  /** Runs of each 360p floor (the copy and cover floors run before every sequential upload). */
  floorRuns: number;
  /** Of the sequential uploads, how many wait for the whole ladder (each with a one-pass run beside it). */
  ladderRuns: number;
  /** Uploads sent at once, for each H.264 layout. */
  together: number;
  /**
   * How many times `together` uploads are sent at once, one round after the other: on a machine
   * whose neighbours come and go, one round's slowest upload swings by some 0.3 s.
   */
  togetherRounds: number;
  /**
   * The H.264 source's keyframe layouts, each measured in turn: seconds between keyframes (1:
   * phones; 2: cameras; 8.33: x264's default of 250 frames; 10 and more: screen recorders), or 0
   * for a single keyframe.
   */
  h264Keyframes: number[];
}

const DEFAULT_SETTINGS: PlayableBenchSettings = { h264Seconds: 60, hevcSeconds: 30, runs: 5, floorRuns: 3, ladderRuns: 1, together: 3, togetherRounds: 1, h264Keyframes: [1, 2, 8.33, 0] };

/** The issue's goals. */
const GOALS = {
  /** An H.264 source with x264's default keyframes (copied): playable within this many ms of its upload's answer (p50). */
  h264FirstPlayableMs: 1000,
  /** The same, three sent at once: each playable within this many ms of its answer. */
  h264TogetherMs: 2000,
  /** An encoded source: first playable at most this multiple of its one-rung floor. */
  hevcFirstPlayableRatio: 1.3,
  /** The ladder in two steps against today's one pass: copied H.264, encoded HEVC. */
  h264LadderRatio: 1.1,
  hevcLadderRatio: 1.25,
  /** The seek previews' job against the ladder's (issue 35 item 2). */
  storyboardShare: 0.1,
};

const STATUS_POLL_MS = 50;
const LADDER_POLL_MS = 250;
/** The picture of both sources. */
const WIDTH = 1920;
const HEIGHT = 1080;
const FPS = 30;
/** Length of the piece a source loops. */
const PIECE_SECONDS = 10;
/** x264's default keyframe interval (keyint), in frames: the layout the H.264 goals are stated for. */
const X264_DEFAULT_KEYINT = 250;

const envNumber = (name: string): number | undefined => {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a number above 0 (got "${v}")`);
  return n;
};

/** `1,2,8.33,one` → [1, 2, 8.33, 0]. */
function keyframeLayouts(text: string): number[] {
  const layouts = text.split(',').map((t) => t.trim()).filter(Boolean).map((t) => {
    if (t === 'one') return 0;
    const n = Number(t);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`VOP_BENCH_PLAYABLE_KEYFRAMES lists seconds above 0 or "one", comma-separated (got "${t}")`);
    return n;
  });
  if (layouts.length === 0) throw new Error('VOP_BENCH_PLAYABLE_KEYFRAMES lists no layout');
  return [...new Set(layouts)];
}

export function playableSettingsFromEnv(): PlayableBenchSettings {
  const both = envNumber('VOP_BENCH_SECONDS');
  const s: PlayableBenchSettings = {
    ...DEFAULT_SETTINGS,
    ...(both ? { h264Seconds: both, hevcSeconds: both } : {}),
  };
  s.h264Seconds = envNumber('VOP_BENCH_PLAYABLE_H264_SECONDS') ?? s.h264Seconds;
  s.hevcSeconds = envNumber('VOP_BENCH_PLAYABLE_HEVC_SECONDS') ?? s.hevcSeconds;
  s.runs = Math.round(envNumber('VOP_BENCH_PLAYABLE_RUNS') ?? s.runs);
  s.floorRuns = Math.round(envNumber('VOP_BENCH_PLAYABLE_FLOOR_RUNS') ?? s.floorRuns);
  // 0 is allowed here (no whole ladder waited for), which envNumber refuses.
  const ladderRuns = process.env.VOP_BENCH_PLAYABLE_LADDER_RUNS;
  if (ladderRuns === '0') s.ladderRuns = 0;
  else s.ladderRuns = Math.min(s.runs, Math.round(envNumber('VOP_BENCH_PLAYABLE_LADDER_RUNS') ?? s.ladderRuns));
  s.togetherRounds = Math.max(1, Math.round(envNumber('VOP_BENCH_PLAYABLE_TOGETHER_ROUNDS') ?? s.togetherRounds));
  const keys = process.env.VOP_BENCH_PLAYABLE_KEYFRAMES;
  if (keys !== undefined && keys !== '') s.h264Keyframes = keyframeLayouts(keys);
  return s;
}

/** How a source's keyframes are placed, for people. */
function keyframesText(seconds: number): string {
  return seconds === 0 ? 'a single keyframe' : `a keyframe every ${seconds} s`;
}

/** Whether the layout is x264's default interval (8.33 s at 30 fps), the one the H.264 goals are stated for. */
const isX264Default = (seconds: number) => Math.round(seconds * FPS) === X264_DEFAULT_KEYINT;

export const playableSection: BenchSection = {
  name: 'playable',
  about:
    'time to first playable (H.264 1080p copied, for each keyframe layout: one upload and three at once; HEVC 10-bit 1080p) and to the whole ladder, vs ffmpeg floors ' +
    '(VOP_BENCH_SECONDS, VOP_BENCH_PLAYABLE_H264_SECONDS, VOP_BENCH_PLAYABLE_HEVC_SECONDS, VOP_BENCH_PLAYABLE_RUNS, VOP_BENCH_PLAYABLE_FLOOR_RUNS, VOP_BENCH_PLAYABLE_LADDER_RUNS, ' +
    'VOP_BENCH_PLAYABLE_TOGETHER_ROUNDS: rounds of three at once, default 1; VOP_BENCH_PLAYABLE_KEYFRAMES: the H.264 layouts, seconds between keyframes or "one", comma-separated, default 1,2,8.33,one)',
  run: () => playableBench(playableSettingsFromEnv()),
};

/** One source the bench uploads. */
interface Source {
  name: 'H.264' | 'HEVC 10-bit';
  file: string;
  info: VideoInfo;
  rungs: Rendition[];
  bytes: number;
  /** Keyframes counted in its video packets. */
  keyframes: number;
}

/** One upload through the server, times in ms. */
interface UploadRun {
  videoId: string;
  /** From sending the request until its answer. */
  uploadMs: number;
  /** From the answer until Get said Status 1. */
  statusMs: number;
  /** From the answer until the first listed rendition answered a range request. */
  playableMs: number;
  /** The labels Get listed at status 1. */
  firstLabels: string[];
  /** From the answer until the whole ladder was there; undefined when not waited for. */
  ladderMs?: number;
  /** The ladder job's own run (startedAt to finishedAt), when waited for. */
  ladderJobMs?: number;
  /** The storyboard job's own run, after the ladder, when waited for. */
  storyboardJobMs?: number;
  /** The transcode job's own run (startedAt to finishedAt, the server's clock). */
  transcodeJobMs?: number;
}

/** One of `together` uploads sent at once. */
interface TogetherRun {
  run: UploadRun;
  /** From the common start until its answer. */
  sentMs: number;
  /** From the common start until it was playable. */
  fromStartMs: number;
}

/** One H.264 keyframe layout: its source, its uploads and its floors (ms per run). */
interface Layout {
  keyframeSeconds: number;
  source: Source;
  sequential: UploadRun[];
  together: TogetherRun[];
  /** The same, round by round. */
  rounds: TogetherRun[][];
  /** The stream copy to a faststart MP4. */
  copyMp4: number[];
  /** That MP4 cut to HLS. */
  copyHls: number[];
  /** extractCover alone, and its ffmpeg runs. */
  covers: number[];
  coverRuns: number[];
}

/** Floors of the sources whose ladder is measured, ms per run. */
interface Floors {
  rung360: Record<Source['name'], number[]>;
  onePass: Record<Source['name'], number[]>;
}

export async function playableBench(s: PlayableBenchSettings): Promise<Target[]> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-bench-playable-'));
  const fleet = new ServerFleet();
  const startedAll = performance.now();
  try {
    const bins = await defaultFfmpegBinaries();
    const ffmpeg = bins.ffmpeg.path;
    const o = DEFAULT_PROCESSING_OPTIONS;
    console.log(
      `playable: H.264 ${s.h264Seconds} s with ${s.h264Keyframes.map(keyframesText).join(' / ')}, and HEVC 10-bit ${s.hevcSeconds} s, ${WIDTH}x${HEIGHT} ${FPS} fps; ` +
        `${s.runs} sequential upload(s) of each (${s.ladderRuns} waited for to the whole ladder), ${s.together} H.264 at once for each layout; 360p floors ${s.floorRuns}×; ` +
        `ladder ${o.ladder.rungs.map((r) => r.label).join('/')}, preset ${o.preset}, HLS ${o.hls ? 'on' : 'off'}; ` +
        `${os.cpus().length} cores, load average ${loadAverage().toFixed(1)}; ${bins.ffmpeg.path} ${bins.ffmpeg.version.slice(0, 30)}…`,
    );
    const encoder = await x265Ffmpeg(ffmpeg);

    // The H.264 whole ladder is measured on one layout: the keyframe layout matters to the copy
    // and the covers, little to the encodes of the ladder.
    const ladderLayout = s.h264Keyframes.includes(2) ? 2 : s.h264Keyframes[0]!;
    const layouts: Layout[] = [];
    for (const k of s.h264Keyframes) {
      progress(`generating the H.264 source, ${keyframesText(k)}`);
      const source = await makeSource(ffmpeg, work, 'H.264', s.h264Seconds, bins.ffprobe.path, k);
      layouts.push({ keyframeSeconds: k, source, sequential: [], together: [], rounds: [], copyMp4: [], copyHls: [], covers: [], coverRuns: [] });
    }
    progress('generating the HEVC source');
    const hevc = await makeSource(encoder, work, 'HEVC 10-bit', s.hevcSeconds, bins.ffprobe.path);
    const warmup = path.join(work, 'warmup.mp4');
    await ffmpegRun(ffmpeg, [...testPattern(640, 360, 2), '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-f', 'mp4', '-y', warmup]);
    for (const [src, k] of [...layouts.map((l) => [l.source, l.keyframeSeconds] as const), [hevc, 2] as const]) {
      console.log(
        `  ${src.name}, ${keyframesText(k)}: ${src.info.videoCodec} ${src.info.pixelFormat} ${src.info.width}x${src.info.height}, ${src.info.durationSeconds.toFixed(1)} s, ` +
          `${(src.bytes / 1e6).toFixed(1)} MB, ${src.keyframes} keyframe(s) counted; rungs ${src.rungs.map((r) => r.label).join(', ')}`,
      );
    }

    const dataDir = path.join(work, 'data');
    const vop = await fleet.start({
      name: 'vop',
      script: VOP_SERVER,
      args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--admin-token', ADMIN_TOKEN],
      listening: /vop listening on (http:\/\/\S+)/,
    });
    const api = await benchApp(vop.baseUrl);
    const ctx: Ctx = { vop, api, dataDir, work };
    // The server resolves and proves its ffmpeg on first use: a small upload, not timed, pays for that.
    progress('warm-up upload');
    await uploadAndWatch(ctx, warmup, { wholeLadder: true });

    const floors: Floors = { rung360: { 'H.264': [], 'HEVC 10-bit': [] }, onePass: { 'H.264': [], 'HEVC 10-bit': [] } };
    let floorDirs = 0;
    const floorDir = () => {
      const dir = path.join(work, `floor-${floorDirs++}`);
      fs.mkdirSync(dir);
      return dir;
    };
    const timeFloor = async (list: number[], label: string, args: (dir: string) => string[]) => {
      const dir = floorDir();
      progress(`floor: ${label}`);
      const started = performance.now();
      await ffmpegRun(ffmpeg, args(dir));
      list.push(performance.now() - started);
      fs.rmSync(dir, { recursive: true, force: true });
    };
    // What a copied first rendition does before status 1, by ffmpeg alone (see the file comment).
    const copyFloors = async (l: Layout) => {
      const src = l.source;
      const dir = floorDir();
      progress(`floor: ${keyframesText(l.keyframeSeconds)}: copy to a faststart MP4, its HLS, the covers`);
      const mp4 = path.join(dir, 'copy.mp4');
      let started = performance.now();
      await ffmpegRun(ffmpeg, ['-i', src.file, '-map', '0:v:0', '-map', '0:a:0', '-c', 'copy', '-movflags', '+faststart', '-f', 'mp4', '-y', mp4]);
      l.copyMp4.push(performance.now() - started);
      const hls = path.join(dir, 'hls');
      fs.mkdirSync(hls);
      started = performance.now();
      await ffmpegRun(ffmpeg, [
        '-i', mp4, '-c', 'copy', '-f', 'hls', '-hls_time', String(o.hlsSegmentSeconds), '-hls_playlist_type', 'vod',
        '-hls_segment_filename', path.join(hls, 'seg%04d.ts'), path.join(hls, 'index.m3u8'),
      ]);
      l.copyHls.push(performance.now() - started);
      started = performance.now();
      // With its sizes, as the server makes them (processing/coverOutput.ts).
      const sizes = Object.entries(COVER_SIZES).map(([t, size]) => ({ path: path.join(dir, `t${t}.jpg`), ...size }));
      const cover = await extractCover(src.file, path.join(dir, 'cover.jpg'), src.info.durationSeconds, { ffmpegPath: ffmpeg, inputFormat: demuxerOf(src.info.formatName), picture: { width: src.info.storedWidth, height: src.info.storedHeight } }, sizes);
      l.covers.push(performance.now() - started);
      l.coverRuns.push(cover.runs);
      fs.rmSync(dir, { recursive: true, force: true });
    };
    const rungFloor = (src: Source) =>
      timeFloor(floors.rung360[src.name], `${src.rungs.at(-1)!.label} alone from ${src.name}`, (dir) =>
        buildTranscodeArgs(src.file, src.info, [{ rendition: src.rungs.at(-1)!, path: path.join(dir, 'rung.mp4') }], transcodeOptionsOf(o)),
      );
    const onePassFloor = (src: Source) =>
      timeFloor(floors.onePass[src.name], `one-pass ladder from ${src.name}`, (dir) =>
        buildTranscodeArgs(src.file, src.info, src.rungs.map((r) => ({ rendition: r, path: path.join(dir, `${r.label}.mp4`) })), transcodeOptionsOf(o)),
      );
    const sequentialUpload = async (src: Source, label: string, i: number, wholeLadder: boolean, runs: UploadRun[]) => {
      progress(`${label} upload ${i + 1}/${s.runs}${wholeLadder ? ', to the whole ladder' : ''}`);
      const r = await uploadAndWatch(ctx, src.file, { wholeLadder });
      runs.push(r);
      progress(
        `  playable in ${secs(r.playableMs)} (status 1 at ${secs(r.statusMs)}, first ${r.firstLabels.join('+')}, transcode job ${secs(r.transcodeJobMs ?? NaN)})` +
          (r.ladderMs !== undefined ? `, whole ladder at ${secs(r.ladderMs)}` : ''),
      );
      if (wholeLadder) await onePassFloor(src);
    };

    for (const l of layouts) {
      const label = `H.264, ${keyframesText(l.keyframeSeconds)}:`;
      const measuresLadder = l.keyframeSeconds === ladderLayout;
      for (let i = 0; i < s.runs; i++) {
        await copyFloors(l);
        if (measuresLadder && i < s.floorRuns) await rungFloor(l.source);
        await sequentialUpload(l.source, label, i, measuresLadder && i < s.ladderRuns, l.sequential);
      }
      for (let round = 0; round < s.togetherRounds; round++) {
        progress(`${label} ${s.together} uploads at once${s.togetherRounds > 1 ? `, round ${round + 1}/${s.togetherRounds}` : ''}`);
        const together = await uploadTogether(ctx, l.source.file, s.together);
        for (const r of together) {
          progress(`  answered ${secs(r.sentMs)} after the start, playable ${secs(r.run.playableMs)} after its answer (${secs(r.fromStartMs)} after the start; transcode job ${secs(r.run.transcodeJobMs ?? NaN)})`);
        }
        l.rounds.push(together);
        l.together.push(...together);
      }
    }

    const hevcRuns: UploadRun[] = [];
    for (let i = 0; i < s.runs; i++) {
      if (i < s.floorRuns) await rungFloor(hevc);
      await sequentialUpload(hevc, `${hevc.name}:`, i, i < s.ladderRuns, hevcRuns);
    }

    return report(s, layouts, ladderLayout, hevc, hevcRuns, floors, (performance.now() - startedAll) / 1000);
  } finally {
    await fleet.stopAll();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

interface Ctx {
  vop: ChildServer;
  api: BenchApp;
  dataDir: string;
  work: string;
}

// ---------------------------------------------------------------------------------------------
// Sources

/** testsrc2 and a 440 Hz tone, `seconds` long. */
function testPattern(width: number, height: number, seconds: number): string[] {
  return [
    '-filter_complex', `testsrc2=s=${width}x${height}:r=${FPS}:d=${seconds}[v];sine=f=440:sample_rate=48000:d=${seconds}[a]`,
    '-map', '[v]', '-map', '[a]',
  ];
}

/** An ffmpeg with libx265: the server's if it has it, else the system's. */
async function x265Ffmpeg(ffmpeg: string): Promise<string> {
  for (const candidate of [ffmpeg, '/usr/bin/ffmpeg', '/usr/local/bin/ffmpeg']) {
    if (!fs.existsSync(candidate)) continue;
    const { stdout } = await promisify(execFile)(candidate, ['-hide_banner', '-encoders'], { maxBuffer: 8 << 20 }).catch(() => ({ stdout: '' }));
    if (/\blibx265\b/.test(stdout)) return candidate;
  }
  throw new Error('no ffmpeg with libx265 found: the HEVC 10-bit source cannot be made');
}

/**
 * A source with a keyframe every `keyframeSeconds` (0: a single keyframe): a
 * {@link PIECE_SECONDS} piece encoded once and looped to `seconds` by stream copy when its
 * keyframes divide the piece (each loop then starts where a keyframe was due), else the whole
 * length encoded (a loop would add one at each piece's start); probed as the server probes it,
 * its keyframes counted.
 */
async function makeSource(ffmpeg: string, work: string, name: Source['name'], seconds: number, ffprobe: string, keyframeSeconds = 2): Promise<Source> {
  const slug = `${name === 'H.264' ? 'h264' : 'hevc10'}-k${keyframeSeconds === 0 ? 'one' : keyframeSeconds}`;
  const piece = path.join(work, `${slug}-piece.mp4`);
  const file = path.join(work, `${slug}.mp4`);
  const gop = Math.round(keyframeSeconds * FPS);
  const loops = gop > 0 && (PIECE_SECONDS * FPS) % gop === 0;
  const pieceSeconds = loops ? Math.min(PIECE_SECONDS, seconds) : seconds;
  const keys = keyframeSeconds === 0 ? ['-g', '100000', '-keyint_min', '100000', '-sc_threshold', '0'] : ['-g', String(gop)];
  const video =
    name === 'H.264'
      ? ['-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p']
      : ['-c:v', 'libx265', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p10le', '-tag:v', 'hvc1', '-x265-params', 'log-level=error'];
  await ffmpegRun(ffmpeg, [...testPattern(WIDTH, HEIGHT, pieceSeconds), ...video, ...keys, '-c:a', 'aac', '-b:a', '128k', '-f', 'mp4', '-y', piece]);
  const repeats = Math.ceil(seconds / pieceSeconds) - 1;
  await ffmpegRun(ffmpeg, ['-stream_loop', String(repeats), '-i', piece, '-c', 'copy', '-t', String(seconds), '-movflags', '+faststart', '-f', 'mp4', '-y', file]);
  fs.rmSync(piece);
  const info = await probe(file, { ffprobePath: ffprobe });
  if (!info.isVideo) throw new Error(`the generated ${name} source is not a video: ${info.reason}`);
  return { name, file, info, rungs: pickRungs(info, DEFAULT_PROCESSING_OPTIONS.ladder), bytes: fs.statSync(file).size, keyframes: await countKeyframes(ffprobe, file) };
}

/** The keyframes of the first video stream, counted from its packets' flags (nothing decoded). */
async function countKeyframes(ffprobe: string, file: string): Promise<number> {
  const { stdout } = await promisify(execFile)(ffprobe, ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'packet=flags', '-of', 'csv=p=0', file], { maxBuffer: 64 << 20 });
  return stdout.split('\n').filter((l) => l.includes('K')).length;
}

// ---------------------------------------------------------------------------------------------
// Through the server

/** Uploads `file` and times it to playable, then to the whole ladder, or cancels the ladder. */
async function uploadAndWatch(ctx: Ctx, file: string, o: { wholeLadder: boolean }): Promise<UploadRun> {
  const videoId = await ctx.api.register();
  const sent = performance.now();
  await multipartUpload(ctx.vop.baseUrl, file, fs.statSync(file).size, videoId, ctx.api.auth());
  const answered = performance.now();
  const run = await watchPlayable(ctx, videoId, answered);
  run.uploadMs = answered - sent;
  await readTranscodeJob(ctx, run);
  if (o.wholeLadder) await watchLadder(ctx, run, answered);
  else await cancelLadders(ctx, [videoId]);
  return run;
}

/** `n` uploads of `file` sent at once; each timed from its own answer and from the common start. */
async function uploadTogether(ctx: Ctx, file: string, n: number): Promise<Array<{ run: UploadRun; sentMs: number; fromStartMs: number }>> {
  const ids = await Promise.all(Array.from({ length: n }, () => ctx.api.register()));
  const size = fs.statSync(file).size;
  const start = performance.now();
  const out = await Promise.all(
    ids.map(async (videoId) => {
      await multipartUpload(ctx.vop.baseUrl, file, size, videoId, ctx.api.auth());
      const answered = performance.now();
      const run = await watchPlayable(ctx, videoId, answered);
      run.uploadMs = answered - start;
      await readTranscodeJob(ctx, run);
      return { run, sentMs: answered - start, fromStartMs: answered - start + run.playableMs };
    }),
  );
  await cancelLadders(ctx, ids);
  return out;
}

/** Polls Get until Status 1, then the first listed rendition until it answers a range request. */
async function watchPlayable(ctx: Ctx, videoId: string, answered: number): Promise<UploadRun> {
  const deadline = answered + 15 * 60_000;
  let statusMs: number | undefined;
  let lastError = '';
  for (;;) {
    if (performance.now() > deadline) throw new Error(`video ${videoId} was not playable within 15 minutes (${lastError})`);
    const body = await specGet(ctx, videoId);
    const status = body.VideoModel?.Status;
    if (status === 7) throw new Error(`video ${videoId} went to 7: ${JSON.stringify(body.VideoModel)}`);
    if (status === 1) {
      statusMs ??= performance.now() - answered;
      const files = body.VideoPlayFile ?? [];
      const first = files[0];
      if (first) {
        const res = await fetch(`${body.MediaSever?.PlayURL ?? ''}${first.VideoURL}`, { headers: { Range: 'bytes=0-7' } });
        await res.arrayBuffer();
        if (res.status === 206 || res.status === 200) {
          return { videoId, uploadMs: NaN, statusMs, playableMs: performance.now() - answered, firstLabels: files.map((f) => f.BitrateLabel) };
        }
        lastError = `GET of ${first.VideoURL} answered ${res.status}`;
      } else lastError = 'status 1 with no VideoPlayFile';
    }
    await sleep(STATUS_POLL_MS);
  }
}

/** The transcode job's own run, once its end is written (just after the move to 1). */
async function readTranscodeJob(ctx: Ctx, run: UploadRun): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline) {
    const job = (await adminDetail(ctx, run.videoId)).jobs.find((j) => j.type === 'transcode');
    if (job?.startedAt && job.finishedAt) {
      run.transcodeJobMs = job.finishedAt - job.startedAt;
      return;
    }
    await sleep(STATUS_POLL_MS);
  }
}

/** Polls the admin view until the video's ladder is '' and its ladder job succeeded. */
async function watchLadder(ctx: Ctx, run: UploadRun, answered: number): Promise<void> {
  const deadline = answered + 30 * 60_000;
  for (;;) {
    if (performance.now() > deadline) throw new Error(`the ladder of ${run.videoId} did not complete within 30 minutes`);
    const d = await adminDetail(ctx, run.videoId);
    const job = d.jobs.find((j) => j.type === 'ladder');
    if (d.video.ladder === 'failed' || job?.state === 'failed' || job?.state === 'cancelled') {
      throw new Error(`the ladder of ${run.videoId} ended ${d.video.ladder}/${job?.state}: ${job?.error ?? ''}`);
    }
    const others = d.jobs.filter((j) => j.type !== 'storyboard');
    if (run.ladderMs === undefined && d.video.ladder === '' && (job?.state === 'succeeded' || run.firstLabels.length === d.renditions.length) && !others.some((j) => j.state === 'running' || j.state === 'queued')) {
      run.ladderMs = performance.now() - answered;
      if (job?.startedAt && job.finishedAt) run.ladderJobMs = job.finishedAt - job.startedAt;
    }
    // The seek previews, made once the ladder is whole: timed on their own.
    const storyboard = d.jobs.find((j) => j.type === 'storyboard');
    if (storyboard?.state === 'failed' || storyboard?.state === 'cancelled') throw new Error(`the storyboard of ${run.videoId} ended ${storyboard.state}: ${storyboard.error ?? ''}`);
    if (run.ladderMs !== undefined && storyboard?.state === 'succeeded') {
      if (storyboard.startedAt && storyboard.finishedAt) run.storyboardJobMs = storyboard.finishedAt - storyboard.startedAt;
      return;
    }
    await sleep(LADDER_POLL_MS);
  }
}

/**
 * Cancels the ladder jobs of `videoIds` (queued or running), once they are there, and waits until
 * no job of those videos is live and no ffmpeg the server recorded is running: the next upload
 * finds the machine idle. All at once: cancelling one lets the queue start the next one's ladder.
 */
async function cancelLadders(ctx: Ctx, videoIds: string[]): Promise<void> {
  const deadline = performance.now() + 60_000;
  for (;;) {
    if (performance.now() > deadline) throw new Error(`the ladders of ${videoIds.join(', ')} did not stop within a minute`);
    let settled = true;
    for (const videoId of videoIds) {
      const d = await adminDetail(ctx, videoId);
      const live = d.jobs.filter((j) => j.state === 'queued' || j.state === 'running');
      for (const j of live.filter((j) => j.type === 'ladder')) {
        const res = await adminFetch(ctx, 'POST', `/jobs/${j.id}/cancel`);
        if (res.status !== 200 && res.status !== 409) throw new Error(`cancelling job ${j.id} answered ${res.status}: ${await res.text()}`);
        await res.arrayBuffer().catch(() => undefined);
      }
      // 'pending' with no live job: the ladder job is about to be queued (the move to 1's event).
      if (live.length > 0 || d.video.ladder === 'pending') settled = false;
    }
    if (settled && !recordedFfmpegRunning(ctx.dataDir)) return;
    await sleep(100);
  }
}

/** Whether an ffmpeg listed in the server's record of live ffmpeg processes still runs. */
function recordedFfmpegRunning(dataDir: string): boolean {
  let lines: string[];
  try {
    lines = fs.readFileSync(path.join(dataDir, 'ffmpeg.pids'), 'utf8').split('\n').filter(Boolean);
  } catch {
    return false;
  }
  return lines.some((l) => {
    const pid = (JSON.parse(l) as { pid: number }).pid;
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z' && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('ffmpeg');
    } catch {
      return false;
    }
  });
}

interface SpecDetail {
  VideoModel?: { Status?: number };
  VideoPlayFile?: Array<{ VideoURL: string; BitrateLabel: string }>;
  MediaSever?: { PlayURL?: string };
}

async function specGet(ctx: Ctx, videoId: string): Promise<SpecDetail> {
  const a = ctx.api.auth();
  const q = new URLSearchParams({ AppId: a.appId, Timestamp: a.timestamp, Token: a.token, Id: videoId });
  const res = await fetch(`${ctx.vop.baseUrl}/Api/Video/Get?${q}`);
  return (await res.json()) as SpecDetail;
}

interface AdminDetail {
  video: { ladder: string; status: number };
  renditions: Array<{ label: string }>;
  jobs: Array<{ id: string; type: string; state: string; error: string; startedAt: number | null; finishedAt: number | null }>;
}

function adminFetch(ctx: Ctx, method: string, apiPath: string): Promise<Response> {
  return fetch(`${ctx.vop.baseUrl}/admin/api${apiPath}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
}

async function adminDetail(ctx: Ctx, videoId: string): Promise<AdminDetail> {
  const res = await adminFetch(ctx, 'GET', `/videos/${videoId}`);
  if (res.status !== 200) throw new Error(`GET /admin/api/videos/${videoId} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as AdminDetail;
}


// ---------------------------------------------------------------------------------------------
// The report

/** Nearest-rank percentile: the smallest value with at least p of the values at or below it (p95 of five figures is the largest). */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

function report(
  s: PlayableBenchSettings,
  layouts: Layout[],
  ladderLayout: number,
  hevc: Source,
  v: UploadRun[],
  floors: Floors,
  totalSeconds: number,
): Target[] {
  const H = 'H.264';
  const V = 'HEVC 10-bit';
  const rows: string[][] = [];
  const row = (...cells: string[]) => rows.push(cells);
  const list = (xs: number[]) => xs.map((x) => (x / 1000).toFixed(2)).join(', ');
  const p50 = (xs: number[]) => percentile(xs, 0.5);
  const p95 = (xs: number[]) => percentile(xs, 0.95);
  const jobs = (runs: UploadRun[]) => runs.map((r) => r.transcodeJobMs ?? NaN);
  const targets: Target[] = [];

  for (const l of layouts) {
    const name = `${H} ${s.h264Seconds} s, ${keyframesText(l.keyframeSeconds)}`;
    const copy = median(l.copyMp4) + median(l.copyHls);
    const covers = median(l.covers);
    const floor = copy + covers;
    const floorText = `copy ${secs(copy)} + covers ${secs(covers)}`;
    const play = l.sequential.map((r) => r.playableMs);
    const tPlay = l.together.map((t) => t.run.playableMs);
    const held = isX264Default(l.keyframeSeconds);
    row(`${name}: answer → first rendition fetchable`, String(play.length), secs(p50(play)), secs(p95(play)), floorText, (p50(play) / floor).toFixed(2), held ? `≤ ${secs(GOALS.h264FirstPlayableMs)} (p50)` : '', list(play));
    // Each round's slowest: the goal is each of the three within its time.
    const slowest = l.rounds.map((r) => Math.max(...r.map((t) => t.run.playableMs)));
    const rounds = slowest.length > 1 ? `, median of ${slowest.length} rounds` : '';
    row(`${name}, ×${s.together} at once: answer → fetchable`, String(tPlay.length), secs(p50(tPlay)), secs(p95(tPlay)), floorText, (p50(tPlay) / floor).toFixed(2), held ? `≤ ${secs(GOALS.h264TogetherMs)} (each)` : '', list(tPlay));
    row(`${name}: transcode job alone (server's start → end)`, String(play.length), secs(p50(jobs(l.sequential))), secs(p95(jobs(l.sequential))), '', '', '', list(jobs(l.sequential)));
    if (slowest.length > 1) row(`${name}, ×${s.together} at once: each round's slowest`, String(slowest.length), secs(p50(slowest)), secs(p95(slowest)), '', '', '', list(slowest));
    row(`${name}, ×${s.together} at once: transcode job alone`, String(tPlay.length), secs(p50(jobs(l.together.map((t) => t.run)))), secs(p95(jobs(l.together.map((t) => t.run)))), '', '', '', list(jobs(l.together.map((t) => t.run))));
    if (held) {
      targets.push({ what: `${H}, x264's default keyframes (${l.keyframeSeconds} s): first playable p50`, text: `${secs(p50(play))} (≤ ${secs(GOALS.h264FirstPlayableMs)})`, met: p50(play) <= GOALS.h264FirstPlayableMs });
      targets.push({ what: `${H}, x264's default keyframes, ×${s.together} at once: slowest first playable${rounds}`, text: `${secs(p50(slowest))} (≤ ${secs(GOALS.h264TogetherMs)})`, met: p50(slowest) <= GOALS.h264TogetherMs });
    }
  }

  const hevcRungFloor = median(floors.rung360[V]);
  const vPlay = v.map((r) => r.playableMs);
  row(`${V} ${s.hevcSeconds} s: upload answer → status 1`, String(v.length), secs(p50(v.map((r) => r.statusMs))), secs(p95(v.map((r) => r.statusMs))), '', '', '', list(v.map((r) => r.statusMs)));
  row(`${V} ${s.hevcSeconds} s: answer → first rendition fetchable`, String(v.length), secs(p50(vPlay)), secs(p95(vPlay)), `360p alone ${secs(hevcRungFloor)}`, (p50(vPlay) / hevcRungFloor).toFixed(2), `≤ ${GOALS.hevcFirstPlayableRatio.toFixed(2)}× (p50)`, list(vPlay));
  row(`${V}: transcode job alone (server's start → end)`, String(v.length), secs(p50(jobs(v))), secs(p95(jobs(v))), '', '', '', list(jobs(v)));
  targets.push({ what: `${V} first playable p50 / 360p floor`, text: `${(p50(vPlay) / hevcRungFloor).toFixed(2)} (≤ ${GOALS.hevcFirstPlayableRatio.toFixed(2)})`, met: p50(vPlay) / hevcRungFloor <= GOALS.hevcFirstPlayableRatio });

  const lh = layouts.find((l) => l.keyframeSeconds === ladderLayout)!;
  const ladder = (name: Source['name'], sequential: UploadRun[]) => {
    const runs = sequential.filter((r) => r.ladderMs !== undefined);
    return { server: median(runs.map((r) => r.ladderMs!)), job: runs.map((r) => r.ladderJobMs ?? NaN), onePass: median(floors.onePass[name]), runs };
  };
  if (s.ladderRuns > 0) {
    const hl = ladder(H, lh.sequential);
    const vl = ladder(V, v);
    const hName = `${H} ${s.h264Seconds} s, ${keyframesText(ladderLayout)}`;
    row(`${hName}: answer → whole ladder`, String(hl.runs.length), secs(hl.server), '', `one pass ${secs(hl.onePass)}`, (hl.server / hl.onePass).toFixed(3), `≤ ${GOALS.h264LadderRatio.toFixed(2)}`, `ladder job alone ${list(hl.job)}`);
    row(`${V}: answer → whole ladder`, String(vl.runs.length), secs(vl.server), '', `one pass ${secs(vl.onePass)}`, (vl.server / vl.onePass).toFixed(3), `≤ ${GOALS.hevcLadderRatio.toFixed(2)}`, `ladder job alone ${list(vl.job)}`);

    // Seek previews: the storyboard job against the ladder job it follows (issue 35: at most 10 % more).
    const storyboardShare = (runs: UploadRun[]) => median(runs.filter((r) => r.storyboardJobMs !== undefined && r.ladderJobMs).map((r) => r.storyboardJobMs! / r.ladderJobMs!));
    const hs = storyboardShare(hl.runs);
    const vs = storyboardShare(vl.runs);
    row(`${hName}: storyboard job / ladder job`, String(hl.runs.length), secs(median(hl.runs.map((r) => r.storyboardJobMs ?? NaN))), '', `ladder job ${secs(median(hl.job))}`, hs.toFixed(3), `≤ ${GOALS.storyboardShare.toFixed(2)}`, list(hl.runs.map((r) => r.storyboardJobMs ?? NaN)));
    row(`${V}: storyboard job / ladder job`, String(vl.runs.length), secs(median(vl.runs.map((r) => r.storyboardJobMs ?? NaN))), '', `ladder job ${secs(median(vl.job))}`, vs.toFixed(3), `≤ ${GOALS.storyboardShare.toFixed(2)}`, list(vl.runs.map((r) => r.storyboardJobMs ?? NaN)));
    targets.push(
      { what: `${H} whole ladder / one pass`, text: `${(hl.server / hl.onePass).toFixed(3)} (≤ ${GOALS.h264LadderRatio.toFixed(2)})`, met: hl.server / hl.onePass <= GOALS.h264LadderRatio },
      { what: `${V} whole ladder / one pass`, text: `${(vl.server / vl.onePass).toFixed(3)} (≤ ${GOALS.hevcLadderRatio.toFixed(2)})`, met: vl.server / vl.onePass <= GOALS.hevcLadderRatio },
      { what: `${H} storyboard / ladder job`, text: `${hs.toFixed(3)} (≤ ${GOALS.storyboardShare.toFixed(2)})`, met: hs <= GOALS.storyboardShare },
      { what: `${V} storyboard / ladder job`, text: `${vs.toFixed(3)} (≤ ${GOALS.storyboardShare.toFixed(2)})`, met: vs <= GOALS.storyboardShare },
    );
  }

  const header = ['measure', 'n', 'p50', 'p95', 'floor (median)', 'ratio', 'goal', 'each run (s)'];
  console.log('');
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
  console.log(
    '  (p50, p95: nearest rank over the n runs; with 5 runs p95 is the slowest. Ratio: p50 over the floor; for a copied source the floor is ' +
      'the copy to a faststart MP4 plus its HLS cut plus the covers (extractCover alone), all medians, which the server runs partly side by side.)',
  );

  console.log('');
  const fHeader = ['floor (ffmpeg alone, same binary)', 'n', 'min', 'median', 'each run (s)'];
  console.log(`| ${fHeader.join(' | ')} |`);
  console.log(`|${fHeader.map(() => '---').join('|')}|`);
  const frow = (label: string, xs: number[]) => console.log(`| ${label} | ${xs.length} | ${secs(Math.min(...xs))} | ${secs(median(xs))} | ${list(xs)} |`);
  for (const l of layouts) {
    const name = `${H} ${s.h264Seconds} s, ${keyframesText(l.keyframeSeconds)} (${l.source.keyframes} counted)`;
    const runs = [...new Set(l.coverRuns)].join(' or ');
    frow(`${name}: copied to a faststart MP4 (-c copy -movflags +faststart)`, l.copyMp4);
    frow(`${name}: that MP4 cut to HLS (-c copy -f hls)`, l.copyHls);
    frow(`${name}: covers, extractCover alone (${runs} ffmpeg run${runs === '1' ? '' : 's'})`, l.covers);
  }
  if (floors.rung360[H].length > 0) frow(`${H} ${s.h264Seconds} s, ${keyframesText(ladderLayout)} → ${lh.source.rungs.at(-1)!.label} alone, ${DEFAULT_PROCESSING_OPTIONS.preset}`, floors.rung360[H]);
  frow(`${V} ${s.hevcSeconds} s → ${hevc.rungs.at(-1)!.label} alone, ${DEFAULT_PROCESSING_OPTIONS.preset}`, floors.rung360[V]);
  if (s.ladderRuns > 0) {
    frow(`${H} ${s.h264Seconds} s, ${keyframesText(ladderLayout)}, one-pass ladder (${lh.source.rungs.map((r) => r.label).join('/')})`, floors.onePass[H]);
    frow(`${V} ${s.hevcSeconds} s one-pass ladder (${hevc.rungs.map((r) => r.label).join('/')})`, floors.onePass[V]);
  }
  const firsts = (runs: UploadRun[]) => [...new Set(runs.map((r) => r.firstLabels.join('+')))].join(', ');
  console.log(
    `  (first rendition(s) listed at status 1: ${layouts.map((l) => `${H} ${keyframesText(l.keyframeSeconds)} ${firsts([...l.sequential, ...l.together.map((t) => t.run)])}`).join('; ')}; ` +
      `${V} ${firsts(v)}; load average ${loadAverage().toFixed(1)} at the end; ${Math.round(totalSeconds)} s in all)`,
  );
  if (!layouts.some((l) => isX264Default(l.keyframeSeconds))) console.log(`  (no layout of ${X264_DEFAULT_KEYINT} frames, 8.33 s, measured: the H.264 goals are not checked)`);

  console.log('');
  for (const t of targets) console.log(`  ${verdict(t.met)}  ${t.what}: ${t.text}`);
  return targets;
}
