/**
 * HLS over the MP4 renditions, for adaptive playback (issue 4, item 3, beyond the spec). Pure.
 *
 * A second, cheap step after the transcode: each MP4 is repackaged (`-c copy`, no re-encoding)
 * into a variant playlist with its segments, all variants in one ffmpeg run. The MP4s stay the
 * spec's `VideoPlayFile`s; HLS is another view of the same encodes, so the two cannot disagree.
 * Segments cut on keyframes, which the transcode places every `keyframeIntervalSeconds`.
 */
import path from 'node:path';
import { absolute } from './transcodeArgs.js';

/** Options of {@link buildHlsArgs}. */
export interface HlsOptions {
  /** Target segment length in seconds (a multiple of the transcode's keyframe interval cuts cleanly). */
  segmentSeconds: number;
  /**
   * "mpegts": .ts segments, which every HLS player since 2009 plays; "fmp4": fragmented MP4
   * segments (HLS version 7), smaller overhead, needs a newer player.
   */
  segmentType: 'mpegts' | 'fmp4';
  /** File name of each variant playlist inside its directory. */
  playlistName: string;
}

const DEFAULT_HLS_OPTIONS = {
  segmentSeconds: 4,
  segmentType: 'mpegts',
  playlistName: 'index.m3u8',
} satisfies HlsOptions;

/** The init segment of an fmp4 variant. */
const INIT_SEGMENT_NAME = 'init.mp4';

/** Segments are `seg_00000.ts` (or `.m4s`): ffmpeg numbers them, past five digits if it must. */
const SEGMENT_PREFIX = 'seg_';

/**
 * Every name a variant directory written with the default playlist name holds: its playlist,
 * segments and init segment. Delivery serves these names only, so they are built from the ones
 * {@link buildHlsArgs} gives.
 */
export const HLS_VARIANT_FILE_RE = new RegExp(
  `^(?:${escapeRegExp(DEFAULT_HLS_OPTIONS.playlistName)}|${SEGMENT_PREFIX}\\d{5,9}\\.(?:ts|m4s)|${escapeRegExp(INIT_SEGMENT_NAME)})$`,
);

/** Fills defaults and validates; throws an Error that names the bad option. */
export function resolveHlsOptions(input: Partial<HlsOptions> = {}): HlsOptions {
  const o: HlsOptions = { ...DEFAULT_HLS_OPTIONS, ...input };
  if (!(o.segmentSeconds >= 1)) throw new Error('Option segmentSeconds must be at least 1.');
  if (o.segmentType !== 'mpegts' && o.segmentType !== 'fmp4') throw new Error('Option segmentType must be "mpegts" or "fmp4".');
  if (!/^[\w.-]+\.m3u8$/.test(o.playlistName)) throw new Error('Option playlistName must be a plain file name ending in .m3u8.');
  return o;
}

/** One MP4 to repackage, and the (existing, empty) directory its playlist and segments go to. */
export interface HlsVariantJob {
  /** Absolute path of the rendition MP4. */
  input: string;
  /** Absolute path of the directory for this variant. */
  dir: string;
}

/** Arguments for one ffmpeg run writing `<dir>/<playlistName>` and segments for every variant. */
export function buildHlsArgs(variants: readonly HlsVariantJob[], options: HlsOptions = DEFAULT_HLS_OPTIONS): string[] {
  if (variants.length === 0) throw new Error('buildHlsArgs needs at least one variant.');
  const args: string[] = [];
  for (const v of variants) args.push('-protocol_whitelist', 'file', '-i', absolute(v.input));
  const fmp4 = options.segmentType === 'fmp4';
  variants.forEach((v, i) => {
    const dir = absolute(v.dir);
    args.push(
      '-map', `${i}:v:0`,
      '-map', `${i}:a:0?`,
      '-c', 'copy',
      '-f', 'hls',
      '-hls_time', String(options.segmentSeconds),
      '-hls_playlist_type', 'vod',
      '-hls_segment_type', options.segmentType,
      ...(fmp4 ? ['-hls_fmp4_init_filename', INIT_SEGMENT_NAME] : []),
      '-hls_segment_filename', path.join(dir, `${SEGMENT_PREFIX}%05d.${fmp4 ? 'm4s' : 'ts'}`),
      '-y', path.join(dir, options.playlistName),
    );
  });
  return args;
}

/** One line of the master playlist. */
export interface MasterVariant {
  /** Playlist address relative to the master playlist, e.g. "720p/index.m3u8". */
  uri: string;
  /** Peak bits per second of the variant, audio included (the rung's ceiling, or measured). */
  bandwidthBps: number;
  /** Average bits per second, when known (measured from the file). */
  averageBandwidthBps?: number;
  width: number;
  height: number;
  /** RFC 6381 codecs, e.g. "avc1.64001f,mp4a.40.2"; see {@link hlsCodecs}. */
  codecs: string;
  /** Frames per second, when known. */
  frameRate?: number;
}

