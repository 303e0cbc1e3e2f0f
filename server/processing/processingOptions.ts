import os from 'node:os';
import { assertRetryConfig, type RetryConfig } from '../jobs/retry.js';
import { stripUndefined } from '../media/ffmpegRunner.js';
import { DEFAULT_LADDER_OPTIONS, resolveLadderOptions, type LadderOptions } from '../media/ladder.js';
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
   * Transcodes that run at once. Default: half the cores, at least 1 — one libx264 run already
   * spreads its encoders over every core, so more at once only makes each slower.
   */
  concurrency: number;
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
}

/** Every option may be left out; the ladder and retry may be given in part. */
export type ProcessingOptionsInput = Partial<Omit<ProcessingOptions, 'ladder' | 'retry'>> & {
  ladder?: Partial<LadderOptions>;
  retry?: Partial<RetryConfig>;
};

/** Half the cores the process may use, at least one (see `concurrency`). */
export function defaultTranscodeConcurrency(): number {
  return Math.max(1, Math.floor(os.availableParallelism() / 2));
}

export const DEFAULT_PROCESSING_OPTIONS: ProcessingOptions = {
  ladder: DEFAULT_LADDER_OPTIONS,
  preset: DEFAULT_TRANSCODE_OPTIONS.preset,
  crf: DEFAULT_TRANSCODE_OPTIONS.crf,
  concurrency: defaultTranscodeConcurrency(),
  hls: true,
  hlsSegmentSeconds: 4,
  // A failure that is not the file's fault (ffmpeg killed by the OOM killer, a full disk) gets
  // one more try a little later; a file ffmpeg cannot decode fails the same way twice at most.
  retry: { maxRetries: 1, baseDelayMs: 30_000, maxDelayMs: 30_000, jitter: true },
  coverConcurrency: 2,
  probeTimeoutMs: 60_000,
};

/** Fills defaults and validates; throws an Error that names the bad option (`processing.<field>`). */
export function resolveProcessingOptions(input: ProcessingOptionsInput = {}): ProcessingOptions {
  const d = DEFAULT_PROCESSING_OPTIONS;
  const o: ProcessingOptions = {
    ...d,
    ...stripUndefined(input),
    ladder: named('processing.ladder', () => resolveLadderOptions({ ...d.ladder, ...input.ladder })),
    retry: { ...d.retry, ...input.retry },
  };
  const labels = new Set<string>();
  for (const [i, r] of o.ladder.rungs.entries()) {
    if (!LABEL_RE.test(r.label)) throw new Error(`Option processing.ladder.rungs[${i}].label "${r.label}" must be letters, digits, _ or - (it names files).`);
    if (labels.has(r.label)) throw new Error(`Option processing.ladder.rungs[${i}].label "${r.label}" appears twice.`);
    labels.add(r.label);
  }
  named('processing', () => resolveTranscodeOptions({ preset: o.preset, crf: o.crf }));
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1) throw new Error('Option processing.concurrency must be a whole number of at least 1.');
  if (typeof o.hls !== 'boolean') throw new Error('Option processing.hls must be true or false.');
  if (!(Number.isFinite(o.hlsSegmentSeconds) && o.hlsSegmentSeconds >= 1)) throw new Error('Option processing.hlsSegmentSeconds must be at least 1.');
  assertRetryConfig('Option processing.retry', o.retry);
  for (const key of ['ffmpegPath', 'ffprobePath'] as const) {
    if (o[key] !== undefined && (typeof o[key] !== 'string' || o[key] === '')) throw new Error(`Option processing.${key} must be a non-empty path.`);
  }
  if (!Number.isInteger(o.coverConcurrency) || o.coverConcurrency < 1) throw new Error('Option processing.coverConcurrency must be a whole number of at least 1.');
  if (!(Number.isFinite(o.probeTimeoutMs) && o.probeTimeoutMs > 0)) throw new Error('Option processing.probeTimeoutMs must be greater than 0.');
  return o;
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
