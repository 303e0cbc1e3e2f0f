/**
 * A copy is not probed again (media/streamCopy.ts `copiedInfo`): what a rendition needs of its
 * probe is worked out from the source's and what became of the audio. Here each source a copy
 * takes (MP4, Matroska, MPEG-TS; AAC kept, other audio and surround made stereo AAC, no audio; B
 * frames) is copied with buildCopyArgs by the real ffmpeg, and ffprobe's reading of the copy is
 * what copiedInfo says, field for field where a rendition uses it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../server/media/ffmpegRunner.js';
import { hlsCodecs } from '../../server/media/hls.js';
import type { VideoInfo } from '../../server/media/probe.js';
import { buildCopyArgs, copiedInfo, copyVerdict } from '../../server/media/streamCopy.js';
import { makeTempDir } from '../helpers/clips.js';
import { probe } from '../helpers/probe.js';

let dir: string;
beforeAll(() => {
  dir = makeTempDir('vop-copied-info-');
});
afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A 2 s 25 fps 320x180 H.264 source, in `format`, with `audio` (encoder and channels) or none, with or without B-frames. */
async function source(name: string, format: 'mp4' | 'matroska' | 'mpegts', audio: { codec: string; channels: number } | null, bframes: boolean): Promise<string> {
  const file = path.join(dir, name);
  const args = ['-f', 'lavfi', '-i', 'testsrc2=s=320x180:r=25:d=2'];
  if (audio) args.push('-f', 'lavfi', '-i', `sine=f=440:sample_rate=48000:d=2`, '-ac', String(audio.channels), '-c:a', audio.codec);
  // Tagged, as a phone's or a film's track is: the copy drops the tags with the rest of the metadata.
  if (audio) args.push('-metadata:s:a:0', 'language=fra', '-metadata:s:a:0', 'title=Piste');
  args.push('-c:v', 'libx264', '-preset', 'veryfast', '-bf', bframes ? '2' : '0', '-g', '25', '-pix_fmt', 'yuv420p', '-f', format, '-y', file);
  await run(args);
  return file;
}

async function probed(file: string): Promise<VideoInfo> {
  const info = await probe(file);
  if (!info.isVideo) throw new Error(`${file} is not a video: ${info.reason}`);
  return info;
}

/** The fields a rendition reads of its probe (renditionOutputs.ts, hlsPackaging.ts, ladderPlan.ts). */
function used(i: VideoInfo) {
  return {
    width: i.width, height: i.height, storedWidth: i.storedWidth, storedHeight: i.storedHeight, rotation: i.rotation,
    videoCodec: i.videoCodec, videoProfile: i.videoProfile, videoLevel: i.videoLevel, pixelFormat: i.pixelFormat,
    interlaced: i.interlaced, audioCodec: i.audioCodec, audioChannels: i.audioChannels ?? null,
    audioTracks: (i.audioTracks ?? []).map((t) => ({ index: t.index, codec: t.codec, channels: t.channels, language: t.language, title: t.title })),
    codecs: hlsCodecs(i), formatName: i.formatName,
  };
}

describe('what a copy is, without probing it', () => {
  const cases: Array<[string, 'mp4' | 'matroska' | 'mpegts', { codec: string; channels: number } | null, boolean, string]> = [
    ['aac.mp4', 'mp4', { codec: 'aac', channels: 2 }, true, 'copy'],
    ['mono.mkv', 'matroska', { codec: 'aac', channels: 1 }, false, 'copy'],
    ['mp3.mkv', 'matroska', { codec: 'libmp3lame', channels: 2 }, true, 'aac'],
    ['surround.ts', 'mpegts', { codec: 'ac3', channels: 6 }, true, 'aac'],
    ['mute.mp4', 'mp4', null, false, 'none'],
  ];
  for (const [name, format, audio, bframes, expected] of cases) {
    it(`is what ffprobe reads of the copy: ${name}`, async () => {
      const src = await source(name, format, audio, bframes);
      const info = await probed(src);
      if (audio) expect(info.audioTracks?.[0]?.language).toBe('fra');
      const verdict = copyVerdict(info, { maxFrameRate: 60 });
      expect(verdict).toEqual({ copy: true, audio: expected });
      if (!verdict.copy) return;
      const out = path.join(dir, `${name}.copy.mp4`);
      await run(buildCopyArgs(src, info, out, verdict.audio, { audioBitrateKbps: 64, audioChannels: 2 }, `${out}.sps.h264`));
      const copy = await probed(out);
      const worked = copiedInfo(info, verdict.audio, { audioChannels: 2 });
      expect(used(worked)).toEqual(used(copy));
      expect(worked.frameRate).toBeCloseTo(copy.frameRate!, 2);
      // Its bit rate is the file's size over its duration, as ffprobe's for an MP4.
      expect(worked.bitrateKbps).toBeNull();
      expect(worked.durationSeconds).toBeCloseTo(copy.durationSeconds, 1);
    });
  }
});
