/**
 * The pure half of aligned HLS variants: the segment muxer's list read, the playlists written from
 * it, the cuts shared and checked, the bit rates measured on the segments, the first variant a
 * native player starts with, the keyframes an encode forces, and which sources are not copied.
 * What real players make of it is test/media/hls-players-*.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  alignedWith,
  buildHlsArgs,
  buildVariantPlaylist,
  cutsOf,
  cutsOfDurations,
  orderForPlayers,
  parseSegmentList,
  parseVariantDurations,
  segmentBitRates,
  type MasterVariant,
} from '../../server/media/hls.js';
import { copyVerdict, isVariableRate } from '../../server/media/streamCopy.js';
import { MAX_TIME_LIST_CHARS, timeList } from '../../server/media/timeList.js';
import { buildTranscodeArgs, DEFAULT_TRANSCODE_OPTIONS } from '../../server/media/transcodeArgs.js';
import { videoInfo } from '../helpers/fixtures.js';

const LIST = 'seg_00000.ts,0.000000,8.333333\nseg_00001.ts,8.333333,16.666667\nseg_00002.ts,16.666667,20.000000\n';

describe("a variant's segments", () => {
  it("reads the segment muxer's list and writes a VOD playlist with each segment's exact length", () => {
    const segments = parseSegmentList(LIST);
    expect(segments.map((s) => s.file)).toEqual(['seg_00000.ts', 'seg_00001.ts', 'seg_00002.ts']);
    const text = buildVariantPlaylist(segments);
    expect(text.split('\n')).toEqual([
      '#EXTM3U',
      '#EXT-X-VERSION:3',
      '#EXT-X-TARGETDURATION:9',
      '#EXT-X-MEDIA-SEQUENCE:0',
      '#EXT-X-PLAYLIST-TYPE:VOD',
      '#EXT-X-INDEPENDENT-SEGMENTS',
      '#EXTINF:8.333333,',
      'seg_00000.ts',
      '#EXTINF:8.333334,',
      'seg_00001.ts',
      '#EXTINF:3.333333,',
      'seg_00002.ts',
      '#EXT-X-ENDLIST',
      '',
    ]);
    // The ladder reads the cuts back from the stored playlist.
    expect(cutsOfDurations(parseVariantDurations(text)).map((t) => Math.round(t * 1e6) / 1e6)).toEqual(cutsOf(segments));
  });

  it('refuses a list that is not the muxer’s', () => {
    expect(() => parseSegmentList('')).toThrow(/no segment/);
    expect(() => parseSegmentList('../x.ts,0,1')).toThrow(/segment list/);
  });

  it('holds a variant aligned when each cut is within the tolerance, and as many', () => {
    const segments = parseSegmentList(LIST);
    expect(alignedWith(segments, [8.333, 16.667], 0.0167)).toBe(true);
    expect(alignedWith(segments, [8.3, 16.667], 0.0167)).toBe(false);
    expect(alignedWith(segments, [8.333], 0.0167)).toBe(false);
    expect(alignedWith(segments, [8.333, 16.667, 18], 0.0167)).toBe(false);
  });

  it('cuts every variant at the times given, or the first at its own keyframes', () => {
    const args = buildHlsArgs([
      { input: '/m/copy.mp4', dir: '/m/hls/360p' },
      { input: '/m/240p.mp4', dir: '/m/hls/240p', cuts: [8.3333333, 16.6666667], toleranceSeconds: 0.0166 },
      { input: '/m/144p.mp4', dir: '/m/hls/144p', cuts: [] },
    ]);
    expect(args[args.indexOf('-segment_time') + 1]).toBe('4');
    expect(args[args.indexOf('-segment_times') + 1]).toBe('8.333,16.667');
    expect(args).toContain('0.017');
    // A variant shorter than a segment is one segment.
    expect(args.filter((a) => a === '-segment_time')).toHaveLength(2);
    expect(args.filter((a) => a === 'avoid_negative_ts=disabled')).toHaveLength(3);
  });
});

describe("a master playlist's bit rates and order", () => {
  it('declares the peak of the segments as BANDWIDTH and their average as AVERAGE-BANDWIDTH', () => {
    const rates = segmentBitRates([
      { seconds: 4, bytes: 500_000 },
      { seconds: 4, bytes: 1_000_000 },
      // A last segment of a frame: counted as half a second, not as a 48 Mbit/s peak.
      { seconds: 0.04, bytes: 60_000 },
    ]);
    expect(rates.peakBps).toBe(2_000_000);
    expect(rates.averageBps).toBe(Math.round((1_560_000 * 8) / 8.04));
  });

  it('lists first the highest variant a native player can start with, then the rest highest first', () => {
    const v = (label: string, avg: number): MasterVariant => ({ uri: `${label}/index.m3u8`, bandwidthBps: avg * 1.3, averageBandwidthBps: avg, width: 16, height: 9, codecs: 'avc1.640028' });
    const ladder = [v('360p', 900_000), v('1080p', 5_500_000), v('720p', 2_900_000), v('480p', 1_500_000)];
    expect(orderForPlayers(ladder).map((x) => x.uri)).toEqual(['720p/index.m3u8', '1080p/index.m3u8', '480p/index.m3u8', '360p/index.m3u8']);
    // A copied source alone at 8 Mbit/s: it is all there is.
    expect(orderForPlayers([v('1080p', 8_000_000)]).map((x) => x.uri)).toEqual(['1080p/index.m3u8']);
    // Every variant above the start rate: the lowest starts.
    expect(orderForPlayers([v('2160p', 16_000_000), v('1440p', 9_000_000)]).map((x) => x.uri)).toEqual(['1440p/index.m3u8', '2160p/index.m3u8']);
  });
});

describe("an encode's keyframes", () => {
  const source = { audioCodec: 'aac', frameRate: 30, nominalFrameRate: 30, interlaced: false, storedWidth: 640, storedHeight: 360 } as const;
  const outputs = [{ rendition: { label: '240p', width: 426, height: 240, videoBitrateKbps: 400, audioBitrateKbps: 64 }, path: '/m/240p.mp4' }];

  it('come every interval on the dot by default', () => {
    const args = buildTranscodeArgs('/m/source.mp4', source, outputs);
    expect(args[args.indexOf('-force_key_frames') + 1]).toBe('expr:gte(t,n_forced*2)');
    expect(args).not.toContain('-g');
  });

  it("come at the listed variants' cuts, and x264's own every interval after them", () => {
    const args = buildTranscodeArgs('/m/source.mp4', source, outputs, DEFAULT_TRANSCODE_OPTIONS, { at: [8.333333, 16.666667] });
    expect(args[args.indexOf('-force_key_frames') + 1]).toBe('8.333,16.667');
    expect(args[args.indexOf('-g') + 1]).toBe('60');
  });

  it('refuses a list too long for one argument', () => {
    const many = Array.from({ length: 20_000 }, (_, i) => 10_000 + i * 2.123);
    expect(timeList(many)).toBeNull();
    expect(timeList(many.slice(0, 100))!.length).toBeLessThan(MAX_TIME_LIST_CHARS);
    expect(() => buildTranscodeArgs('/m/source.mp4', source, outputs, DEFAULT_TRANSCODE_OPTIONS, { at: many })).toThrow(/Too many keyframe times/);
  });
});

describe('which sources are copied', () => {
  // A screen recording: frames only where the picture changed.
  const info = videoInfo({ durationSeconds: 16, frameRate: 17.09, averageFrameRate: 17.09, nominalFrameRate: 30, audioChannels: 1, bitrateKbps: 600 });

  it('copies a variable frame rate without B-frames (a screen recording), not with them', () => {
    expect(isVariableRate(info)).toBe(true);
    expect(copyVerdict(info, { maxFrameRate: 60 })).toMatchObject({ copy: true });
    expect(copyVerdict({ ...info, reorderedFrames: 2 }, { maxFrameRate: 60 })).toEqual({ copy: false, why: 'variable frame rate with B-frames' });
  });

  it('copies an even rate with B-frames, and does not judge a rate that is only timestamps’ precision', () => {
    expect(copyVerdict({ ...info, frameRate: 29.97, averageFrameRate: 29.97, nominalFrameRate: 30, reorderedFrames: 2 }, { maxFrameRate: 60 })).toMatchObject({ copy: true });
    expect(isVariableRate({ averageFrameRate: 30, nominalFrameRate: 1000 })).toBe(false);
    expect(isVariableRate({ averageFrameRate: null, nominalFrameRate: 30 })).toBe(false);
  });
});
