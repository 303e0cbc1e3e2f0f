/**
 * A first rendition without encoding: a source that browsers already play (H.264 8-bit 4:2:0 up
 * to 1080p, in MP4, MOV, Matroska or MPEG-TS) is copied, stream for stream, into a faststart MP4.
 * That takes about as long as reading the file, so the video is playable seconds after it came,
 * whatever its length; the ladder is encoded after (processing/ladderJob.ts). Pure: nothing here
 * runs a process; ffmpegRunner.ts runs what {@link buildCopyArgs} returns.
 */
import type { SpsFacts } from './h264Sps.js';
import type { VideoInfo } from './probe.js';
import { demuxerOf } from './sourcePolicy.js';
import { hdrName, hdrTransferOf } from './toneMapping.js';
import { absolute, inputFormatArgs, mp4OutputArgs, type TranscodeOptions } from './transcodeArgs.js';

/** What happens to the audio of a copied source: kept, made AAC, or there is none. */
export type CopiedAudio = 'copy' | 'aac' | 'none';

/** Whether the source can be copied as it is, and its audio; or why not, for the log. */
export type CopyVerdict = { copy: true; audio: CopiedAudio } | { copy: false; why: string };

/** Containers (ffprobe's names, any of a demuxer's) whose H.264 goes into MP4 as it is. */
const COPIED_CONTAINERS = new Set(['mov', 'mp4', 'matroska', 'mpegts']);

/**
 * 8-bit 4:2:0 in the limited range, what every browser's H.264 decoder takes as it is. Full range
 * (yuvj420p, from some cameras) plays too, but not everywhere with the right levels: the ladder
 * makes it limited-range.
 */
const BROWSER_PIXEL_FORMATS = new Set(['yuv420p']);

/** The largest picture copied: 1080p either way round; larger sources are encoded down. */
const MAX_SHORT_SIDE = 1080;
const MAX_LONG_SIDE = 1920;

/**
 * Whether `info` plays in browsers as it is. What the ladder changes on the way is a reason to
 * encode: interlacing (or not knowing), a turn, non-square pixels, a frame rate over `maxFrameRate`. Audio
 * in AAC (mono or stereo) is kept; any other audio is made stereo AAC, which costs little next to
 * the picture.
 */
export function copyVerdict(info: VideoInfo, o: Pick<TranscodeOptions, 'maxFrameRate'>): CopyVerdict {
  const no = (why: string): CopyVerdict => ({ copy: false, why });
  if (info.videoCodec !== 'h264') return no(`${info.videoCodec} video`);
  // HLG or PQ, even in 8 bits: browsers would show it washed out; the ladder tone-maps it.
  const hdr = hdrTransferOf(info);
  if (hdr !== null) return no(`${hdrName(hdr)} HDR`);
  if (!info.pixelFormat || !BROWSER_PIXEL_FORMATS.has(info.pixelFormat)) return no(`pixel format ${info.pixelFormat ?? 'unknown'}`);
  if (!info.formatName.split(',').some((f) => COPIED_CONTAINERS.has(f))) return no(`container ${info.formatName}`);
  if (info.interlaced !== false) return no(info.interlaced ? 'interlaced' : 'field order unknown');
  if (Math.min(info.width, info.height) > MAX_SHORT_SIDE || Math.max(info.width, info.height) > MAX_LONG_SIDE) return no(`${info.width}x${info.height} is over 1080p`);
  // A turned picture plays upright from an MP4 (its display matrix), but an HLS segment (MPEG-TS)
  // has nowhere to carry the turn: players would show it on its side. The ladder turns the pixels.
  if (info.rotation !== 0) return no(`turned ${info.rotation}°`);
  if (info.width !== info.storedWidth || info.height !== info.storedHeight) return no('non-square pixels');
  if ((info.frameRate ?? 0) > o.maxFrameRate) return no(`${info.frameRate} frames per second`);
  // Frames at uneven times, reordered (B-frames): in MPEG-TS segments, whose frames carry no
  // durations, Chromium's own HLS finds no picture for the first moments and stalls at 0 (seen
  // with Chromium 156; hls.js plays it). The ladder's encode is at an even rate. Screen
  // recorders and phones write no B-frames; ffmpeg's own variable-rate encodes do.
  if (isVariableRate(info) && (info.reorderedFrames ?? 0) > 0) return no('variable frame rate with B-frames');
  // Surround AAC is folded to stereo as the ladder folds it (audioChannels): what browsers play.
  const keepAudio = info.audioCodec === 'aac' && (info.audioChannels ?? 0) >= 1 && info.audioChannels! <= 2;
  return { copy: true, audio: info.audioCodec === null ? 'none' : keepAudio ? 'copy' : 'aac' };
}

/**
 * Whether frames come at uneven times: the average rate over 2 % below the rate every frame time
 * fits. Not judged where that rate only says the timestamps' precision (1000 for a Matroska file
 * with millisecond timestamps).
 */
export function isVariableRate(info: Pick<VideoInfo, 'averageFrameRate' | 'nominalFrameRate'>): boolean {
  const average = info.averageFrameRate ?? null;
  const nominal = info.nominalFrameRate;
  if (average === null || nominal === null || nominal > MAX_JUDGED_NOMINAL_RATE) return false;
  return average < nominal * 0.98;
}

