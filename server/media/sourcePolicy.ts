/**
 * Which sources vop takes on (issue 12, items 8 and 11): an allow-list of the containers and
 * codecs people really upload, and limits on what one transcode may cost. Pure: the verdict on a
 * probed file, nothing run.
 *
 * Why an allow-list: ffmpeg can demux and decode hundreds of formats, and the rarely used ones
 * (RealMedia, Cinepak, game and surveillance formats) are where its decoder overflows have been
 * found. A file is decoded as what ffprobe judged it (the transcode passes `-f` with the demuxer
 * of {@link demuxerOf}), only its first video and first audio streams are decoded (the only ones
 * mapped), so the container and those two codecs are what gets checked.
 *
 * Why limits: a 194 KB 8000x8000 clip took 55 s of the only transcode slot, and a 4.5 MB
 * 16000x16000 Motion JPEG drove ffmpeg past 2.5 GB. The cost of a decode grows with the pixels
 * per frame, the frames per second and the length, none of which the file's size tells.
 */
import { BUILT_IN_CONTAINERS } from './demuxers.js';
import type { VideoInfo } from './probe.js';

/** What one source may cost; a source over any of them is refused before it is transcoded. */
export interface SourceLimits {
  /** Longest side of the picture, stored or displayed, in pixels (8192: 8K DCI). */
  maxSide: number;
  /** Pixels per frame, stored or displayed (36 million: 8192x4320 fits). */
  maxPixels: number;
  /** Average frames per second (240: high-speed phone captures). */
  maxFrameRate: number;
  /** Playing time in seconds (12 hours). */
  maxDurationSeconds: number;
}

export const DEFAULT_SOURCE_LIMITS = {
  maxSide: 8192,
  maxPixels: 36_000_000,
  maxFrameRate: 240,
  maxDurationSeconds: 12 * 3600,
} satisfies SourceLimits;

/**
 * Names to admit on top of the built-in lists. A container is one of the names in ffprobe's
 * `format_name` ("rm" for RealMedia; "mov" stands for "mov,mp4,m4a,3gp,3g2,mj2"); a codec is
 * ffprobe's `codec_name` ("cinepak"). A name ending in `*` admits every name it starts.
 */
export interface AllowedFormats {
  containers: string[];
  videoCodecs: string[];
  audioCodecs: string[];
}

/**
 * The built-in allow-list: what phones, cameras, screen recorders, browsers, editors, DVDs,
 * camcorders and the usual downloads produce (the sources of test/media/media-sources.test.ts and a few
 * more of their kind).
 */
export const DEFAULT_ALLOWED_FORMATS: Readonly<AllowedFormats> = Object.freeze({
  containers: [...BUILT_IN_CONTAINERS],
  videoCodecs: [
    'h264', 'hevc', 'av1', 'vp8', 'vp9',
    'mpeg4', 'msmpeg4v2', 'msmpeg4v3', // XviD, DivX
    'wmv1', 'wmv2', 'wmv3', 'vc1',
    'mpeg1video', 'mpeg2video',
    'mjpeg', 'prores', 'dnxhd', 'dvvideo',
    'h263', 'h263p', 'flv1', 'theora',
  ],
  audioCodecs: [
    'aac', 'mp3', 'mp2', 'ac3', 'eac3', 'dts', 'opus', 'vorbis', 'flac', 'alac',
    'wmav1', 'wmav2', 'wmapro', 'amr_nb', 'amr_wb',
    'pcm_*',
  ],
});

/** The option paths named in refusals, so an admin knows what to change. */
const OPTION = {
  containers: 'processing.allowFormats.containers',
  videoCodecs: 'processing.allowFormats.videoCodecs',
  audioCodecs: 'processing.allowFormats.audioCodecs',
  limits: 'processing.sourceLimits',
} as const;

/** What {@link judgeSource} checks against: the limits and the whole allow-list (built-in and added). */
export interface SourcePolicy {
  limits: SourceLimits;
  allowed: AllowedFormats;
}

/** The built-in lists with `extra` added. */
export function allowedFormats(extra: Partial<AllowedFormats> = {}): AllowedFormats {
  const d = DEFAULT_ALLOWED_FORMATS;
  return {
    containers: [...d.containers, ...(extra.containers ?? [])],
    videoCodecs: [...d.videoCodecs, ...(extra.videoCodecs ?? [])],
    audioCodecs: [...d.audioCodecs, ...(extra.audioCodecs ?? [])],
  };
}

/** Validates `extra` (names only: lower-case letters, digits, `_`, an optional final `*`); throws naming the bad entry. */
export function assertAllowedFormats(prefix: string, extra: Partial<AllowedFormats>): void {
  for (const key of ['containers', 'videoCodecs', 'audioCodecs'] as const) {
    const list = extra[key];
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw new Error(`Option ${prefix}.${key} must be a list of names.`);
    for (const [i, name] of list.entries()) {
      if (typeof name !== 'string' || !/^[a-z0-9_]+\*?$/.test(name)) throw new Error(`Option ${prefix}.${key}[${i}] must be an ffprobe name such as "rm" or "cinepak" (lower-case letters, digits, _; a final * for a prefix).`);
    }
  }
}

