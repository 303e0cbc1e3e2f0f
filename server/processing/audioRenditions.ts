/**
 * The audio tracks of a source with several (media/audioTracks.ts), written as audio-only MP4s
 * into the attempt's scratch folder for HLS packaging to cut (hlsPackaging.ts). They are never
 * stored as they are: the MP4 renditions carry the first track alone, as browsers play an MP4's
 * first track and offer no other (docs/processing.md).
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { run } from '../media/ffmpegRunner.js';
import { audioTrackNames, buildAudioTracksArgs } from '../media/audioTracks.js';
import type { AudioTrack } from '../media/probe.js';
import { audioRenditionLabel } from './mediaNames.js';
import { runOptions, type RenditionJob } from './renditionOutputs.js';

/** One audio track, written. */
export interface AudioRendition {
  /** Its folder in HLS, `audio-<n>`. */
  label: string;
  /** Absolute path of its MP4 in the scratch folder. */
  path: string;
  /** The master playlist's NAME and LANGUAGE of it. */
  name: string;
  language?: string;
  /** The source's first track: the one the MP4 renditions carry, and HLS's DEFAULT. */
  default: boolean;
  channels: number;
}

/**
 * Writes every track of `tracks` (the source's audio streams the allow-list takes) in one ffmpeg
 * run into `outDir`, and resolves with them in the source's order.
 */
export async function writeAudioRenditions(job: Omit<RenditionJob, 'dateFolder'>, tracks: readonly AudioTrack[], o: { bitrateKbps: number; channels: number }): Promise<AudioRendition[]> {
  await fsp.mkdir(job.outDir, { recursive: true });
  const names = audioTrackNames(tracks);
  const made = tracks.map((t, i) => ({ label: audioRenditionLabel(t.index), path: path.join(job.outDir, `${audioRenditionLabel(t.index)}.mp4`), ...names[i]!, default: i === 0, channels: o.channels }));
  await run(
    buildAudioTracksArgs(job.source, job.info, tracks.map((t, i) => ({ index: t.index, path: made[i]!.path })), o),
    runOptions(job.ffmpeg),
  );
  return made;
}
