/**
 * What a video's first rendition is and what its ladder makes after (processing/ladderPlan.ts,
 * media/streamCopy.ts), the master playlist the ladder reads back (media/hls.ts), and the
 * niceness the ladder's runs get (media/confinement.ts). Pure: no ffmpeg runs here.
 */
import { describe, expect, it } from 'vitest';
import { confine, confinementSupport } from '../../server/media/confinement.js';
import { buildMasterPlaylist, parseMasterPlaylist, type MasterVariant } from '../../server/media/hls.js';
import { resolveLadderOptions } from '../../server/media/ladder.js';
import type { VideoInfo } from '../../server/media/probe.js';
import { buildCopyArgs, copyVerdict } from '../../server/media/streamCopy.js';
import { planLadder, remainingRungs } from '../../server/processing/ladderPlan.js';

const ladder = resolveLadderOptions();
const cap = { maxFrameRate: 60 };

/** A 1080p30 H.264 phone-free MP4 with stereo AAC: what browsers play as it is. */
function h264(over: Partial<VideoInfo> = {}): VideoInfo {
  return {
    isVideo: true, durationSeconds: 60, width: 1920, height: 1080, storedWidth: 1920, storedHeight: 1080, rotation: 0,
    videoCodec: 'h264', videoProfile: 'High', videoLevel: 40, pixelFormat: 'yuv420p', frameRate: 30, nominalFrameRate: 30,
    interlaced: false, audioCodec: 'aac', audioChannels: 2, bitrateKbps: 6000, formatName: 'mov,mp4,m4a,3gp,3g2,mj2', ...over,
  };
}

const labels = (rs: { label: string }[]) => rs.map((r) => r.label);

describe('the first rendition', () => {
  it('copies a source browsers play as it is, as its top rung, and leaves the rungs below to the ladder', () => {
    const plan = planLadder(h264(), ladder, { split: true, ...cap });
    expect(plan.first).toMatchObject({ kind: 'copy', audio: 'copy', rendition: { label: '1080p', width: 1920, height: 1080 } });
    expect(labels(plan.rest)).toEqual(['720p', '480p', '360p']);
    // MKV and MPEG-TS too; no audio; other audio, and surround AAC, made stereo AAC.
    expect(copyVerdict(h264({ formatName: 'matroska,webm' }), cap)).toEqual({ copy: true, audio: 'copy' });
    expect(copyVerdict(h264({ formatName: 'mpegts', audioCodec: 'ac3', audioChannels: 6 }), cap)).toEqual({ copy: true, audio: 'aac' });
    expect(copyVerdict(h264({ audioCodec: 'mp3' }), cap)).toEqual({ copy: true, audio: 'aac' });
    expect(copyVerdict(h264({ audioChannels: 6 }), cap)).toEqual({ copy: true, audio: 'aac' });
    expect(copyVerdict(h264({ audioCodec: null, audioChannels: null }), cap)).toEqual({ copy: true, audio: 'none' });
  });

  it('names a copy between two rungs by its own size, and the ladder makes every rung below it', () => {
    const plan = planLadder(h264({ width: 960, height: 540, storedWidth: 960, storedHeight: 540 }), ladder, { split: true, ...cap });
    expect(plan.first).toMatchObject({ kind: 'copy', rendition: { label: '540p', width: 960, height: 540 } });
    expect(labels(plan.rest)).toEqual(['480p', '360p']);
    // A source nearly a rung's size takes that rung's name (pickRungs keeps its own size).
    const near = planLadder(h264({ width: 1920, height: 1072, storedWidth: 1920, storedHeight: 1072 }), ladder, { split: true, ...cap });
    expect(near.first).toMatchObject({ kind: 'copy', rendition: { label: '1080p', width: 1920, height: 1072 } });
    expect(labels(near.rest)).toEqual(['720p', '480p', '360p']);
    // Smaller than the smallest rung: the copy is the whole ladder.
    expect(planLadder(h264({ width: 320, height: 180, storedWidth: 320, storedHeight: 180 }), ladder, { split: true, ...cap }).rest).toEqual([]);
  });

  it('encodes the lowest rung alone first for what browsers do not play as it is, each for its reason', () => {
    const refused: Array<[Partial<VideoInfo>, RegExp]> = [
      [{ videoCodec: 'hevc', pixelFormat: 'yuv420p10le' }, /hevc/],
      [{ pixelFormat: 'yuv420p10le' }, /pixel format/],
      [{ pixelFormat: 'yuvj420p' }, /pixel format/],
      [{ pixelFormat: 'yuv444p' }, /pixel format/],
      [{ pixelFormat: null }, /pixel format unknown/],
      [{ interlaced: true }, /interlaced/],
      [{ interlaced: null }, /field order unknown/],
      [{ width: 2560, height: 1440, storedWidth: 2560, storedHeight: 1440 }, /over 1080p/],
      [{ width: 1080, height: 1920, storedWidth: 1920, storedHeight: 1080, rotation: 90 }, /turned 90/],
      [{ width: 1920, height: 1080, storedWidth: 1440, storedHeight: 1080 }, /non-square/],
      [{ frameRate: 120 }, /120 frames/],
      [{ formatName: 'avi' }, /container avi/],
    ];
    for (const [over, why] of refused) {
      const plan = planLadder(h264(over), ladder, { split: true, ...cap });
      expect(plan.first.kind, JSON.stringify(over)).toBe('encode');
      expect(plan.notCopied, JSON.stringify(over)).toMatch(why);
    }
    const hevc = planLadder(h264({ videoCodec: 'hevc', pixelFormat: 'yuv420p10le' }), ladder, { split: true, ...cap });
    expect(hevc.first.kind === 'encode' && labels(hevc.first.rungs)).toEqual(['360p']);
    expect(labels(hevc.rest)).toEqual(['1080p', '720p', '480p']);
  });

  it('makes the whole ladder at once, and nothing after, when the application asks for it', () => {
    for (const info of [h264(), h264({ videoCodec: 'hevc' })]) {
      const plan = planLadder(info, ladder, { split: false, ...cap });
      expect(plan.first.kind === 'encode' && labels(plan.first.rungs)).toEqual(['1080p', '720p', '480p', '360p']);
      expect(plan.rest).toEqual([]);
    }
  });

  it('leaves the ladder only the rungs a video does not list yet', () => {
    expect(labels(remainingRungs(h264(), ladder, new Set(['1080p'])))).toEqual(['720p', '480p', '360p']);
    expect(labels(remainingRungs(h264(), ladder, new Set(['360p'])))).toEqual(['1080p', '720p', '480p']);
    expect(remainingRungs(h264(), ladder, new Set(['1080p', '720p', '480p', '360p']))).toEqual([]);
  });

  it('copies the streams it says, without SEI units, into a faststart MP4 read with the judged demuxer, and the SPS units beside it', () => {
    const copy = buildCopyArgs('/in/source', { formatName: 'mpegts' }, '/out/a.mp4', 'aac', { audioBitrateKbps: 128, audioChannels: 2 }, '/out/a.sps');
    expect(copy.slice(0, 2)).toEqual(['-f', 'mpegts']);
    expect(copy.join(' ')).toContain('-map 0:v:0 -map 0:a:0 -c:v copy -bsf:v filter_units=remove_types=6 -c:a aac -b:a 128k -ac 2');
    expect(copy.join(' ')).toContain('-movflags +faststart -f mp4 -y /out/a.mp4 -map 0:v:0 -c:v copy -bsf:v h264_mp4toannexb,filter_units=pass_types=7 -map_metadata -1 -f h264 -y /out/a.sps');
    const silent = buildCopyArgs('/in/source', { formatName: 'mov,mp4,m4a,3gp,3g2,mj2' }, '/out/a.mp4', 'none', { audioBitrateKbps: 128, audioChannels: 2 }, '/out/a.sps');
    expect(silent).not.toContain('0:a:0');
    expect(silent).not.toContain('-c:a');
    expect(() => buildCopyArgs('relative', { formatName: 'mpegts' }, '/out/a.mp4', 'copy', { audioBitrateKbps: 128, audioChannels: 2 }, '/out/a.sps')).toThrow(/absolute/);
    expect(() => buildCopyArgs('/in/source', { formatName: 'mpegts' }, '/out/a.mp4', 'copy', { audioBitrateKbps: 128, audioChannels: 2 }, 'a.sps')).toThrow(/absolute/);
  });
});

