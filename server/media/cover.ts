/**
 * Covers: a representative frame saved as JPEG, and the fixed sizes of spec section 2.3
 * (issue 4, item 4).
 *
 * The first frame is a poor cover: videos open on black, on a fade, or on a blank title card. We
 * sample a few moments spread over the video, look at each through a tiny grayscale thumbnail
 * (32x32 bytes on stdout: cheap, and no image decoding on our side), reject the near-black,
 * near-white and uniform ones, and keep the one with the most contrast.
 *
 * Each moment is taken from the first keyframe at or after it, decoded alone (`-skip_frame
 * nokey`: the decoder skips every other frame), all moments in one ffmpeg run that also writes
 * each one's full-size JPEG, so the cover costs about what a stream copy costs whatever the
 * distance between keyframes (0.3 s for six 1080p moments, against 2.5 s when each moment was its
 * own run decoding from the keyframe before it up to the moment). A keyframe is near enough when
 * it comes before the next moment (the end, for the last): the samples stay spread over the video.
 * That run reads the source in one of two ways, which find the same keyframes:
 *  - a short or small source is read once from the first moment on, every keyframe decoded (the
 *    scan, {@link buildKeyframeScanArgs}); a keyframe of 1080p decodes in about 10 ms;
 *  - a longer one through one input per moment, each seeking there ({@link buildKeyframeSamplesArgs}):
 *    each input costs some 45 ms to open (an MP4's index is read again) and a decode of the
 *    keyframe before its moment, whatever the source's length.
 * The scan is taken up to {@link SCAN_BUDGET}, a minute of 1080p: even with a keyframe every
 * second (a phone's), it then decodes no more than six seeks cost, and with x264's default (one
 * every 8.3 s) it costs half of them (0.25 s against 0.5 s on a 1-minute 1080p source).
 * The moments with no keyframe that near (a video with a single keyframe, keyframes minutes
 * apart) are taken instead from the video's first {@link FALLBACK_WINDOW_SECONDS} seconds, spread
 * over them, all in one more run that decodes that window once: decoding exactly at each moment
 * cost a decode from the keyframe before it, the whole video up to the moment for a single
 * keyframe (29 s for a one-minute 1080p source). So the cost never grows with the video's length,
 * unlike ffmpeg's `thumbnail` filter, which decodes every frame in its window.
 *
 * Each moment's full-size picture is kept raw (NUT, no encode) until one is chosen; one last run
 * then writes the chosen one as the cover's JPEG and, from the same decoded picture, every size
 * asked: six full-size JPEG encodes cost the keyframe run a quarter of its time (0.1 s on 1080p).
 *
 * Writing to a temporary name and renaming is the caller's job (atomicFile.ts): pass a tmpPath.
 */
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { run, type RunOptions } from './ffmpegRunner.js';
import { absolute, DEINTERLACE_FILTER, inputFormatArgs } from './transcodeArgs.js';

/** Spec section 2.3: `?t=<n>` selects these sizes (width x height), cropped to fill. */
export const COVER_SIZES = {
  2: { width: 200, height: 200 },
  3: { width: 262, height: 175 },
  4: { width: 200, height: 110 },
  5: { width: 180, height: 136 },
  6: { width: 680, height: 530 },
  7: { width: 420, height: 240 },
} as const satisfies Record<number, { width: number; height: number }>;

/** A valid `t` of spec section 2.3. */
export type CoverSizeKey = keyof typeof COVER_SIZES;

