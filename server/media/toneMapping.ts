/**
 * HDR sources made SDR (BT.709) for every rendition, HLS segment and cover. Pure.
 *
 * Phones record HDR by default (iPhones: HEVC 10-bit HLG; others PQ, HDR10), and nearly every
 * browser, and every 8-bit H.264 decoder, shows BT.709 SDR. Copied or converted without tone
 * mapping, such a picture comes out grey and washed out: its BT.2020 colours read as BT.709 and
 * its HLG or PQ levels as SDR gamma. The filters below convert it as Jellyfin and most players do
 * (ffmpeg's zscale and tonemap, on linear light):
 *
 *  1. the source's levels to linear light with `zscale`, its transfer, matrix, primaries and range
 *     named from the probe (a decoder does not always pass them on with the frames), 1.0 being
 *     100 cd/m² (`npl=100`, SDR's reference white);
 *  2. BT.2020 primaries to BT.709's, in 32-bit float so nothing clips before the tone curve;
 *  3. the `mobius` curve with its knee at half the range: linear below, so the SDR-range part of
 *     the picture (most of it: BT.2408 puts diffuse white at 203 cd/m²) keeps its levels and
 *     saturation, and a smooth roll-off above, so highlights keep their detail; `desat=0`, as
 *     desaturating highlights greys bright colours;
 *  4. BT.709's gamma, matrix and limited range, 8-bit 4:2:0.
 *
 * Measured on a test source made SDR → HLG (and → PQ) the BT.2408 way: the tone-mapped frame's
 * mean luma and saturation are within 10 % of the SDR original's; without it, its saturation is a
 * third of the original's (test/media/media-hdr.test.ts).
 */
import type { VideoInfo } from './probe.js';

/** The HDR transfers vop tone-maps: HLG (ARIB STD-B67) and PQ (SMPTE ST 2084). */
export type HdrTransfer = 'arib-std-b67' | 'smpte2084';

const HDR_TRANSFERS: ReadonlySet<string> = new Set<HdrTransfer>(['arib-std-b67', 'smpte2084']);

/** The ffmpeg filters tone mapping needs; a build without one of them cannot tone-map. */
export const TONE_MAPPING_FILTERS = ['zscale', 'tonemap'] as const;

/** What vop needs to know of a picture's colours (ffprobe's names). */
export type ColourInfo = Pick<VideoInfo, 'colorTransfer' | 'colorPrimaries' | 'colorMatrix' | 'colorRange'>;

/** The source's HDR transfer, or null for an SDR (or untagged) picture. */
export function hdrTransferOf(info: ColourInfo): HdrTransfer | null {
  const t = info.colorTransfer ?? null;
  return t !== null && HDR_TRANSFERS.has(t) ? (t as HdrTransfer) : null;
}

/** A short name for people: "HLG" or "PQ". */
export function hdrName(transfer: HdrTransfer): string {
  return transfer === 'arib-std-b67' ? 'HLG' : 'PQ';
}

/** zscale's names for the matrices, primaries and ranges ffprobe reports (the ones HDR video uses). */
const ZSCALE_MATRIX: Record<string, string> = { bt2020nc: 'bt2020nc', bt2020c: 'bt2020c', bt709: 'bt709', smpte170m: '170m', bt470bg: '470bg' };
const ZSCALE_PRIMARIES: Record<string, string> = { bt2020: 'bt2020', bt709: 'bt709', smpte170m: '170m', bt470bg: '470bg', smpte432: 'smpte432' };
const ZSCALE_RANGE: Record<string, string> = { tv: 'limited', pc: 'full' };

/**
 * The filters that make an HDR picture BT.709 SDR, 8-bit 4:2:0 (see the file comment); empty for
 * an SDR source. Untagged matrix and primaries are taken as BT.2020's, the range as limited:
 * what every HLG and PQ camera writes.
 */
export function toneMapFilters(info: ColourInfo): string[] {
  const transfer = hdrTransferOf(info);
  if (transfer === null) return [];
  const matrix = ZSCALE_MATRIX[info.colorMatrix ?? ''] ?? 'bt2020nc';
  const primaries = ZSCALE_PRIMARIES[info.colorPrimaries ?? ''] ?? 'bt2020';
  const range = ZSCALE_RANGE[info.colorRange ?? ''] ?? 'limited';
  return [
    `zscale=tin=${transfer}:min=${matrix}:pin=${primaries}:rin=${range}:t=linear:npl=100`,
    'format=gbrpf32le',
    'zscale=p=bt709',
    'tonemap=tonemap=mobius:param=0.5:desat=0',
    'zscale=t=bt709:m=bt709:r=limited',
    'format=yuv420p',
  ];
}

/** Output options that tag an encode as what the tone mapping made: BT.709 throughout, limited range. */
export const SDR_OUTPUT_TAGS = ['-color_primaries', 'bt709', '-color_trc', 'bt709', '-colorspace', 'bt709', '-color_range', 'tv'] as const;
