import { describe, expect, it } from 'vitest';
import { avcCodecString, buildHlsArgs, buildMasterPlaylist, hlsCodecs } from '../../server/media/hls.js';
import { evenSize, pickRungs, resolveLadderOptions, type Rendition } from '../../server/media/ladder.js';
import { buildTranscodeArgs, resolveTranscodeOptions, sourceFilters, sourceRendition } from '../../server/media/transcodeArgs.js';

const sizes = (rs: Rendition[]) => rs.map((r) => `${r.label} ${r.width}x${r.height}`);

/** Properties every plan must have, whatever the source. */
function expectSound(source: { width: number; height: number }, rs: Rendition[]) {
  expect(rs.length).toBeGreaterThanOrEqual(1);
  for (const r of rs) {
    expect(r.width % 2, `${r.label} width even`).toBe(0);
    expect(r.height % 2, `${r.label} height even`).toBe(0);
    expect(r.width, 'never upscaled').toBeLessThanOrEqual(source.width);
    expect(r.height, 'never upscaled').toBeLessThanOrEqual(source.height);
    // Aspect ratio kept, within the rounding to even sizes.
    expect(Math.abs(r.width / r.height - source.width / source.height)).toBeLessThan(0.02 * (source.width / source.height));
  }
  for (let i = 1; i < rs.length; i++) expect(rs[i]!.videoBitrateKbps).toBeLessThan(rs[i - 1]!.videoBitrateKbps);
}

describe('rendition ladder', () => {
  it('gives a 1080p source the whole default ladder, with bitrates', () => {
    const rs = pickRungs({ width: 1920, height: 1080 });
    expect(sizes(rs)).toEqual(['1080p 1920x1080', '720p 1280x720', '480p 854x480', '360p 640x360']);
    expect(rs.map((r) => r.videoBitrateKbps)).toEqual([5000, 2800, 1400, 800]);
    expect(rs.every((r) => r.audioBitrateKbps === 128)).toBe(true);
    expectSound({ width: 1920, height: 1080 }, rs);
  });

  it('never upscales: 720p and 360p sources get only the rungs at or below them', () => {
    expect(sizes(pickRungs({ width: 1280, height: 720 }))).toEqual(['720p 1280x720', '480p 854x480', '360p 640x360']);
    expect(sizes(pickRungs({ width: 640, height: 360 }))).toEqual(['360p 640x360']);
  });

  it('gives a source below the smallest rung one rendition at its own size, at a smaller bitrate', () => {
    const rs = pickRungs({ width: 320, height: 240 });
    expect(sizes(rs)).toEqual(['240p 320x240']);
    expect(rs[0]!.videoBitrateKbps).toBeLessThan(800);
    expect(rs[0]!.videoBitrateKbps).toBeGreaterThanOrEqual(150);
  });

  it('names portrait rungs by the shorter side: 1080x1920 is 1080p', () => {
    const rs = pickRungs({ width: 1080, height: 1920 });
    expect(sizes(rs)).toEqual(['1080p 1080x1920', '720p 720x1280', '480p 480x854', '360p 360x640']);
    expectSound({ width: 1080, height: 1920 }, rs);
  });

  it('makes odd sources even, and does not demote an 853x479 source below 480p for one missing line', () => {
    const rs = pickRungs({ width: 853, height: 479 });
    expect(sizes(rs)).toEqual(['480p 852x478', '360p 642x360']);
    expectSound({ width: 853, height: 479 }, rs);
    expect(sizes(pickRungs({ width: 853, height: 479 }, resolveLadderOptions({ snapTolerance: 0 })))).toEqual(['360p 642x360']);
    expect(sizes(pickRungs({ width: 853, height: 480 }))[0]).toBe('480p 852x480');
    expect(sizes(pickRungs({ width: 427, height: 241 }))).toEqual(['240p 426x240']);
  });

  it('plans the displayed (rotated) size', () => {
    expect(sizes(pickRungs({ width: 180, height: 320 }))).toEqual(['180p 180x320']);
  });

  it('takes a configured ladder and validates it, naming the bad option', () => {
    const custom = resolveLadderOptions({
      rungs: [
        { label: '240p', shortSide: 240, videoBitrateKbps: 400 },
        { label: '360p', shortSide: 360, videoBitrateKbps: 700 },
      ],
      audioBitrateKbps: 96,
    });
    expect(sizes(pickRungs({ width: 1920, height: 1080 }, custom))).toEqual(['360p 640x360', '240p 426x240']);
    expect(() => resolveLadderOptions({ rungs: [] })).toThrow(/rungs/);
    expect(() => resolveLadderOptions({ rungs: [{ label: 'x', shortSide: 361, videoBitrateKbps: 1 }] })).toThrow(/rungs\[0\]\.shortSide/);
    expect(() => resolveLadderOptions({ audioBitrateKbps: 0 })).toThrow(/audioBitrateKbps/);
    expect(evenSize(641.09)).toBe(642);
    expect(evenSize(1)).toBe(2);
  });
});