/** Options of {@link extractCover} and {@link resizeCover}. */
export interface CoverOptions {
  /** ffmpeg executable. Default: the one the runner resolves. */
  ffmpegPath?: string;
  /** Cancels the ffmpeg runs. */
  signal?: AbortSignal;
  /** Records the ffmpeg runs for killOrphans (see ffmpegRunner.ts `pidFile`). */
  pidFile?: string;
  /** Cap on each run's address space in bytes (ffmpegRunner.ts); 0: none. */
  memoryLimitBytes?: number;
  /** The demuxer the source was judged as (sourcePolicy.ts `demuxerOf`), passed as `-f`; null: let ffmpeg guess. */
  inputFormat?: string | null;
  /** Moments to sample, as fractions of the duration. */
  sampleFractions: number[];
  /** Mean luma (0-255, full range: the gray samples map video black to about 0) below which a frame is black. */
  minMeanLuma: number;
  /** Mean luma above which a frame is blank white. */
  maxMeanLuma: number;
  /** Luma standard deviation below which a frame is uniform (a plain card, a fade). */
  minLumaStdDev: number;
  /** JPEG quality on ffmpeg's `-q:v` scale: 2 (best) to 31. */
  jpegQuality: number;
  /**
   * The source may be interlaced (transcodeArgs.ts `mayBeInterlaced`): the cover frame is
   * deinterlaced, else a DVD or camcorder cover shows both fields' moments combed together.
   */
  deinterlace: boolean;
  /** Filters that make an HDR source's frame SDR (toneMapping.ts `toneMapFilters`); empty for SDR. */
  toneMap: readonly string[];
  /**
   * The source's stored picture, which with its duration decides how its keyframes are read (see
   * {@link SCAN_BUDGET}); absent: one input per moment.
   */
  picture?: { width: number; height: number };
}

export const DEFAULT_COVER_OPTIONS = {
  sampleFractions: [0.1, 0.25, 0.4, 0.55, 0.7, 0.85],
  minMeanLuma: 20,
  maxMeanLuma: 245,
  minLumaStdDev: 8,
  jpegQuality: 2,
  deinterlace: false,
  toneMap: [],
} satisfies Partial<CoverOptions>;

/** Fills defaults and validates; throws an Error that names the bad option. */
function resolveCoverOptions(input: Partial<CoverOptions> = {}): CoverOptions {
  const o: CoverOptions = { ...DEFAULT_COVER_OPTIONS, ...input };
  if (!Array.isArray(o.sampleFractions) || o.sampleFractions.length === 0 || o.sampleFractions.some((f) => !(f >= 0 && f < 1))) {
    throw new Error('Option sampleFractions must list at least one fraction from 0 to below 1.');
  }
  if (!(o.minMeanLuma >= 0 && o.maxMeanLuma <= 255 && o.minMeanLuma < o.maxMeanLuma)) throw new Error('Options minMeanLuma and maxMeanLuma must satisfy 0 <= min < max <= 255.');
  if (!(o.minLumaStdDev >= 0)) throw new Error('Option minLumaStdDev must be 0 or more.');
  if (!(Number.isInteger(o.jpegQuality) && o.jpegQuality >= 2 && o.jpegQuality <= 31)) throw new Error('Option jpegQuality must be a whole number from 2 to 31.');
  return o;
}

/**
 * Up to this many seconds × pixels a source's keyframes are scanned in one read rather than
 * sought one input per moment (see the file comment): a minute of 1920x1080.
 */
export const SCAN_BUDGET = 60 * 1920 * 1080;

/** How much of a video's start the moments without a keyframe near are taken from (decoded once). */
export const FALLBACK_WINDOW_SECONDS = 10;

/** Side of the grayscale thumbnail that samples are judged on. */
export const SAMPLE_SIDE = 32;

/**
 * Arguments that write one SAMPLE_SIDE² grayscale frame at `atSeconds` to stdout. An HDR
 * frame is tone-mapped once made small (cheap, and close enough to judge black or blank by).
 */
export function buildFrameSampleArgs(input: string, atSeconds: number, inputFormat: string | null = null, toneMap: readonly string[] = []): string[] {
  return [
    ...seekTo(atSeconds), ...inputFormatArgs(inputFormat), '-protocol_whitelist', 'file', '-i', absolute(input),
    '-map', '0:v:0', '-frames:v', '1',
    '-vf', [`scale=${SAMPLE_SIDE}:${SAMPLE_SIDE}:flags=area`, ...toneMap, 'format=gray'].join(','),
    '-f', 'rawvideo', 'pipe:1',
  ];
}