describe('the master playlist the ladder adds to', () => {
  it('reads back every variant it wrote', () => {
    const variants: MasterVariant[] = [
      { uri: '1080p/index.m3u8', bandwidthBps: 6_100_000, averageBandwidthBps: 6_000_000, width: 1920, height: 1080, codecs: 'avc1.640028,mp4a.40.2', frameRate: 29.97 },
      { uri: '360p/index.m3u8', bandwidthBps: 928_000, width: 640, height: 360, codecs: 'avc1.64001e' },
    ];
    const read = parseMasterPlaylist(buildMasterPlaylist(variants));
    expect(read).toEqual([{ ...variants[0], frameRate: 29.97 }, variants[1]]);
  });

  it('leaves out what is not a variant it wrote', () => {
    const text = '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000,RESOLUTION=10x10\nno-codecs.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=1000,RESOLUTION=10x10,CODECS="avc1.640028"\n#EXT-X-ENDLIST\n';
    expect(parseMasterPlaylist(text)).toEqual([]);
  });
});

describe.runIf(process.platform === 'linux')('the niceness of a run', () => {
  it('runs the program under nice, inside the other wrappers, only when asked', () => {
    confinementSupport();
    const nice = confine('/usr/bin/ffmpeg', ['-version'], { dieWithParent: true, memoryLimitBytes: 2 ** 30, niceness: 10 });
    const all = [nice.file, ...nice.args];
    const at = all.findIndex((a) => a.endsWith('/nice'));
    expect(at).toBeGreaterThanOrEqual(0);
    expect(all.slice(at + 1, at + 4)).toEqual(['-n', '10', '/usr/bin/ffmpeg']);
    const plain = confine('/usr/bin/ffmpeg', ['-version'], { dieWithParent: true, memoryLimitBytes: 2 ** 30 });
    expect([plain.file, ...plain.args].some((a) => a.endsWith('/nice'))).toBe(false);
  });
});