/** Validates limits; throws naming the bad one. */
export function assertSourceLimits(prefix: string, limits: SourceLimits): void {
  for (const key of ['maxSide', 'maxPixels', 'maxFrameRate', 'maxDurationSeconds'] as const) {
    if (!(Number.isFinite(limits[key]) && limits[key] > 0)) throw new Error(`Option ${prefix}.${key} must be a number greater than 0.`);
  }
}

/**
 * Why `info` is refused, or null when it is taken. The reason reads after "not a video: " and
 * names the limit or the list an admin can change.
 */
export function judgeSource(info: VideoInfo, policy: SourcePolicy): string | null {
  const { limits, allowed } = policy;
  const containers = info.formatName.split(',');
  if (!containers.some((c) => matches(c, allowed.containers))) {
    return `its container (${info.formatName}) is not one vop accepts; an admin can allow it (${OPTION.containers})`;
  }
  if (!matches(info.videoCodec, allowed.videoCodecs)) {
    return `its video codec (${info.videoCodec}) is not one vop accepts; an admin can allow it (${OPTION.videoCodecs})`;
  }
  if (info.audioCodec !== null && !matches(info.audioCodec, allowed.audioCodecs)) {
    return `its audio codec (${info.audioCodec}) is not one vop accepts; an admin can allow it (${OPTION.audioCodecs})`;
  }
  // Stored and displayed sizes both: the decoder works on the one, the scaler writes the other
  // (non-square pixels can stretch a narrow picture into a very wide one).
  const sides = [info.storedWidth, info.storedHeight, info.width, info.height];
  const size = `${info.storedWidth}x${info.storedHeight}${info.width !== info.storedWidth || info.height !== info.storedHeight ? `, shown ${info.width}x${info.height}` : ''}`;
  if (Math.max(...sides) > limits.maxSide) {
    return `its picture (${size}) is over the limit of ${limits.maxSide} pixels a side (${OPTION.limits}.maxSide)`;
  }
  const pixels = Math.max(info.storedWidth * info.storedHeight, info.width * info.height);
  if (pixels > limits.maxPixels) {
    return `its picture (${size}, ${megapixels(pixels)}) is over the limit of ${megapixels(limits.maxPixels)} (${OPTION.limits}.maxPixels)`;
  }
  // The average rate only: the nominal one is 1000 for any WebM or MKV with millisecond
  // timestamps. A file that reports none is bounded by the attempt's deadline instead.
  const fps = info.averageFrameRate ?? null;
  if (fps !== null && fps > limits.maxFrameRate) {
    return `its frame rate (${fps} fps) is over the limit of ${limits.maxFrameRate} fps (${OPTION.limits}.maxFrameRate)`;
  }
  if (info.durationSeconds > limits.maxDurationSeconds) {
    return `its playing time (${duration(info.durationSeconds)}) is over the limit of ${duration(limits.maxDurationSeconds)} (${OPTION.limits}.maxDurationSeconds)`;
  }
  return null;
}

/**
 * `info` without the audio streams after the first whose codec the allow-list does not take:
 * those are dropped rather than the video refused (the first, which every rendition carries, is
 * judged by {@link judgeSource}), and no decoder outside the list ever reads them.
 */
export function withAllowedTracks(info: VideoInfo, policy: Pick<SourcePolicy, 'allowed'>): VideoInfo {
  if (!info.audioTracks) return info;
  return { ...info, audioTracks: info.audioTracks.filter((t, i) => i === 0 || matches(t.codec, policy.allowed.audioCodecs)) };
}

/**
 * The demuxer to name with `-f` for a file ffprobe read as `formatName`: the first of its names
 * ("mov" for "mov,mp4,m4a,3gp,3g2,mj2", "matroska" for "matroska,webm"), which ffmpeg's `-f`
 * matches against each name of a demuxer. Null when there is none to name.
 */
export function demuxerOf(formatName: string | undefined | null): string | null {
  const first = formatName?.split(',')[0]?.trim() ?? '';
  return /^[a-z0-9_]+$/.test(first) ? first : null;
}

function matches(name: string, list: readonly string[]): boolean {
  return list.some((entry) => (entry.endsWith('*') ? name.startsWith(entry.slice(0, -1)) : name === entry));
}

function megapixels(pixels: number): string {
  return `${Math.round(pixels / 100_000) / 10} megapixels`;
}

function duration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = Math.round(seconds % 60);
  return h > 0 ? `${h} h${m > 0 ? ` ${m} min` : ''}` : m > 0 ? `${m} min${s > 0 ? ` ${s} s` : ''}` : `${Math.round(seconds * 10) / 10} s`;
}
