/**
 * The pure half of what a source holds besides its picture and first sound: its audio tracks,
 * subtitle streams and chapters read from ffprobe's report, tracks outside the allow-list
 * dropped, audio tracks named for a player's menu, and the master playlist's renditions written
 * and read back (the ladder rewrites the master and must keep them). What real players make of
 * it is test/media/hls-tracks.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { audioTrackNames, buildAudioTracksArgs, hasAudioGroup } from '../../server/media/audioTracks.js';
import { bitRatesOfPlaylist, buildMasterPlaylist, buildVariantPlaylist, buildHlsArgs, parseMasterMedia, parseMasterPlaylist, withSubtitles, type MasterMedia, type MasterVariant } from '../../server/media/hls.js';
import { subtitleRenditions } from '../../server/services/mediaDelivery.js';
import type { TextTrackRecord } from '../../server/storage/types.js';
import { resolveLadderOptions } from '../../server/media/ladder.js';
import { interpretProbe, type AudioTrack, type FfprobeJson, type VideoInfo } from '../../server/media/probe.js';
import { allowedFormats, withAllowedTracks } from '../../server/media/sourcePolicy.js';

const VIDEO_STREAM = { codec_type: 'video', codec_name: 'h264', width: 640, height: 360, avg_frame_rate: '30/1', r_frame_rate: '30/1', field_order: 'progressive' };

function probed(json: Omit<FfprobeJson, 'format'>): VideoInfo {
  const info = interpretProbe({ ...json, format: { format_name: 'matroska,webm', duration: '10.0' } });
  if (!info.isVideo) throw new Error(info.reason);
  return info;
}

describe("a source's tracks and chapters, from ffprobe's report", () => {
  it('lists every audio and subtitle stream in its order, with language ("und" is none), title and channels', () => {
    const info = probed({
      streams: [
        VIDEO_STREAM,
        { codec_type: 'audio', codec_name: 'aac', channels: 2, tags: { language: 'eng' } },
        { codec_type: 'subtitle', codec_name: 'subrip', tags: { language: 'fre', title: 'Français' } },
        { codec_type: 'audio', codec_name: 'ac3', channels: 6, tags: { LANGUAGE: 'und', title: 'Commentary' } },
        { codec_type: 'subtitle', codec_name: 'hdmv_pgs_subtitle', disposition: { forced: 1 } },
      ],
    });
    expect(info.audioCodec).toBe('aac');
    expect(info.audioTracks).toEqual([
      { index: 0, codec: 'aac', channels: 2, language: 'eng', title: null },
      { index: 1, codec: 'ac3', channels: 6, language: null, title: 'Commentary' },
    ]);
    expect(info.subtitleTracks).toEqual([
      { index: 0, codec: 'subrip', forced: false, language: 'fre', title: 'Français' },
      { index: 1, codec: 'hdmv_pgs_subtitle', forced: true, language: null, title: null },
    ]);
  });

  it('keeps chapters that have a length, with their titles', () => {
    const info = probed({
      streams: [VIDEO_STREAM],
      chapters: [
        { start_time: '0.000000', end_time: '4.000000', tags: { title: 'Opening' } },
        { start_time: '4.000000', end_time: '4.000000', tags: { title: 'Nothing' } },
        { start_time: '4.000000', end_time: '10.000000' },
        { start_time: 'x', end_time: '11' },
      ],
    });
    expect(info.chapters).toEqual([
      { start: 0, end: 4, title: 'Opening' },
      { start: 4, end: 10, title: null },
    ]);
  });
});

describe('audio tracks outside the allow-list', () => {
  const track = (index: number, codec: string): AudioTrack => ({ index, codec, channels: 2, language: null, title: null });
  const info = probed({ streams: [VIDEO_STREAM, { codec_type: 'audio', codec_name: 'aac' }] });

  it('are dropped after the first (never decoded), not the video refused', () => {
    const kept = withAllowedTracks({ ...info, audioTracks: [track(0, 'aac'), track(1, 'cook'), track(2, 'ac3')] }, { allowed: allowedFormats() });
    expect(kept.audioTracks!.map((t) => t.index)).toEqual([0, 2]);
  });

  it('stay when an admin allows their codec', () => {
    const kept = withAllowedTracks({ ...info, audioTracks: [track(0, 'aac'), track(1, 'cook')] }, { allowed: allowedFormats({ audioCodecs: ['cook'] }) });
    expect(kept.audioTracks!.map((t) => t.index)).toEqual([0, 1]);
  });

  it('make a group only when more than one is left', () => {
    expect(hasAudioGroup({ audioTracks: [track(0, 'aac')] })).toBe(false);
    expect(hasAudioGroup({ audioTracks: [track(0, 'aac'), track(3, 'ac3')] })).toBe(true);
  });
});

describe('audio track names for a player', () => {
  it('use the title, else the language made BCP-47 and named, else the position; a repeated name is told apart', () => {
    const names = audioTrackNames([
      { index: 0, codec: 'aac', channels: 2, language: 'eng', title: null },
      { index: 1, codec: 'aac', channels: 2, language: 'ger', title: 'Deutsch' },
      { index: 2, codec: 'aac', channels: 2, language: 'en', title: null },
      { index: 3, codec: 'aac', channels: 2, language: 'not a language', title: null },
    ]);
    expect(names).toEqual([{ name: 'English', language: 'en' }, { name: 'Deutsch', language: 'de' }, { name: 'English (2)', language: 'en' }, { name: 'Audio 4' }]);
  });
});

describe('the audio tracks run', () => {
  it('writes each track, by its position among the audio streams, as AAC of one shape', () => {
    const args = buildAudioTracksArgs('/s/source', { formatName: 'matroska,webm' }, [{ index: 0, path: '/o/a0.mp4' }, { index: 2, path: '/o/a2.mp4' }], { bitrateKbps: 96, channels: 2 });
    expect(args.slice(0, 2)).toEqual(['-f', 'matroska']);
    const outputs = args.join(' ').split('-map ').slice(1);
    expect(outputs).toHaveLength(2);
    expect(outputs[0]).toMatch(/^0:a:0 -c:a aac -b:a 96k -ac 2 .*-f mp4 -y \/o\/a0\.mp4 $/);
    expect(outputs[1]).toMatch(/^0:a:2 -c:a aac .*\/o\/a2\.mp4$/);
    expect(() => buildAudioTracksArgs('/s/source', { formatName: 'mov' }, [{ index: -1, path: '/o/x.mp4' }], { bitrateKbps: 96, channels: 2 })).toThrow(/index/);
  });

  it('cuts variants without their audio, and a track without picture', () => {
    const args = buildHlsArgs([
      { input: '/o/360p.mp4', dir: '/h/360p', streams: 'video', cuts: [2] },
      { input: '/o/a0.mp4', dir: '/h/audio-0', streams: 'audio', cuts: [2] },
    ]);
    const maps = [...args.join(' ').matchAll(/-map (\S+)/g)].map((m) => m[1]);
    expect(maps).toEqual(['0:v:0', '1:a:0']);
  });
});

describe("the master playlist's renditions", () => {
  const media: MasterMedia[] = [
    { type: 'AUDIO', groupId: 'audio', name: 'English', language: 'en', default: true, autoselect: true, uri: 'audio-0/index.m3u8', channels: '2' },
    { type: 'AUDIO', groupId: 'audio', name: 'Français', language: 'fr', default: false, autoselect: true, uri: 'audio-1/index.m3u8', channels: '2' },
    { type: 'SUBTITLES', groupId: 'subs', name: 'Deutsch', language: 'de', default: false, autoselect: false, forced: true, uri: 'subs-de/index.m3u8' },
  ];
  const variant: MasterVariant = { uri: '360p/index.m3u8', bandwidthBps: 900_000, averageBandwidthBps: 700_000, width: 640, height: 360, codecs: 'avc1.64001e,mp4a.40.2', audioGroup: 'audio', subtitlesGroup: 'subs' };

  it('are written as EXT-X-MEDIA before the variants that name their groups, and read back as written', () => {
    const text = buildMasterPlaylist([variant], media);
    expect(text).toContain('#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,CHANNELS="2",URI="audio-0/index.m3u8"\n');
    expect(text).toContain('#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="Deutsch",LANGUAGE="de",DEFAULT=NO,AUTOSELECT=NO,FORCED=YES,URI="subs-de/index.m3u8"\n');
    expect(text.indexOf('#EXT-X-MEDIA')).toBeLessThan(text.indexOf('#EXT-X-STREAM-INF'));
    expect(text).toMatch(/#EXT-X-STREAM-INF:.*,AUDIO="audio",SUBTITLES="subs"\n360p\/index\.m3u8\n/);
    expect(parseMasterMedia(text)).toEqual(media);
    expect(parseMasterPlaylist(text)).toEqual([variant]);
  });

  it('refuse a name that would break the playlist', () => {
    expect(() => buildMasterPlaylist([variant], [{ ...media[0]!, name: 'Say "hi"' }])).toThrow(/cannot carry/);
  });
});

describe("an audio track's playlist", () => {
  it("carries each segment's rate, which the ladder reads back as the group's peak and average", () => {
    const text = buildVariantPlaylist(
      [
        { file: 'seg_00000.ts', start: 0, end: 2 },
        { file: 'seg_00001.ts', start: 2, end: 4 },
        { file: 'seg_00002.ts', start: 4, end: 5 },
      ],
      [20_000, 40_000, 5_000],
    );
    expect(text.match(/^#EXT-X-BITRATE:\d+$/gm)).toEqual(['#EXT-X-BITRATE:80', '#EXT-X-BITRATE:160', '#EXT-X-BITRATE:40']);
    expect(bitRatesOfPlaylist(text)).toEqual({ peakBps: 160_000, averageBps: (80_000 * 2 + 160_000 * 2 + 40_000 * 1) / 5 });
    expect(bitRatesOfPlaylist(buildVariantPlaylist([{ file: 'seg_00000.ts', start: 0, end: 2 }]))).toBeNull();
  });
});

describe('ladder rung labels', () => {
  it('may not take the folder names of audio tracks', () => {
    expect(() => resolveLadderOptions({ rungs: [{ label: 'audio-1', shortSide: 360, videoBitrateKbps: 800 }] })).toThrow(/audio-/);
  });
});

describe('the master playlist as delivery serves it, with the caption tracks', () => {
  const stored = buildMasterPlaylist(
    [{ uri: '360p/index.m3u8', bandwidthBps: 900_000, width: 640, height: 360, codecs: 'avc1.64001e,mp4a.40.2', audioGroup: 'audio' }],
    [{ type: 'AUDIO', groupId: 'audio', name: 'English', language: 'en', default: true, autoselect: true, uri: 'audio-0/index.m3u8', channels: '2' }],
  );
  const track = (id: string, o: Partial<TextTrackRecord> = {}): TextTrackRecord => ({ videoId: 'v', id, kind: 'captions', origin: 'api', language: 'en', label: 'English', forced: false, bytes: 10, createdAt: 0, ...o });

  it('lists each caption track as a subtitle rendition (none DEFAULT, those with a language AUTOSELECT, names told apart), chapters not', () => {
    const subtitles = subtitleRenditions([
      track('0000000a'),
      track('0000000b'),
      track('0000000c', { kind: 'chapters', label: 'Chapters', language: '' }),
      track('0000000d', { language: '', label: 'Say "hi"\nnow', forced: true, origin: 'source' }),
    ]);
    expect(subtitles).toEqual([
      { type: 'SUBTITLES', groupId: 'subs', name: 'English', language: 'en', default: false, autoselect: true, uri: 'subs-0000000a/index.m3u8' },
      { type: 'SUBTITLES', groupId: 'subs', name: 'English (2)', language: 'en', default: false, autoselect: true, uri: 'subs-0000000b/index.m3u8' },
      { type: 'SUBTITLES', groupId: 'subs', name: "Say 'hi' now", default: false, autoselect: false, forced: true, uri: 'subs-0000000d/index.m3u8' },
    ]);
  });

  it('adds them to the stored master, its audio group kept, every variant naming the subtitle group; the stored one as it is without any', () => {
    const served = withSubtitles(stored, subtitleRenditions([track('0000000a')]));
    expect(parseMasterMedia(served).map((m) => [m.type, m.name])).toEqual([
      ['AUDIO', 'English'],
      ['SUBTITLES', 'English'],
    ]);
    expect(parseMasterPlaylist(served)).toEqual([{ ...parseMasterPlaylist(stored)[0]!, subtitlesGroup: 'subs' }]);
    expect(withSubtitles(stored, [])).toBe(stored);
  });
});
