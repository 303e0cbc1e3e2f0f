import os from 'node:os';
import { assertRetryConfig, type RetryConfig } from '../core/retry.js';
import { stripUndefined } from '../media/ffmpegRunner.js';
import { DEFAULT_LADDER_OPTIONS, resolveLadderOptions, type LadderOptions } from '../media/ladder.js';
import { allowedFormats, assertAllowedFormats, assertSourceLimits, DEFAULT_SOURCE_LIMITS, type AllowedFormats, type SourceLimits, type SourcePolicy } from '../media/sourcePolicy.js';
import { DEFAULT_TRANSCODE_OPTIONS, resolveTranscodeOptions, type TranscodeOptions } from '../media/transcodeArgs.js';
import { LABEL_RE } from './mediaNames.js';

/** Options of transcoding and delivery (`processing` in the server options). */
export interface ProcessingOptions {
  /** The rendition ladder: rungs (label, shorter side, video kbps), audio kbps (defaults in media/ladder.ts). */
  ladder: LadderOptions;
  /** libx264 preset of the renditions; slower presets give smaller files for the same quality. */
  preset: TranscodeOptions['preset'];
  /** libx264 constant rate factor (0-51, lower is better), capped by each rung's bitrate. */
  crf: number;
  /**
   * Transcodes (first renditions) that run at once. Default: half the cores, at least 3. One
   * libx264 run already spreads over every core, so more at once only makes each slower; but most
   * first renditions are copies, which take about a second of CPU, much of it starting programs
   * and waiting on the disk, and a second slot keeps one from waiting behind another's lowest
   * rung (an H.264 upload behind an HEVC one). With two slots, the third of three uploads sent at
   * once waited for a whole copy before its own began (issue 37: 3.1 s to playable, against 2.1 s
   * for the other two).
   */
  concurrency: number;
  /**
   * Ladders (the rungs after a video's first rendition) that run at once. They run at a lower CPU
   * priority than first renditions and start only while no video waits for its first one.
   */
  ladderConcurrency: number;
  /** Also package the renditions as HLS (a master playlist, `HlsURL` in the detail response). */
  hls: boolean;
  /** Target HLS segment length in seconds (a multiple of the 2 s keyframe interval cuts cleanly). */
  hlsSegmentSeconds: number;
  /** Retries of a failed transcode (a file that is not a video fails at once, without retries). */
  retry: RetryConfig;
  /** ffmpeg executable; overrides VOP_FFMPEG_PATH and the packaged binaries. */
  ffmpegPath?: string;
  /** ffprobe executable; overrides VOP_FFPROBE_PATH and the packaged binaries. */
  ffprobePath?: string;
  /** Cover sizes (spec 2.3 `?t=`) made at once on first request, across all videos. */
  coverConcurrency: number;
  /** Time ffprobe may take on a source before the attempt fails. */
  probeTimeoutMs: number;
  /**
   * What one source may cost: pixels a side and per frame, frames per second, playing time. A
   * source over any is refused when it arrives (7, "not a video: …", the limit named).
   */
  sourceLimits: SourceLimits;
  /**
   * Containers and codecs (ffprobe names) admitted on top of the built-in allow-list
   * (media/sourcePolicy.ts); anything else is refused when it arrives, naming what to add here.
   */
  allowFormats: AllowedFormats;
  /**
   * Cap on the address space of each ffmpeg and ffprobe run, in bytes (Linux with prlimit; 0:
   * none). A file that needs more fails with the cap as its reason instead of taking the
   * machine. Default: 2 GiB plus 256 MiB per core, at least 4 GiB (see {@link defaultMemoryLimitBytes}).
   */
  memoryLimitBytes: number;
  /**
   * How long one transcode attempt may take: the larger of `minMs` and `perSourceSecondMs` per
   * second of the source's playing time. Past it ffmpeg is killed and the video fails (7) with
   * that reason (no retry: it would take as long again).
   */
  jobTimeout: { minMs: number; perSourceSecondMs: number };
}

/** Every option may be left out; the ladder, retry, limits, allow-list and timeout may be given in part. */
export type ProcessingOptionsInput = Partial<Omit<ProcessingOptions, 'ladder' | 'retry' | 'sourceLimits' | 'allowFormats' | 'jobTimeout'>> & {
  ladder?: Partial<LadderOptions>;
  retry?: Partial<RetryConfig>;
  sourceLimits?: Partial<SourceLimits>;
  allowFormats?: Partial<AllowedFormats>;
  jobTimeout?: Partial<ProcessingOptions['jobTimeout']>;
};

/**
 * The default memory cap of one ffmpeg run. Measured (VmPeak, the address space prlimit caps) on
 * the default ladder: 1.2-1.4 GB from a 1080p or 4K H.264 source and 1.9 GB from an 8K HEVC one
 * on 2 cores; 5-7 GB with 48 encoder threads a rung, as libx264 starts on a 32-core machine (each
 * thread reserves its stack and malloc arena). So a floor, plus room per core.
 */
export function defaultMemoryLimitBytes(): number {
  return Math.max(4 * 2 ** 30, 2 * 2 ** 30 + os.availableParallelism() * 256 * 2 ** 20);
}

/** Half the cores the process may use, at least three (see `concurrency`). */
export function defaultTranscodeConcurrency(): number {
  return Math.max(3, Math.floor(os.availableParallelism() / 2));
}

