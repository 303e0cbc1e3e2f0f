/**
 * Test fixtures made on the spot with ffmpeg's lavfi sources (testsrc2 for pictures, sine for
 * sound): any size, length or shape of clip in milliseconds, no committed binaries (STYLE.md).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildFrameSampleArgs, lumaStats, SAMPLE_SIDE } from '../../server/media/cover.js';
import { defaultFfmpegBinaries } from '../../server/media/ffmpegBinaries.js';
import { run } from '../../server/media/ffmpegRunner.js';
import { probe } from './probe.js';

/** What {@link makeClip} makes. */
export interface ClipOptions {
  /** Length in seconds (black lead included). Default 2. */
  seconds?: number;
  /** Stored width; odd sizes are allowed (encoded 4:4:4, which H.264 permits at any size). Default 320. */
  width?: number;
  /** Stored height. Default 180. */
  height?: number;
  /** Frames per second. Default 25. */
  fps?: number;
  /** Include a 440 Hz AAC track. Default true. */
  audio?: boolean;
  /** Rotation metadata to set (90, 180, 270): players turn the picture, the stored size stays. Default 0. */
  rotate?: number;
  /** Seconds of pure black at the start (a bad cover). Default 0. */
  blackLeadSeconds?: number;
  /** Directory to write into. Default: a per-process temp directory. */
  dir?: string;
  /** File name. Default: derived from the options. */
  name?: string;
}

let sharedDir: string | undefined;

