/**
 * Pure builders of ffmpeg arguments for the renditions (issue 4, item 3). Nothing here runs a
 * process or touches a file; ffmpegRunner.ts runs what these return.
 *
 * All rungs come from ONE ffmpeg invocation: the source is decoded once and `split` feeds one
 * scaler and one libx264 encoder per rung. Decoding is a large share of the work for H.264/HEVC
 * sources (all of it is repeated per rung when each rung is its own process), the encoders run in
 * parallel inside one process, and a job has one process to track, report on and cancel. The
 * price: the rungs finish together, and a failure fails them all (the job retries as a whole anyway).
 *
 * Paths must be absolute: ffmpeg reads "name:rest" as a protocol, and an absolute path cannot
 * start with a protocol name or with "-".
 */
import path from 'node:path';
import { timeList } from './timeList.js';
import { hdrTransferOf, SDR_OUTPUT_TAGS, toneMapFilters, type ColourInfo } from './toneMapping.js';
import type { Rendition } from './ladder.js';
import type { VideoInfo } from './probe.js';
import { demuxerOf } from './sourcePolicy.js';

/** Options of {@link buildTranscodeArgs}. */
export interface TranscodeOptions {
  /** libx264 preset: slower presets give smaller files for the same quality. Tests use "ultrafast". */
  preset: 'ultrafast' | 'superfast' | 'veryfast' | 'faster' | 'fast' | 'medium' | 'slow' | 'slower' | 'veryslow';
  /**
   * Constant rate factor (0-51, lower is better). Each rung is encoded at this quality but
   * capped at its bitrate (`-maxrate`), so simple pictures do not waste bits and busy ones do not
   * exceed what the rung promises (PeerTube's "capped CRF").
   */
  crf: number;
  /** The VBV buffer as a multiple of the rung's bitrate; larger lets the bitrate swing more. */
  bufferFactor: number;
  /** A keyframe at least every this many seconds, so HLS segments can cut on them and seeking is quick. */
  keyframeIntervalSeconds: number;
  /** Audio channels of the output; 2 folds surround down to stereo, which every browser plays. */
  audioChannels: number;
  /** libx264 threads per rung; 0 lets x264 choose (all cores). */
  threads: number;
  /**
   * Frames per second the renditions keep at most: a 120 fps capture is halved to 60, which is
   * what browsers and phones decode smoothly and what H.264 levels assume.
   */
  maxFrameRate: number;
  /**
   * Whether HDR sources (HLG, PQ) are tone-mapped to BT.709 SDR (toneMapping.ts): true where the
   * ffmpeg in use has the filters it needs (FfmpegTools.toneMapping); false converts them without
   * it, as they come out of the decoder (washed out).
   */
  toneMapping: boolean;
}

export const DEFAULT_TRANSCODE_OPTIONS = {
  preset: 'veryfast',
  crf: 23,
  bufferFactor: 2,
  keyframeIntervalSeconds: 2,
  audioChannels: 2,
  threads: 0,
  maxFrameRate: 60,
  toneMapping: true,
} satisfies TranscodeOptions;

const PRESETS = new Set(['ultrafast', 'superfast', 'veryfast', 'faster', 'fast', 'medium', 'slow', 'slower', 'veryslow']);

/** Fills defaults and validates; throws an Error that names the bad option. */
export function resolveTranscodeOptions(input: Partial<TranscodeOptions> = {}): TranscodeOptions {
  const o: TranscodeOptions = { ...DEFAULT_TRANSCODE_OPTIONS, ...input };
  if (!PRESETS.has(o.preset)) throw new Error(`Option preset "${o.preset}" is not a libx264 preset.`);
  if (!(Number.isInteger(o.crf) && o.crf >= 0 && o.crf <= 51)) throw new Error('Option crf must be a whole number from 0 to 51.');
  if (!(o.bufferFactor > 0)) throw new Error('Option bufferFactor must be greater than 0.');
  if (!(o.keyframeIntervalSeconds > 0)) throw new Error('Option keyframeIntervalSeconds must be greater than 0.');
  if (!(Number.isInteger(o.audioChannels) && o.audioChannels >= 1 && o.audioChannels <= 8)) throw new Error('Option audioChannels must be a whole number from 1 to 8.');
  if (!(Number.isInteger(o.threads) && o.threads >= 0)) throw new Error('Option threads must be a whole number, 0 or more.');
  if (!(Number.isFinite(o.maxFrameRate) && o.maxFrameRate >= 1)) throw new Error('Option maxFrameRate must be at least 1.');
  if (typeof o.toneMapping !== 'boolean') throw new Error('Option toneMapping must be true or false.');
  return o;
}