/** Arguments that save the frame at `atSeconds` as a full-size JPEG (square pixels), deinterlaced and tone-mapped if asked. */
export function buildCoverArgs(
  input: string,
  atSeconds: number,
  output: string,
  jpegQuality = DEFAULT_COVER_OPTIONS.jpegQuality,
  deinterlace = false,
  inputFormat: string | null = null,
  toneMap: readonly string[] = [],
): string[] {
  return [
    ...seekTo(atSeconds), ...inputFormatArgs(inputFormat), '-protocol_whitelist', 'file', '-i', absolute(input),
    '-map', '0:v:0', '-frames:v', '1',
    '-vf', [...(deinterlace ? [DEINTERLACE_FILTER] : []), ...toneMap, 'scale=iw*sar:ih', 'setsar=1'].join(','),
    ...jpegOutput(output, jpegQuality),
  ];
}

/**
 * Arguments that scale `input` (an image) to cover exactly width x height, then crop the overflow
 * from the centre: filled, never distorted. The scale factor is the larger of the two ratios,
 * rounded up, so the crop can never ask for more than there is.
 */
export function buildResizeCoverArgs(input: string, output: string, width: number, height: number, jpegQuality = DEFAULT_COVER_OPTIONS.jpegQuality): string[] {
  if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) throw new Error(`Cannot resize a cover to ${width}x${height}.`);
  const f = `max(${width}/iw\\,${height}/ih)`;
  return [
    '-protocol_whitelist', 'file', '-i', absolute(input),
    '-map', '0:v:0', '-frames:v', '1',
    // exact=1: without it crop rounds to the chroma grid of 4:2:0 and 262x175 comes out 262x174.
    '-vf', `scale=w=ceil(iw*${f}):h=ceil(ih*${f}):flags=lanczos,crop=${width}:${height}:exact=1,setsar=1`,
    ...jpegOutput(output, jpegQuality),
  ];
}

/**
 * Arguments that make several sizes of one picture in a single ffmpeg run (one start and one
 * decode instead of one each): the picture is split, and each branch filled and cropped as
 * {@link buildResizeCoverArgs} does.
 */
export function buildResizeCoverSetArgs(input: string, outputs: ReadonlyArray<{ path: string; width: number; height: number }>, jpegQuality = DEFAULT_COVER_OPTIONS.jpegQuality): string[] {
  if (outputs.length === 0) throw new Error('No cover sizes to make.');
  return [
    '-protocol_whitelist', 'file', '-i', absolute(input),
    '-filter_complex', sizeBranches('[0:v:0]', outputs).join(';'),
    ...sizeOutputs(outputs, jpegQuality),
  ];
}

/**
 * The filters that make every size of `outputs` from the picture `from` (a link label), as
 * `[o<i>]`. A picture at least twice every size each way is halved first, averaging each 2x2
 * block: every size is then still a downscale of what is left, and its lanczos scales read a
 * quarter of the pixels (a 1080p cover's six sizes in 0.25 s instead of 0.33 s).
 */
function sizeBranches(from: string, outputs: ReadonlyArray<{ width: number; height: number }>): string[] {
  if (outputs.length === 0) throw new Error('No cover sizes to make.');
  const branches = outputs.map((_, i) => `[s${i}]`).join('');
  const w = Math.max(...outputs.map((o) => o.width)) * 2;
  const h = Math.max(...outputs.map((o) => o.height)) * 2;
  const halve = `scale=w='if(gte(iw,${w})*gte(ih,${h}),trunc(iw/2),iw)':h='if(gte(iw,${w})*gte(ih,${h}),trunc(ih/2),ih)':flags=area`;
  const filters = outputs.map(({ width, height }, i) => {
    if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) throw new Error(`Cannot resize a cover to ${width}x${height}.`);
    const f = `max(${width}/iw\\,${height}/ih)`;
    return `[s${i}]scale=w=ceil(iw*${f}):h=ceil(ih*${f}):flags=lanczos,crop=${width}:${height}:exact=1,setsar=1[o${i}]`;
  });
  return [`${from}${halve},split=${outputs.length}${branches}`, ...filters];
}

function sizeOutputs(outputs: ReadonlyArray<{ path: string }>, jpegQuality: number): string[] {
  return outputs.flatMap((o, i) => ['-map', `[o${i}]`, '-frames:v', '1', ...jpegOutput(o.path, jpegQuality)]);
}

/**
 * Arguments that write a chosen sample's full-size picture (`candidate`: raw video in NUT, as the
 * sampling runs leave it) as the cover's JPEG at `output` and, from the same picture, every size
 * of `sizes`, in one run.
 */
