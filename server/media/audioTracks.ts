/**
 * The audio renditions of HLS for a source with several audio tracks (a film with two
 * languages, a talk with its interpretation): every track made AAC of one shape, each into its
 * own MP4, which HLS packaging cuts into an `EXT-X-MEDIA TYPE=AUDIO` rendition (media/hls.ts).
 * Pure: nothing here runs a process.
 *
 * Every track is encoded, none copied, even an AAC one: the group then has one codec for the
 * master's CODECS, one channel count, and a rate the variants' BANDWIDTH can count on, whatever
 * the source mixed (AC-3 beside AAC, 5.1 beside stereo).
 */
import { playlistSafe, uniqueNames } from './hls.js';
import { canonicalLanguage, languageName } from './languages.js';
import type { AudioTrack, VideoInfo } from './probe.js';
import { demuxerOf } from './sourcePolicy.js';
import { absolute, inputFormatArgs, mp4OutputArgs } from './transcodeArgs.js';

/** One track to write: its position among the source's audio streams, and where. */
export interface AudioTrackOutput {
  index: number;
  /** Absolute path of the MP4 to write. */
  path: string;
}

/**
 * Arguments for one ffmpeg run writing each of `outputs` as an audio-only MP4: AAC-LC at
 * `bitrateKbps`, `channels` channels (surround folded down as the renditions fold it).
 */
export function buildAudioTracksArgs(input: string, source: Pick<VideoInfo, 'formatName'>, outputs: readonly AudioTrackOutput[], o: { bitrateKbps: number; channels: number }): string[] {
  if (outputs.length === 0) throw new Error('buildAudioTracksArgs needs at least one output.');
  const args = [...inputFormatArgs(demuxerOf(source.formatName)), '-protocol_whitelist', 'file', '-i', absolute(input)];
  for (const out of outputs) {
    if (!Number.isInteger(out.index) || out.index < 0) throw new Error(`Audio track index ${out.index} is not a stream position.`);
    args.push('-map', `0:a:${out.index}`, '-c:a', 'aac', '-b:a', `${o.bitrateKbps}k`, '-ac', String(o.channels), ...mp4OutputArgs(out.path));
  }
  return args;
}

/** Whether a source's audio is offered as a group of tracks in HLS: when it has more than one. */
export function hasAudioGroup(info: Pick<VideoInfo, 'audioTracks'>): boolean {
  return (info.audioTracks?.length ?? 0) > 1;
}

/** What a player's menu and language choice know a track by. */
export interface AudioTrackName {
  /** NAME: the track's title, else its language's name, else "Audio <n>"; unique among the tracks. */
  name: string;
  /** LANGUAGE: the track's language tag made BCP-47, when it has one. */
  language?: string;
}

/**
 * Names of `tracks` for a master playlist: a NAME each (RFC 8216 asks them unique within a
 * group; a second "English" becomes "English (2)") and a LANGUAGE where the source gives one.
 */
export function audioTrackNames(tracks: readonly AudioTrack[]): AudioTrackName[] {
  const languages = tracks.map((t) => (t.language ? (canonicalLanguage(t.language) ?? undefined) : undefined));
  const names = uniqueNames(tracks.map((t, i) => (t.title ? playlistSafe(t.title) : '') || (languages[i] ? languageName(languages[i]) : `Audio ${i + 1}`)));
  return tracks.map((_, i) => ({ name: names[i]!, ...(languages[i] ? { language: languages[i] } : {}) }));
}