/** One output file of a transcode. */
export interface TranscodeOutput {
  rendition: Rendition;
  /** Absolute path to write (a temporary name; see atomicFile.ts). */
  path: string;
}

/**
 * What {@link buildTranscodeArgs} needs to know of the source; with `formatName`, the file is
 * read with that demuxer (`-f`), as what ffprobe judged it, never as what ffmpeg guesses anew.
 */
export type TranscodeSource = Pick<VideoInfo, 'audioCodec' | 'frameRate' | 'nominalFrameRate' | 'interlaced' | 'storedWidth' | 'storedHeight'> &
  Partial<Pick<VideoInfo, 'formatName'>> &
  Partial<ColourInfo>;

/**
 * Arguments for one ffmpeg run producing every output: H.264 (libx264, yuv420p) + AAC in MP4,
 * the index (moov) at the front (`+faststart`) so playback starts before the download ends.
 * `source.audioCodec` null: video only, no audio track (mapping a missing stream is an error).
 */
export function buildTranscodeArgs(
  input: string,
  source: TranscodeSource,
  outputs: readonly TranscodeOutput[],
  options: TranscodeOptions = DEFAULT_TRANSCODE_OPTIONS,
  keys: KeyframePlan = {},
): string[] {
  if (outputs.length === 0) throw new Error('buildTranscodeArgs needs at least one output.');
  const o = options;
  // Autorotation (ffmpeg's default) turns the picture upright while decoding, so scaling to the
  // displayed size is right; setsar=1 then makes the pixels square, which is what those sizes assume.
  const chains = outputs.map((out, i) => `[s${i}]scale=${out.rendition.width}:${out.rendition.height}:flags=bicubic,setsar=1,format=yuv420p[v${i}]`);
  const shared = sourceFilters(source, o).map((f) => `${f},`).join('');
  const toneMapped = o.toneMapping && hdrTransferOf(source) !== null;
  const graph = `[0:v:0]${shared}split=${outputs.length}${outputs.map((_, i) => `[s${i}]`).join('')};${chains.join(';')}`;
  const args = [...inputFormatArgs(demuxerOf(source.formatName)), '-protocol_whitelist', 'file', '-i', absolute(input), '-filter_complex', graph];
  outputs.forEach((out, i) => {
    const r = out.rendition;
    args.push('-map', `[v${i}]`);
    if (source.audioCodec !== null) args.push('-map', '0:a:0');
    args.push(
      '-c:v', 'libx264',
      '-preset', o.preset,
      '-profile:v', 'high',
      '-crf', String(o.crf),
      '-maxrate', `${r.videoBitrateKbps}k`,
      '-bufsize', `${Math.round(r.videoBitrateKbps * o.bufferFactor)}k`,
      ...keyframeArgs(source, o, keys),
    );
    if (o.threads > 0) args.push('-threads', String(o.threads));
    if (source.audioCodec !== null) args.push('-c:a', 'aac', '-b:a', `${r.audioBitrateKbps}k`, '-ac', String(o.audioChannels));
    // Tone-mapped: tagged as what it now is, not as the source's HLG or PQ.
    if (toneMapped) args.push(...SDR_OUTPUT_TAGS);
    args.push(...mp4OutputArgs(out.path));
  });
  return args;
}

/** Where an encode puts keyframes besides one every `keyframeIntervalSeconds`. */
export interface KeyframePlan {
  /**
   * Times (seconds) that must each start with a keyframe: the cuts of the HLS variants already
   * listed, so that the new rungs' segments start where theirs do (media/hls.ts). At most
   * `MAX_TIME_LIST_CHARS` characters as a list (timeList.ts).
   */
  at?: readonly number[];
}

/**
 * A keyframe every `keyframeIntervalSeconds` (on the dot), or, with `keys.at`, one at each of
 * those times and x264's own every interval after the last (`-g`, in frames of the output).
 * ffmpeg forces each on the frame nearest its time.
 */
function keyframeArgs(source: Pick<VideoInfo, 'frameRate'>, o: TranscodeOptions, keys: KeyframePlan): string[] {
  const list = keys.at && keys.at.length > 0 ? timeList(keys.at) : null;
  if (keys.at && keys.at.length > 0 && list === null) throw new Error(`Too many keyframe times to pass to ffmpeg (${keys.at.length}).`);
  if (list === null) return ['-force_key_frames', `expr:gte(t,n_forced*${o.keyframeIntervalSeconds})`];
  const fps = Math.min(o.maxFrameRate, source.frameRate ?? 25);
  return ['-force_key_frames', list, '-g', String(Math.max(1, Math.round(fps * o.keyframeIntervalSeconds)))];
}

