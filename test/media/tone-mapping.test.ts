/**
 * The pure half of tone mapping: which sources are HDR, the filters and tags an encode and a
 * cover get, and that an HDR source is never copied. What the pictures look like is
 * test/media/media-hdr.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { buildCoverArgs, buildFrameSampleArgs } from '../../server/media/cover.js';
import { copyVerdict } from '../../server/media/streamCopy.js';
import { hdrTransferOf, toneMapFilters } from '../../server/media/toneMapping.js';
import { buildTranscodeArgs, DEFAULT_TRANSCODE_OPTIONS } from '../../server/media/transcodeArgs.js';
import { videoInfo } from '../helpers/fixtures.js';

const HLG = videoInfo({ colorTransfer: 'arib-std-b67', colorPrimaries: 'bt2020', colorMatrix: 'bt2020nc', colorRange: 'tv' });
const SDR = { ...HLG, colorTransfer: 'bt709', colorPrimaries: 'bt709', colorMatrix: 'bt709' };
const OUT = [{ rendition: { label: '360p', width: 640, height: 360, videoBitrateKbps: 800, audioBitrateKbps: 64 }, path: '/m/360p.mp4' }];

describe('tone mapping', () => {
  it('takes HLG and PQ for HDR, anything else (or nothing) for SDR', () => {
    expect(hdrTransferOf(HLG)).toBe('arib-std-b67');
    expect(hdrTransferOf({ ...HLG, colorTransfer: 'smpte2084' })).toBe('smpte2084');
    expect(hdrTransferOf(SDR)).toBeNull();
    expect(hdrTransferOf({ ...HLG, colorTransfer: null })).toBeNull();
    expect(toneMapFilters(SDR)).toEqual([]);
  });

  it("names the source's colours to zscale, and takes untagged ones for BT.2020's", () => {
    expect(toneMapFilters(HLG)[0]).toBe('zscale=tin=arib-std-b67:min=bt2020nc:pin=bt2020:rin=limited:t=linear:npl=100');
    expect(toneMapFilters({ ...HLG, colorTransfer: 'smpte2084', colorMatrix: null, colorPrimaries: null, colorRange: 'pc' })[0]).toBe('zscale=tin=smpte2084:min=bt2020nc:pin=bt2020:rin=full:t=linear:npl=100');
    expect(toneMapFilters(HLG).at(-1)).toBe('format=yuv420p');
  });

  it('tone-maps an HDR encode once before the split and tags every output bt709', () => {
    const args = buildTranscodeArgs('/m/source.mp4', HLG, [...OUT, { ...OUT[0]!, path: '/m/180p.mp4' }]);
    const graph = args[args.indexOf('-filter_complex') + 1]!;
    expect(graph).toMatch(/^\[0:v:0\]zscale=tin=arib-std-b67.*tonemap=tonemap=mobius.*,split=2/);
    expect(args.filter((a) => a === '-color_trc')).toHaveLength(2);
    expect(args[args.indexOf('-color_trc') + 1]).toBe('bt709');
    expect(args[args.indexOf('-colorspace') + 1]).toBe('bt709');
  });

  it('leaves an SDR encode alone, and an HDR one untouched where ffmpeg cannot tone-map', () => {
    for (const args of [buildTranscodeArgs('/m/source.mp4', SDR, OUT), buildTranscodeArgs('/m/source.mp4', HLG, OUT, { ...DEFAULT_TRANSCODE_OPTIONS, toneMapping: false })]) {
      expect(args.join(' ')).not.toMatch(/zscale|tonemap|-color_trc/);
    }
  });

  it('tone-maps the cover and the frames sampled for it', () => {
    const filters = toneMapFilters(HLG);
    const cover = buildCoverArgs('/m/source.mp4', 1, '/m/cover.jpg', 2, false, null, filters);
    expect(cover[cover.indexOf('-vf') + 1]).toBe([...filters, 'scale=iw*sar:ih', 'setsar=1'].join(','));
    const sample = buildFrameSampleArgs('/m/source.mp4', 1, null, filters);
    expect(sample[sample.indexOf('-vf') + 1]).toBe(['scale=32:32:flags=area', ...filters, 'format=gray'].join(','));
  });

  it('never copies an HDR source, even H.264 8-bit', () => {
    expect(copyVerdict(HLG, { maxFrameRate: 60 })).toEqual({ copy: false, why: 'HLG HDR' });
    expect(copyVerdict({ ...HLG, colorTransfer: 'smpte2084' }, { maxFrameRate: 60 })).toEqual({ copy: false, why: 'PQ HDR' });
    expect(copyVerdict(SDR, { maxFrameRate: 60 })).toMatchObject({ copy: true });
  });
});