export function buildCoverSetArgs(candidate: string, output: string, sizes: ReadonlyArray<{ path: string; width: number; height: number }>, jpegQuality = DEFAULT_COVER_OPTIONS.jpegQuality): string[] {
  const input = ['-f', 'nut', '-protocol_whitelist', 'file', '-i', absolute(candidate)];
  if (sizes.length === 0) return [...input, '-map', '0:v:0', '-frames:v', '1', ...jpegOutput(output, jpegQuality)];
  return [
    ...input,
    '-filter_complex', [`[0:v:0]split=2[full][rest]`, ...sizeBranches('[rest]', sizes)].join(';'),
    '-map', '[full]', '-frames:v', '1', ...jpegOutput(output, jpegQuality),
    ...sizeOutputs(sizes, jpegQuality),
  ];
}

/** Input seek before `-i`: fast (from the nearest keyframe). None at 0, where ffmpeg 4 finds no frame in a still image. */
function seekTo(atSeconds: number): string[] {
  return atSeconds > 0 ? ['-ss', atSeconds.toFixed(3)] : [];
}

function jpegOutput(output: string, quality: number): string[] {
  // image2 with -update 1 writes exactly this file name (no %d pattern expected). The standard
  // Huffman tables, not tables made for the picture in a second pass: the same pixels, a file
  // some 5% larger, 10% less time (the keyframe run writes six full-size JPEGs).
  return ['-c:v', 'mjpeg', '-huffman', 'default', '-pix_fmt', 'yuvj420p', '-q:v', String(quality), '-f', 'image2', '-update', '1', '-y', absolute(output)];
}

/** Mean and standard deviation of 8-bit luma samples. */
export function lumaStats(gray: Uint8Array): { mean: number; stdDev: number } {
  if (gray.length === 0) return { mean: 0, stdDev: 0 };
  let sum = 0;
  for (const v of gray) sum += v;
  const mean = sum / gray.length;
  let sq = 0;
  for (const v of gray) sq += (v - mean) ** 2;
  return { mean, stdDev: Math.sqrt(sq / gray.length) };
}

/** Whether a sample is unfit for a cover: black, white, or one flat tone. */
export function isBlankFrame(stats: { mean: number; stdDev: number }, o: Pick<CoverOptions, 'minMeanLuma' | 'maxMeanLuma' | 'minLumaStdDev'> = DEFAULT_COVER_OPTIONS): boolean {
  return stats.mean < o.minMeanLuma || stats.mean > o.maxMeanLuma || stats.stdDev < o.minLumaStdDev;
}

/** One sampled moment. */
export interface CoverSample {
  atSeconds: number;
  mean: number;
  stdDev: number;
  blank: boolean;
  /** The full-size picture of its frame (raw video in NUT), made in the same run; absent when none was kept. */
  candidate?: string;
}

/** One moment to take from the first keyframe after it, and where its outputs go. */
export interface KeyframeMoment {
  atSeconds: number;
  /** How far after the moment the keyframe may be: up to the next moment. */
  withinSeconds: number;
  /** Where its SAMPLE_SIDE² grayscale bytes go (nothing written when there is no keyframe that near). */
  sample: string;
  /** Where its full-size JPEG goes. */
  cover: string;
}

/**
 * Arguments for one run taking every moment from its first keyframe (see the file comment): per
 * moment an input that seeks there decoding keyframes only, the first frame within reach, split
 * into its grayscale sample and its full-size JPEG (square pixels, deinterlaced and tone-mapped
 * if asked).
 */
export function buildKeyframeSamplesArgs(input: string, moments: readonly KeyframeMoment[], o: SampleRunOptions = {}): string[] {
  if (moments.length === 0) throw new Error('No moments to sample.');
  const args: string[] = [];
  // One decoding thread each: a keyframe at a time gains nothing from more, and each thread
  // would hold frames of its own (measured: 0.55 s against 0.75 s for six 1080p moments).
  for (const m of moments) args.push('-threads', '1', '-skip_frame', 'nokey', ...seekTo(m.atSeconds), ...inputFormatArgs(o.inputFormat ?? null), '-protocol_whitelist', 'file', '-i', absolute(input));
  const graph = moments.map((m, i) => {
    // After an input seek the frames' times start from the moment: `end` is the reach.
    const first = `[${i}:v:0]trim=end=${Math.max(0.001, m.withinSeconds).toFixed(3)}:end_frame=1,split=2[k${i}][f${i}]`;
    return `${first};${sampleBranches(i, o, o.deinterlace ? [DEINTERLACE_FILTER] : [])}`;
  });
  args.push('-filter_complex', graph.join(';'));
  return [...args, ...sampleOutputs(moments)];
}