/** The master playlist text listing every variant (RFC 8216 section 4.3.4.2). */
export function buildMasterPlaylist(variants: readonly MasterVariant[]): string {
  if (variants.length === 0) throw new Error('A master playlist needs at least one variant.');
  const lines = ['#EXTM3U', '#EXT-X-VERSION:3', '#EXT-X-INDEPENDENT-SEGMENTS'];
  for (const v of variants) {
    if (/[\r\n"]/.test(v.uri) || /[\r\n"]/.test(v.codecs)) throw new Error(`Variant "${v.uri}" has a character a playlist cannot carry.`);
    const attrs = [`BANDWIDTH=${Math.round(v.bandwidthBps)}`];
    if (v.averageBandwidthBps !== undefined) attrs.push(`AVERAGE-BANDWIDTH=${Math.round(v.averageBandwidthBps)}`);
    attrs.push(`RESOLUTION=${v.width}x${v.height}`, `CODECS="${v.codecs}"`);
    if (v.frameRate !== undefined) attrs.push(`FRAME-RATE=${v.frameRate.toFixed(3)}`);
    lines.push(`#EXT-X-STREAM-INF:${attrs.join(',')}`, v.uri);
  }
  return lines.join('\n') + '\n';
}

/**
 * The variants of a master playlist {@link buildMasterPlaylist} wrote (the ladder adds its rungs
 * to the one the first rendition stored). Lines it does not know are left out; a variant without
 * a BANDWIDTH, RESOLUTION or CODECS attribute, or without its address, is not one it wrote.
 */
export function parseMasterPlaylist(text: string): MasterVariant[] {
  const lines = text.split(/\r?\n/);
  const out: MasterVariant[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^#EXT-X-STREAM-INF:(.*)$/.exec(lines[i]!);
    if (!m) continue;
    const attrs = new Map<string, string>();
    for (const a of m[1]!.matchAll(/([A-Z0-9-]+)=("[^"]*"|[^,]*)/g)) attrs.set(a[1]!, a[2]!.replace(/^"|"$/g, ''));
    const uri = lines[i + 1]?.trim() ?? '';
    const size = /^(\d+)x(\d+)$/.exec(attrs.get('RESOLUTION') ?? '');
    const bandwidth = Number(attrs.get('BANDWIDTH'));
    const codecs = attrs.get('CODECS');
    if (!uri || uri.startsWith('#') || !size || !(bandwidth > 0) || !codecs) continue;
    const average = Number(attrs.get('AVERAGE-BANDWIDTH'));
    const rate = Number(attrs.get('FRAME-RATE'));
    out.push({
      uri,
      bandwidthBps: bandwidth,
      ...(average > 0 ? { averageBandwidthBps: average } : {}),
      width: Number(size[1]),
      height: Number(size[2]),
      codecs,
      ...(rate > 0 ? { frameRate: rate } : {}),
    });
  }
  return out;
}

/** AAC-LC, the only audio profile our encodes produce. */
const AAC_LC_CODEC = 'mp4a.40.2';

/** H.264 profile_idc and constraint flags by ffprobe's profile name. */
const AVC_PROFILES: Record<string, string> = {
  'Constrained Baseline': '42e0',
  Baseline: '4200',
  Main: '4d40',
  Extended: '58a0',
  High: '6400',
  'High 10': '6e00',
  'High 4:2:2': '7a00',
  'High 4:4:4 Predictive': 'f400',
};

/**
 * RFC 6381 codec string for H.264 ("avc1.PPCCLL") from ffprobe's profile name and level
 * (31 for 3.1); null when the profile is not one we know.
 */
export function avcCodecString(profile: string, level: number): string | null {
  const pc = AVC_PROFILES[profile];
  if (!pc || !Number.isInteger(level) || level <= 0 || level > 255) return null;
  return `avc1.${pc}${level.toString(16).padStart(2, '0')}`;
}

/** The CODECS attribute of a variant from its probe (video profile and level, audio present or not). */
export function hlsCodecs(video: { videoProfile: string | null; videoLevel: number | null; audioCodec: string | null }): string {
  const avc = video.videoProfile && video.videoLevel ? avcCodecString(video.videoProfile, video.videoLevel) : null;
  // High profile, level 4.0: what our encodes are at most, a safe declaration when the probe is silent.
  const parts = [avc ?? 'avc1.640028'];
  if (video.audioCodec === 'mp3') parts.push('mp4a.40.34');
  else if (video.audioCodec !== null) parts.push(AAC_LC_CODEC);
  return parts.join(',');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