describe('transcode and HLS argument builders (pure)', () => {
  const outputs = pickRungs({ width: 1920, height: 1080 }).slice(0, 2).map((rendition, i) => ({ rendition, path: `/media/out${i}.mp4` }));
  /** A progressive 25 fps 1080p source: nothing to deinterlace, no frame rate to cap. */
  const progressive = { frameRate: 25, nominalFrameRate: 25, interlaced: false, storedWidth: 1920, storedHeight: 1080 };

  it('builds one ffmpeg run for all rungs: split, scale, libx264 yuv420p, AAC, faststart MP4', () => {
    const args = buildTranscodeArgs('/media/src.mov', { ...progressive, audioCodec: 'aac' }, outputs);
    const graph = args[args.indexOf('-filter_complex') + 1];
    expect(graph).toBe('[0:v:0]split=2[s0][s1];[s0]scale=1920:1080:flags=bicubic,setsar=1,format=yuv420p[v0];[s1]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v1]');
    expect(args.filter((a) => a === '-movflags')).toHaveLength(2);
    expect(args.filter((a) => a === '+faststart')).toHaveLength(2);
    expect(args.filter((a) => a === '0:a:0')).toHaveLength(2);
    expect(args).toContain('veryfast');
    expect(args).toContain('5000k');
    expect(args.at(-1)).toBe('/media/out1.mp4');
  });

  it('deinterlaces unless the source is known progressive, and caps the frame rate before the split', () => {
    const bwdif = 'bwdif=mode=send_frame:parity=auto:deint=interlaced';
    expect(sourceFilters({ ...progressive, interlaced: true })).toEqual([bwdif]);
    // DV and many transport streams leave the field order unsaid: bwdif then reads each frame's flag.
    expect(sourceFilters({ ...progressive, interlaced: null })).toEqual([bwdif]);
    expect(sourceFilters({ ...progressive, interlaced: null, storedWidth: 1, storedHeight: 1 })).toEqual([]);
    expect(sourceFilters({ ...progressive, frameRate: 120, nominalFrameRate: 120 })).toEqual(['fps=60']);
    // Millisecond timestamps: a nominal 1000 fps, filled with copies unless the real rate is set.
    expect(sourceFilters({ ...progressive, frameRate: 29.97, nominalFrameRate: 1000 })).toEqual(['fps=29.97']);
    expect(sourceFilters({ ...progressive, frameRate: null, nominalFrameRate: 1000 })).toEqual(['fps=60']);
    expect(sourceFilters({ ...progressive, frameRate: 60 })).toEqual([]);
    expect(sourceFilters({ ...progressive, frameRate: 50 }, resolveTranscodeOptions({ maxFrameRate: 30 }))).toEqual(['fps=30']);
    const args = buildTranscodeArgs('/media/src.vob', { ...progressive, interlaced: true, frameRate: 120, nominalFrameRate: 120, audioCodec: 'ac3' }, outputs);
    expect(args[args.indexOf('-filter_complex') + 1]).toMatch(/^\[0:v:0\]bwdif=mode=send_frame:parity=auto:deint=interlaced,fps=60,split=2\[s0\]\[s1\];/);
    expect(() => resolveTranscodeOptions({ maxFrameRate: 0 })).toThrow(/maxFrameRate/);
  });

  it('maps no audio for a silent source, and takes the preset from the options', () => {
    const args = buildTranscodeArgs('/media/src.mov', { ...progressive, audioCodec: null }, outputs, resolveTranscodeOptions({ preset: 'ultrafast' }));
    expect(args).not.toContain('0:a:0');
    expect(args).not.toContain('aac');
    expect(args).toContain('ultrafast');
    expect(() => resolveTranscodeOptions({ preset: 'warp' as never })).toThrow(/preset/);
  });

  it('refuses relative paths, which ffmpeg could read as a protocol or an option', () => {
    expect(() => buildTranscodeArgs('concat:a|b', { ...progressive, audioCodec: null }, outputs)).toThrow(/absolute/);
    expect(() => buildTranscodeArgs('/ok.mp4', { ...progressive, audioCodec: null }, [{ rendition: outputs[0]!.rendition, path: '-y' }])).toThrow(/absolute/);
  });

  it('describes a kept source as its only rendition', () => {
    expect(sourceRendition({ width: 1080, height: 1920, bitrateKbps: 6000 })).toMatchObject({ label: '1080p', width: 1080, height: 1920, videoBitrateKbps: 6000 });
  });

  it('writes a master playlist with BANDWIDTH, RESOLUTION and CODECS', () => {
    const text = buildMasterPlaylist([
      { uri: '720p/index.m3u8', bandwidthBps: 2_928_000, width: 1280, height: 720, codecs: 'avc1.64001f,mp4a.40.2', frameRate: 25 },
      { uri: '360p/index.m3u8', bandwidthBps: 928_000, averageBandwidthBps: 600_000, width: 640, height: 360, codecs: hlsCodecs({ videoProfile: 'High', videoLevel: 30, audioCodec: null }) },
    ]);
    expect(text).toBe(
      [
        '#EXTM3U',
        '#EXT-X-VERSION:3',
        '#EXT-X-INDEPENDENT-SEGMENTS',
        '#EXT-X-STREAM-INF:BANDWIDTH=2928000,RESOLUTION=1280x720,CODECS="avc1.64001f,mp4a.40.2",FRAME-RATE=25.000',
        '720p/index.m3u8',
        '#EXT-X-STREAM-INF:BANDWIDTH=928000,AVERAGE-BANDWIDTH=600000,RESOLUTION=640x360,CODECS="avc1.64001e"',
        '360p/index.m3u8',
        '',
      ].join('\n'),
    );
    expect(() => buildMasterPlaylist([])).toThrow();
    expect(avcCodecString('Constrained Baseline', 30)).toBe('avc1.42e01e');
    expect(avcCodecString('Main', 40)).toBe('avc1.4d4028');
  });

  it('repackages every MP4 into its own HLS variant in one run, without re-encoding', () => {
    const args = buildHlsArgs([
      { input: '/m/720p.mp4', dir: '/m/hls/720p' },
      { input: '/m/360p.mp4', dir: '/m/hls/360p' },
    ]);
    expect(args.filter((a) => a === '-i')).toHaveLength(2);
    expect(args.filter((a) => a === 'copy')).toHaveLength(2);
    expect(args).toContain('/m/hls/360p/segments.csv');
    expect(args).toContain('/m/hls/720p/seg_%05d.ts');
    expect(args.filter((a) => a === 'segment')).toHaveLength(2);
  });
});