export const DEFAULT_PROCESSING_OPTIONS: ProcessingOptions = {
  ladder: DEFAULT_LADDER_OPTIONS,
  preset: DEFAULT_TRANSCODE_OPTIONS.preset,
  crf: DEFAULT_TRANSCODE_OPTIONS.crf,
  concurrency: defaultTranscodeConcurrency(),
  ladderConcurrency: 1,
  hls: true,
  hlsSegmentSeconds: 4,
  // A failure that is not the file's fault (ffmpeg killed by the OOM killer, a full disk) gets
  // one more try a little later; a file ffmpeg cannot decode fails the same way twice at most.
  retry: { maxRetries: 1, baseDelayMs: 30_000, maxDelayMs: 30_000, jitter: true },
  coverConcurrency: 2,
  probeTimeoutMs: 60_000,
  sourceLimits: DEFAULT_SOURCE_LIMITS,
  allowFormats: { containers: [], videoCodecs: [], audioCodecs: [] },
  memoryLimitBytes: defaultMemoryLimitBytes(),
  jobTimeout: { minMs: 10 * 60_000, perSourceSecondMs: 20_000 },
};

/** Fills defaults and validates; throws an Error that names the bad option (`processing.<field>`). */
export function resolveProcessingOptions(input: ProcessingOptionsInput = {}): ProcessingOptions {
  const d = DEFAULT_PROCESSING_OPTIONS;
  const o: ProcessingOptions = {
    ...d,
    ...stripUndefined(input),
    ladder: named('processing.ladder', () => resolveLadderOptions({ ...d.ladder, ...input.ladder })),
    retry: { ...d.retry, ...input.retry },
    sourceLimits: { ...d.sourceLimits, ...stripUndefined(input.sourceLimits ?? {}) },
    allowFormats: { ...d.allowFormats, ...stripUndefined(input.allowFormats ?? {}) },
    jobTimeout: { ...d.jobTimeout, ...stripUndefined(input.jobTimeout ?? {}) },
  };
  const labels = new Set<string>();
  for (const [i, r] of o.ladder.rungs.entries()) {
    if (!LABEL_RE.test(r.label)) throw new Error(`Option processing.ladder.rungs[${i}].label "${r.label}" must be letters, digits, _ or - (it names files).`);
    if (labels.has(r.label)) throw new Error(`Option processing.ladder.rungs[${i}].label "${r.label}" appears twice.`);
    labels.add(r.label);
  }
  named('processing', () => resolveTranscodeOptions({ preset: o.preset, crf: o.crf }));
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1) throw new Error('Option processing.concurrency must be a whole number of at least 1.');
  if (!Number.isInteger(o.ladderConcurrency) || o.ladderConcurrency < 1) throw new Error('Option processing.ladderConcurrency must be a whole number of at least 1.');
  if (typeof o.hls !== 'boolean') throw new Error('Option processing.hls must be true or false.');
  if (!(Number.isFinite(o.hlsSegmentSeconds) && o.hlsSegmentSeconds >= 1)) throw new Error('Option processing.hlsSegmentSeconds must be at least 1.');
  assertRetryConfig('Option processing.retry', o.retry);
  for (const key of ['ffmpegPath', 'ffprobePath'] as const) {
    if (o[key] !== undefined && (typeof o[key] !== 'string' || o[key] === '')) throw new Error(`Option processing.${key} must be a non-empty path.`);
  }
  if (!Number.isInteger(o.coverConcurrency) || o.coverConcurrency < 1) throw new Error('Option processing.coverConcurrency must be a whole number of at least 1.');
  if (!(Number.isFinite(o.probeTimeoutMs) && o.probeTimeoutMs > 0)) throw new Error('Option processing.probeTimeoutMs must be greater than 0.');
  assertSourceLimits('processing.sourceLimits', o.sourceLimits);
  assertAllowedFormats('processing.allowFormats', o.allowFormats);
  // Debian's ffmpeg 5.1 maps some 265 MB (its libraries) before it reads a byte.
  if (!(Number.isFinite(o.memoryLimitBytes) && (o.memoryLimitBytes === 0 || o.memoryLimitBytes >= 512 * 2 ** 20))) {
    throw new Error('Option processing.memoryLimitBytes must be 0 (no cap) or at least 536870912 (512 MiB: ffmpeg needs about half of that to start).');
  }
  for (const key of ['minMs', 'perSourceSecondMs'] as const) {
    if (!(Number.isFinite(o.jobTimeout[key]) && o.jobTimeout[key] > 0)) throw new Error(`Option processing.jobTimeout.${key} must be greater than 0.`);
  }
  return o;
}

/** The sources processing takes on: the built-in allow-list with the option's additions, and the limits. */
export function sourcePolicyOf(o: ProcessingOptions): SourcePolicy {
  return { limits: o.sourceLimits, allowed: allowedFormats(o.allowFormats) };
}

/** How long one transcode attempt of a source this long may take, in ms (see `jobTimeout`). */
export function transcodeTimeoutMs(o: ProcessingOptions, durationSeconds: number): number {
  return Math.max(o.jobTimeout.minMs, o.jobTimeout.perSourceSecondMs * durationSeconds);
}

/** The transcode options our jobs use, from the processing options. */
export function transcodeOptionsOf(o: ProcessingOptions): TranscodeOptions {
  return resolveTranscodeOptions({ preset: o.preset, crf: o.crf });
}

/** Runs a resolver of the ffmpeg layer, whose messages say "Option x", so they name `prefix.x`. */
function named<T>(prefix: string, resolve: () => T): T {
  try {
    return resolve();
  } catch (err) {
    throw new Error((err as Error).message.replace(/^Options? /, (m) => `${m}${prefix}.`));
  }
}