/**
 * Arguments for the same run as {@link buildKeyframeSamplesArgs} (the same moments, outputs and
 * keyframes found) reading the source once: from the first moment on, every keyframe decoded and
 * none other, each moment's branch letting through the first frame within its reach. After the
 * input seek the frames' times count from the first moment.
 */
export function buildKeyframeScanArgs(input: string, moments: readonly KeyframeMoment[], o: SampleRunOptions = {}): string[] {
  if (moments.length === 0) throw new Error('No moments to sample.');
  const from = moments[0]!.atSeconds;
  const branches = moments.map((_, i) => `[s${i}]`).join('');
  const graph = [
    `[0:v:0]split=${moments.length}${branches}`,
    ...moments.map((m, i) => {
      const start = m.atSeconds - from;
      // The second trim counts the frames the first lets through: the first keyframe within
      // reach alone goes on. The deinterlacer stands between them, as in the start window's run:
      // here, given that frame alone, it leaves it combed (a DV camcorder's cover).
      const reach = `trim=start=${start.toFixed(3)}:end=${(start + Math.max(0.001, m.withinSeconds)).toFixed(3)}`;
      const first = `[s${i}]${[reach, ...(o.deinterlace ? [DEINTERLACE_FILTER] : []), 'trim=end_frame=1'].join(',')},split=2[k${i}][f${i}]`;
      return `${first};${sampleBranches(i, o, [])}`;
    }),
  ];
  const args = ['-threads', '1', '-skip_frame', 'nokey', ...seekTo(from), ...inputFormatArgs(o.inputFormat ?? null), '-protocol_whitelist', 'file', '-i', absolute(input), '-filter_complex', graph.join(';')];
  return [...args, ...sampleOutputs(moments)];
}

/** Whether a source of this length and picture has its keyframes scanned in one read (see {@link SCAN_BUDGET}). */
export function scansKeyframes(durationSeconds: number, picture: { width: number; height: number } | undefined): boolean {
  return picture !== undefined && durationSeconds * picture.width * picture.height <= SCAN_BUDGET;
}

/** What a sampling run takes besides its input and moments. */
type SampleRunOptions = { inputFormat?: string | null; deinterlace?: boolean; toneMap?: readonly string[] };

/**
 * Moment `i`'s frame, split as `[k<i>]` and `[f<i>]`, made into its grayscale sample `[g<i>]` and
 * its full-size picture `[c<i>]` (square pixels, tone-mapped if asked); `beforeFull` go first on
 * the full picture (the keyframe run's deinterlacer).
 */
function sampleBranches(i: number, o: SampleRunOptions, beforeFull: readonly string[]): string {
  const toneMap = o.toneMap ?? [];
  const sample = `[k${i}]${[`scale=${SAMPLE_SIDE}:${SAMPLE_SIDE}:flags=area`, ...toneMap, 'format=gray'].join(',')}[g${i}]`;
  const full = `[f${i}]${[...beforeFull, ...toneMap, 'scale=iw*sar:ih', 'setsar=1'].join(',')}[c${i}]`;
  return `${sample};${full}`;
}

/** Every moment's outputs: its sample's raw bytes and its full-size picture, raw in NUT (encoded only once chosen). */
function sampleOutputs(moments: ReadonlyArray<{ sample: string; cover: string }>): string[] {
  return moments.flatMap((m, i) => [
    '-map', `[g${i}]`, '-frames:v', '1', '-f', 'rawvideo', '-y', absolute(m.sample),
    '-map', `[c${i}]`, '-frames:v', '1', '-c:v', 'rawvideo', '-f', 'nut', '-y', absolute(m.cover),
  ]);
}

/** One moment of the start window, and where its outputs go. */
export interface WindowMoment {
  atSeconds: number;
  sample: string;
  cover: string;
}