/** How every rendition is written: a faststart MP4 at `file`, without the source's metadata. */
export function mp4OutputArgs(file: string): string[] {
  return [
    // Drop the source's metadata: phone clips carry GPS positions, and a rotate tag would turn
    // the already upright picture a second time.
    '-map_metadata', '-1',
    '-map_chapters', '-1',
    // Several encoders start at different speeds; without room to queue, ffmpeg 4.x aborts with
    // "Too many packets buffered for output stream".
    '-max_muxing_queue_size', '1024',
    '-movflags', '+faststart',
    '-f', 'mp4',
    '-y', absolute(file),
  ];
}

/**
 * Filters every rendition shares, before the split: deinterlacing, tone mapping of an HDR source
 * (toneMapping.ts), then the frame rate.
 *
 * bwdif with `deint=interlaced` turns only the frames the decoder flags as interlaced into whole
 * pictures (one per frame, so the rate stays), and passes progressive ones untouched: it runs
 * unless ffprobe says the stream is progressive, since DV and many transport streams do not say.
 * A DVD or camcorder clip scaled without it keeps the two fields' moments combed into each frame.
 * bwdif cannot take a picture under 3 columns or 4 lines; nothing that small is interlaced.
 *
 * The MP4 output runs at a constant rate, which ffmpeg fills to the source's nominal rate by
 * repeating frames: for a WebM or MKV with millisecond timestamps (browsers' and OBS's
 * recordings) that is 1000 fps, some thirty copies of every real frame. When the nominal or the
 * real rate passes `maxFrameRate`, an `fps` filter sets the real average rate, at most the cap.
 * (A variable-rate output, `-vsync vfr`, would keep the frames as they are, but ffmpeg's HLS
 * muxer then sums the MP4's packet durations and writes a wrong length for the last segment.)
 */
export function sourceFilters(source: Omit<TranscodeSource, 'audioCodec'>, options: Pick<TranscodeOptions, 'maxFrameRate' | 'toneMapping'> = DEFAULT_TRANSCODE_OPTIONS): string[] {
  const filters: string[] = [];
  if (mayBeInterlaced(source)) filters.push(DEINTERLACE_FILTER);
  // Once, before the split: every rung (and so every HLS segment) shares the tone-mapped picture.
  if (options.toneMapping) filters.push(...toneMapFilters(source));
  const cap = options.maxFrameRate;
  if ((source.nominalFrameRate ?? 0) > cap || (source.frameRate ?? 0) > cap) filters.push(`fps=${Math.min(cap, source.frameRate ?? cap)}`);
  return filters;
}

/** Deinterlaces the frames flagged interlaced, one picture per frame; see {@link sourceFilters}. */
export const DEINTERLACE_FILTER = 'bwdif=mode=send_frame:parity=auto:deint=interlaced';

/** Whether {@link DEINTERLACE_FILTER} goes first: unless known progressive, or too small for bwdif. */
export function mayBeInterlaced(source: Pick<VideoInfo, 'interlaced' | 'storedWidth' | 'storedHeight'>): boolean {
  return source.interlaced !== false && Math.min(source.storedWidth, source.storedHeight) >= 4;
}

/**
 * The single rendition of a `needHandleSepcial` video: the source kept as it is, no re-encoding
 * (issue 3, item 5). The caller copies the file; this only describes it for `VideoPlayFile`,
 * with the file's overall bitrate as its video bitrate.
 */
export function sourceRendition(source: Pick<VideoInfo, 'width' | 'height' | 'bitrateKbps'>): Rendition {
  const short = Math.min(source.width, source.height);
  return { label: `${short}p`, width: source.width, height: source.height, videoBitrateKbps: source.bitrateKbps ?? 0, audioBitrateKbps: 0 };
}

/** Whether a kept source can be repackaged as HLS without re-encoding (the codecs HLS players take). */
export function canRepackageAsHls(source: Pick<VideoInfo, 'videoCodec' | 'audioCodec'>): boolean {
  return source.videoCodec === 'h264' && (source.audioCodec === null || source.audioCodec === 'aac' || source.audioCodec === 'mp3');
}

/**
 * `-f <demuxer>` before an input: ffmpeg then reads the file with the demuxer ffprobe judged it
 * by (and allowed: sourcePolicy.ts), and fails rather than probe it as something else.
 */
export function inputFormatArgs(demuxer: string | null | undefined): string[] {
  return demuxer ? ['-f', demuxer] : [];
}

/** Returns `p` if absolute; throws otherwise (see the file comment for why ffmpeg paths must be). */
export function absolute(p: string): string {
  if (!path.isAbsolute(p)) throw new Error(`ffmpeg paths must be absolute (got "${p}").`);
  return p;
}
