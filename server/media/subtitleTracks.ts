/**
 * A source's text subtitle streams as WebVTT files (issue 33, item 4): SubRip, ASS/SSA (their
 * text; styling and positions are dropped), MP4's `mov_text` and WebVTT. Picture subtitles (DVD,
 * Blu-ray PGS) are left out: making them text needs OCR. Pure: nothing here runs a process.
 */
import type { SubtitleTrack, VideoInfo } from './probe.js';
import { demuxerOf } from './sourcePolicy.js';
import { absolute, inputFormatArgs } from './transcodeArgs.js';

/** ffprobe's names of the subtitle codecs that are text, which ffmpeg converts to WebVTT. */
export const TEXT_SUBTITLE_CODECS: ReadonlySet<string> = new Set(['subrip', 'srt', 'ass', 'ssa', 'mov_text', 'webvtt', 'text']);

/** The subtitle streams of `info` that are text, at most `limit`. */
export function textSubtitleTracks(info: Pick<VideoInfo, 'subtitleTracks'>, limit: number): SubtitleTrack[] {
  return (info.subtitleTracks ?? []).filter((t) => TEXT_SUBTITLE_CODECS.has(t.codec)).slice(0, limit);
}

/**
 * Arguments for one ffmpeg run writing each of `outputs` (a subtitle stream by its position
 * among the source's, `0:s:<index>`) as a WebVTT file. The subtitle decoders of text formats are
 * all ffmpeg reads besides the container.
 */
export function buildSubtitleExtractArgs(input: string, source: Pick<VideoInfo, 'formatName'>, outputs: ReadonlyArray<{ index: number; path: string }>): string[] {
  if (outputs.length === 0) throw new Error('buildSubtitleExtractArgs needs at least one output.');
  // -copyts: cue times as the file gives them, on the timeline the copied and encoded
  // renditions keep (ffmpeg would otherwise shift them by the file's start, an AAC priming's 21 ms).
  const args = [...inputFormatArgs(demuxerOf(source.formatName)), '-protocol_whitelist', 'file', '-copyts', '-i', absolute(input)];
  for (const out of outputs) {
    if (!Number.isInteger(out.index) || out.index < 0) throw new Error(`Subtitle stream index ${out.index} is not a stream position.`);
    args.push('-map', `0:s:${out.index}`, '-c:s', 'webvtt', '-map_metadata', '-1', '-f', 'webvtt', '-y', absolute(out.path));
  }
  return args;
}