/**
 * Arguments for one run taking several moments of the video's first `windowSeconds` (see the file
 * comment), every frame of the window decoded once: per moment, the first frame at or after it,
 * split into its grayscale sample and its full-size JPEG as {@link buildKeyframeSamplesArgs} does.
 * Times count from the first frame (a transport stream's clock starts anywhere).
 */
export function buildWindowSamplesArgs(input: string, windowSeconds: number, moments: readonly WindowMoment[], o: SampleRunOptions = {}): string[] {
  if (moments.length === 0) throw new Error('No moments to sample.');
  const branches = moments.map((_, i) => `[w${i}]`).join('');
  const graph = [
    `[0:v:0]setpts=PTS-STARTPTS,split=${moments.length}${branches}`,
    ...moments.map((m, i) => {
      // The second trim counts the frames the first lets through: the moment's frame alone goes
      // on. The deinterlacer stands between them, where it still sees the frames around the
      // moment (given one frame alone, it leaves it combed).
      const first = `[w${i}]${[`trim=start=${Math.max(0, m.atSeconds).toFixed(3)}`, ...(o.deinterlace ? [DEINTERLACE_FILTER] : []), 'trim=end_frame=1'].join(',')},split=2[k${i}][f${i}]`;
      return `${first};${sampleBranches(i, o, [])}`;
    }),
  ];
  const args = [...inputFormatArgs(o.inputFormat ?? null), '-t', Math.max(0.001, windowSeconds).toFixed(3), '-protocol_whitelist', 'file', '-i', absolute(input), '-filter_complex', graph.join(';')];
  return [...args, ...sampleOutputs(moments)];
}

/**
 * Samples the video and returns the chosen moment: the non-blank sample with the most contrast,
 * or, if every sample is blank (a black video is still a video), the one with the most contrast.
 * Moments with a keyframe near enough are taken in one run, each with its full-size picture; the
 * others from the video's start window, in one more run. `runs` counts the ffmpeg runs.
 *
 * With `work.dir`, the chosen sample's picture (its `candidate`, raw video in NUT) is left there
 * as `<prefix>k<n>.nut` for the caller to encode and remove; every other file of the run is
 * removed, all of them on a failure. Without it, nothing is left and no sample has a `candidate`.
 */