/** A fresh directory under the OS temp folder. */
export function makeTempDir(prefix = 'vop-media-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * Makes an H.264 MP4 clip (testsrc2 pattern, optional black lead, sine audio, rotation tag) and
 * returns its absolute path: a new file on every call, which the caller may change or delete.
 *
 * In a test run (VOP_TEST_CLIP_CACHE, set by test/globalSetup.ts) each clip is encoded once per
 * run, into the cache under a name made of its parameters, and every call gets a copy of it: the
 * same clips used to be encoded again by every file (and every test) that asked for them.
 *
 * A clip given its own `name` is encoded for the call, as before the cache: cluster-queue's
 * take-over tests name theirs, and its SIGSTOP test failed three runs in four when its clip came
 * at once from the cache (the worker started at the end of the test before it took the job, and
 * after SIGCONT never noticed its lost lease), and passed with the encode's seconds back.
 */
export async function makeClip(options: ClipOptions = {}): Promise<string> {
  const { seconds = 2, width = 320, height = 180, fps = 25, audio = true, rotate = 0, blackLeadSeconds = 0 } = options;
  if (!(blackLeadSeconds >= 0 && blackLeadSeconds < seconds)) throw new Error('blackLeadSeconds must be from 0 to below seconds.');
  sharedDir ??= makeTempDir('vop-clips-');
  const dir = options.dir ?? sharedDir;
  const key = `clip-${width}x${height}-${seconds}s-${fps}fps${audio ? '' : '-mute'}${rotate ? `-r${rotate}` : ''}${blackLeadSeconds ? `-b${blackLeadSeconds}` : ''}`;
  const out = path.resolve(dir, options.name ?? `${key}-${process.hrtime.bigint()}.mp4`);
  const cacheDir = process.env.VOP_TEST_CLIP_CACHE;
  if (!cacheDir || options.name) {
    await encodeClip({ seconds, width, height, fps, audio, rotate, blackLeadSeconds }, out);
    return out;
  }
  const cached = path.join(cacheDir, `${key}.mp4`);
  if (!fs.existsSync(cached)) {
    // Made aside and renamed into place: two files asking at once each encode it, and neither
    // ever copies half of one.
    const aside = path.join(cacheDir, `${key}-${process.pid}-${process.hrtime.bigint()}.mp4`);
    await encodeClip({ seconds, width, height, fps, audio, rotate, blackLeadSeconds }, aside);
    fs.renameSync(aside, cached);
  }
  await fs.promises.copyFile(cached, out);
  return out;
}

/** Encodes the clip `makeClip` describes into `out`. */
async function encodeClip(clip: Required<Omit<ClipOptions, 'dir' | 'name'>>, out: string): Promise<void> {
  const { seconds, width, height, fps, audio, rotate, blackLeadSeconds } = clip;
  const size = `${width}x${height}`;
  const odd = width % 2 === 1 || height % 2 === 1;

  const graph: string[] = [];
  const pattern = `testsrc2=s=${size}:r=${fps}:d=${seconds - blackLeadSeconds}`;
  if (blackLeadSeconds > 0) graph.push(`color=c=black:s=${size}:r=${fps}:d=${blackLeadSeconds}[b]`, `${pattern}[t]`, '[b][t]concat=n=2:v=1:a=0[v]');
  else graph.push(`${pattern}[v]`);
  if (audio) graph.push(`sine=f=440:sample_rate=48000:d=${seconds}[a]`);
  const args = ['-filter_complex', graph.join(';'), '-map', '[v]', ...(audio ? ['-map', '[a]', '-c:a', 'aac', '-b:a', '64k'] : [])];
  args.push('-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', odd ? 'yuv444p' : 'yuv420p', '-f', 'mp4', '-y');

  if (!rotate) {
    await run([...args, out]);
    return;
  }
  // The rotation tag survives only a stream copy in ffmpeg 4.x (an encode drops it), and from
  // ffmpeg 6 on it is set with -display_rotation instead: make the clip, then tag it.
  const plain = `${out}.plain.mp4`;
  await run([...args, plain]);
  try {
    await run(['-i', plain, '-map', '0', '-c', 'copy', '-metadata:s:v:0', `rotate=${rotate}`, '-f', 'mp4', '-y', out]);
    const info = await probe(out);
    if (!info.isVideo || info.rotation === 0) {
      await run(['-display_rotation:v:0', String(-rotate), '-i', plain, '-map', '0', '-c', 'copy', '-f', 'mp4', '-y', out]);
    }
  } finally {
    fs.rmSync(plain, { force: true });
  }
}

/** Makes an audio-only AAC file (.m4a, or any name you give). */
export async function makeAudioFile(file: string, seconds = 1): Promise<string> {
  await run(['-filter_complex', `sine=f=440:sample_rate=48000:d=${seconds}[a]`, '-map', '[a]', '-c:a', 'aac', '-f', 'mp4', '-y', path.resolve(file)]);
  return path.resolve(file);
}

/** Makes a single-frame image; the format follows the extension (.png, .jpg). */
export async function makeImage(file: string, width = 320, height = 180): Promise<string> {
  await run(['-filter_complex', `testsrc2=s=${width}x${height}:d=1[v]`, '-map', '[v]', '-frames:v', '1', '-update', '1', '-y', path.resolve(file)]);
  return path.resolve(file);
}

/** Mean and spread of an image's (or a clip's first frame's) luma, through the cover code's own gray thumbnail. */
export async function imageLuma(file: string): Promise<{ mean: number; stdDev: number }> {
  const { stdout } = await run(buildFrameSampleArgs(path.resolve(file), 0), { maxStdoutBytes: SAMPLE_SIDE * SAMPLE_SIDE });
  return lumaStats(stdout);
}

/** Top-level MP4 boxes with their byte offsets, to check that `moov` (the index) precedes `mdat`. */
export function mp4TopLevelBoxes(file: string): Array<{ type: string; offset: number; size: number }> {
  const buf = fs.readFileSync(file);
  const boxes: Array<{ type: string; offset: number; size: number }> = [];
  let offset = 0;
  while (offset + 8 <= buf.length) {
    let size = buf.readUInt32BE(offset);
    const type = buf.toString('latin1', offset + 4, offset + 8);
    if (size === 1) size = Number(buf.readBigUInt64BE(offset + 8)); // 64-bit "largesize"
    else if (size === 0) size = buf.length - offset; // runs to the end of the file
    if (size < 8) break;
    boxes.push({ type, offset, size });
    offset += size;
  }
  return boxes;
}

/** The binaries the tests run (resolved once per process). */
export function testBinaries() {
  return defaultFfmpegBinaries();
}