/** Above this nominal rate, a file's r_frame_rate is its timestamps' precision, not a frame rate. */
const MAX_JUDGED_NOMINAL_RATE = 240;

/**
 * Arguments for one ffmpeg run copying the first video stream (and the first audio stream, as
 * `audio` says) of `input` into a faststart MP4 at `output`, and writing every sequence parameter
 * set of the video to `spsOutput` (Annex B), which {@link judgeCopiedSps} reads: a stream may
 * change its picture after the first, the one ffprobe judged. A rotation would travel with the
 * stream (the display matrix); {@link copyVerdict} copies no turned source all the same, for HLS's sake.
 *
 * The copy carries no SEI units (`filter_units=remove_types=6`): what an encoder wrote there, its
 * user data included, is not for viewers, and no browser needs it to decode.
 */
export function buildCopyArgs(
  input: string,
  source: Pick<VideoInfo, 'formatName'>,
  output: string,
  audio: CopiedAudio,
  o: { audioBitrateKbps: number; audioChannels: number },
  spsOutput: string,
): string[] {
  const args = [...inputFormatArgs(demuxerOf(source.formatName)), '-protocol_whitelist', 'file', '-i', absolute(input), '-map', '0:v:0'];
  if (audio !== 'none') args.push('-map', '0:a:0');
  args.push('-c:v', 'copy', '-bsf:v', 'filter_units=remove_types=6');
  if (audio === 'copy') args.push('-c:a', 'copy');
  if (audio === 'aac') args.push('-c:a', 'aac', '-b:a', `${o.audioBitrateKbps}k`, '-ac', String(o.audioChannels));
  // As the ladder's renditions: no GPS positions or chapters from the phone that made it.
  args.push(...mp4OutputArgs(output));
  // The same read of the file: its SPS units alone, a few dozen bytes a keyframe. An MP4 keeps
  // its first SPS out of the stream (avcC): made Annex B first, each keyframe carries it.
  args.push('-map', '0:v:0', '-c:v', 'copy', '-bsf:v', 'h264_mp4toannexb,filter_units=pass_types=7', '-map_metadata', '-1', '-f', 'h264', '-y', absolute(spsOutput));
  return args;
}

/** ffprobe's name of the MP4 demuxer, which reads every copy back. */
const MP4_FORMAT_NAME = 'mov,mp4,m4a,3gp,3g2,mj2';

/**
 * What ffprobe says of the copy {@link buildCopyArgs} wrote, as far as a rendition needs it (its
 * size, its codecs for HLS, its frame rate), from its source's probe and what became of the audio:
 * the same video stream, every SPS of it agreeing with the first ({@link judgeCopiedSps}), in MP4,
 * with the first audio stream kept or made AAC of `audioChannels`, without chapters or subtitles.
 * Probing the copy again cost a process start and a read of the file: some 0.15 s of CPU an
 * upload, which three uploads at once on two cores wait for. Its bit rate is left to the file's
 * size over its duration.
 */
export function copiedInfo(source: VideoInfo, audio: CopiedAudio, o: { audioChannels: number }): VideoInfo {
  const first = source.audioTracks?.[0];
  const channels = audio === 'none' ? null : audio === 'aac' ? o.audioChannels : (source.audioChannels ?? null);
  const codec = audio === 'none' ? null : audio === 'aac' ? 'aac' : source.audioCodec;
  const { subtitleTracks: _subtitles, chapters: _chapters, ...kept } = source;
  return {
    ...kept,
    formatName: MP4_FORMAT_NAME,
    audioCodec: codec,
    audioChannels: channels,
    // Its tags dropped with the rest of the metadata (mp4OutputArgs).
    audioTracks: first && codec !== null ? [{ index: 0, codec, channels, language: null, title: null }] : [],
    bitrateKbps: null,
  };
}

/**
 * Why a copy is not what its source's probe said, or null when every SPS of its stream agrees
 * with the first on what a browser's decoder is set up for: the size, the profile, the chroma
 * format and the bit depth. A stream whose SPS cannot be read is not copied either.
 */
export function judgeCopiedSps(read: { sps: readonly SpsFacts[]; unreadable: number }): string | null {
  if (read.unreadable > 0) return `${read.unreadable} of its sequence parameter sets cannot be read`;
  const first = read.sps[0];
  if (!first) return 'its video has no sequence parameter set';
  const shape = (s: SpsFacts) => `${s.width}x${s.height} profile ${s.profileIdc} chroma ${s.chromaFormatIdc} ${s.bitDepthLuma}-bit`;
  const other = read.sps.find((s) => shape(s) !== shape(first));
  return other ? `its picture changes mid-stream (${shape(first)}, then ${shape(other)})` : null;
}

/** The largest picture any SPS of the stream gives, to judge against the source limits. */
export function largestSps(sps: readonly SpsFacts[]): { width: number; height: number } | null {
  let best: { width: number; height: number } | null = null;
  for (const s of sps) if (!best || s.width * s.height > best.width * best.height) best = { width: s.width, height: s.height };
  return best;
}