export async function pickCoverTime(
  input: string,
  durationSeconds: number,
  options: Partial<CoverOptions> = {},
  work: { dir?: string; prefix?: string } = {},
): Promise<{ chosen: CoverSample; samples: CoverSample[]; runs: number }> {
  const o = resolveCoverOptions(options);
  const last = Math.max(0, durationSeconds - 0.1); // a seek to the very end finds no frame
  const times = [...new Set(o.sampleFractions.map((f) => Math.min(last, Math.max(0, f * durationSeconds))))].sort((a, b) => a - b);
  const runOpts: Partial<RunOptions> = { ffmpegPath: o.ffmpegPath, signal: o.signal, pidFile: o.pidFile, memoryLimitBytes: o.memoryLimitBytes };
  const dir = work.dir ?? (await fsp.mkdtemp(path.join(os.tmpdir(), 'vop-cover-')));
  const prefix = work.prefix ?? '';
  const moments = times.map((t, i) => ({
    atSeconds: t,
    withinSeconds: (times[i + 1] ?? durationSeconds) - t,
    sample: path.join(dir, `${prefix}k${i}.gray`),
    cover: path.join(dir, `${prefix}k${i}.nut`),
  }));
  const judge = (atSeconds: number, gray: Uint8Array, candidate?: string): CoverSample | null => {
    if (gray.length < SAMPLE_SIDE * SAMPLE_SIDE) return null; // no frame there
    const stats = lumaStats(gray);
    return { atSeconds, ...stats, blank: isBlankFrame(stats, o), ...(candidate && work.dir ? { candidate } : {}) };
  };
  const frameOpts = { inputFormat: o.inputFormat ?? null, deinterlace: o.deinterlace, toneMap: o.toneMap };
  // The start window's moments, made only for the moments no keyframe reached.
  const windowMoments: WindowMoment[] = [];
  let kept: string | undefined;
  try {
    const keyframes = scansKeyframes(durationSeconds, o.picture) ? buildKeyframeScanArgs : buildKeyframeSamplesArgs;
    await run(keyframes(input, moments, frameOpts), runOpts);
    let runs = 1;
    const samples: Array<CoverSample | null> = [];
    for (const m of moments) samples.push(judge(m.atSeconds, await fsp.readFile(m.sample).catch(() => Buffer.alloc(0)), m.cover));
    const missing = samples.filter((s) => s === null).length;
    if (missing > 0) {
      // No keyframe before the next moment: as many moments spread over the start window, decoded once.
      const window = Math.min(durationSeconds, FALLBACK_WINDOW_SECONDS);
      for (let j = 0; j < missing; j++) {
        windowMoments.push({ atSeconds: (window * (j + 1)) / (missing + 1), sample: path.join(dir, `${prefix}w${j}.gray`), cover: path.join(dir, `${prefix}w${j}.nut`) });
      }
      runs++;
      await run(buildWindowSamplesArgs(input, window, windowMoments, frameOpts), runOpts);
      for (const w of windowMoments) samples.push(judge(w.atSeconds, await fsp.readFile(w.sample).catch(() => Buffer.alloc(0)), w.cover));
    }
    const found = samples.filter((s): s is CoverSample => s !== null);
    if (found.length === 0) return { chosen: { atSeconds: 0, mean: 0, stdDev: 0, blank: true }, samples: found, runs };
    const pool = found.some((s) => !s.blank) ? found.filter((s) => !s.blank) : found;
    const chosen = pool.reduce((best, s) => (s.stdDev > best.stdDev ? s : best));
    kept = chosen.candidate;
    return { chosen, samples: found, runs };
  } finally {
    if (!work.dir) await fsp.rm(dir, { recursive: true, force: true });
    else await Promise.all([...moments, ...windowMoments].flatMap((m) => [m.sample, m.cover]).filter((f) => f !== kept).map((f) => fsp.rm(f, { force: true })));
  }
}

/**
 * Picks a representative frame of `input` and saves it as a full-size JPEG at `output`, with every
 * size of `sizes` made from it; resolves with the chosen sample and the ffmpeg runs it took (2
 * when every moment had a keyframe near: the keyframe run, then the cover and its sizes).
 */
export async function extractCover(
  input: string,
  output: string,
  durationSeconds: number,
  options: Partial<CoverOptions> = {},
  sizes: ReadonlyArray<{ path: string; width: number; height: number }> = [],
): Promise<CoverSample & { runs: number }> {
  const o = resolveCoverOptions(options);
  const runOpts = { ffmpegPath: o.ffmpegPath, signal: o.signal, pidFile: o.pidFile, memoryLimitBytes: o.memoryLimitBytes };
  // The candidates go beside the output (the caller's scratch folder), named after it.
  const { chosen, runs } = await pickCoverTime(input, durationSeconds, o, { dir: path.dirname(absolute(output)), prefix: `${path.basename(output)}.` });
  const { candidate, ...sample } = chosen;
  if (candidate) {
    try {
      await run(buildCoverSetArgs(candidate, output, sizes, o.jpegQuality), runOpts);
    } finally {
      await fsp.rm(candidate, { force: true });
    }
    return { ...sample, runs: runs + 1 };
  }
  // No frame found at all: the source's first, exactly, and its sizes from it.
  await run(buildCoverArgs(input, chosen.atSeconds, output, o.jpegQuality, o.deinterlace, o.inputFormat ?? null, o.toneMap), runOpts);
  if (sizes.length > 0) await run(buildResizeCoverSetArgs(output, sizes, o.jpegQuality), runOpts);
  return { ...sample, runs: runs + (sizes.length > 0 ? 2 : 1) };
}

/** Saves `input` (the full-size cover) cropped to fill exactly width x height, as JPEG at `output`. */
export async function resizeCover(input: string, output: string, width: number, height: number, options: Partial<CoverOptions> = {}): Promise<void> {
  const o = resolveCoverOptions(options);
  await run(buildResizeCoverArgs(input, output, width, height, o.jpegQuality), { ffmpegPath: o.ffmpegPath, signal: o.signal, pidFile: o.pidFile, memoryLimitBytes: o.memoryLimitBytes });
}
