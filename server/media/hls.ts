/**
 * HLS over the MP4 renditions, for adaptive playback (beyond the spec). Pure.
 *
 * A cheap step after the transcode: each MP4 is repackaged (`-c copy`, no re-encoding) into
 * MPEG-TS segments, every variant in one ffmpeg run, and vop writes the playlists itself. The MP4s
 * stay the spec's `VideoPlayFile`s; HLS is another view of the same encodes, so the two cannot
 * disagree.
 *
 * Every variant of a master playlist is cut at the same moments (Apple's HLS authoring
 * specification: aligned segment boundaries across variants, each segment starting with a
 * keyframe). A native player (Safari, Chromium) that switches variants at a segment boundary
 * otherwise finds no segment starting there, and may end playback early. So the segments are cut
 * with ffmpeg's segment muxer, which cuts at given times: the first variant's cuts are chosen at
 * its keyframes (the first keyframe at or after each multiple of `segmentSeconds`), and every
 * other variant is cut at the same times, where its encode forced keyframes
 * (transcodeArgs.ts, `keyframesAt`). The segment muxer's list says where each cut fell, which
 * is checked against the times asked for ({@link alignedWith}), and gives the exact lengths the
 * playlists carry.
 */
import path from 'node:path';
import { formatTime, timeList } from './timeList.js';
import { absolute } from './transcodeArgs.js';

/** Options of {@link buildHlsArgs}. */
export interface HlsOptions {
  /** Target segment length in seconds, where a variant is cut at its own keyframes (the first at or after each multiple). */
  segmentSeconds: number;
  /** File name of each variant playlist inside its directory. */
  playlistName: string;
}

const DEFAULT_HLS_OPTIONS = {
  segmentSeconds: 4,
  playlistName: 'index.m3u8',
} satisfies HlsOptions;

/** Segments are `seg_00000.ts`: ffmpeg numbers them, past five digits if it must. */
const SEGMENT_PREFIX = 'seg_';

/**
 * The segment muxer's list of what it cut (file, start, end), written beside the segments and read
 * (then removed) by the packaging, never stored: delivery does not serve its name.
 */
export const SEGMENT_LIST_NAME = 'segments.csv';

/**
 * Every name a variant directory written with the default playlist name holds: its playlist and
 * segments (MPEG-TS, or WebVTT for a subtitle rendition). Delivery serves these names only, so they are built from the ones {@link buildHlsArgs}
 * gives.
 */
export const HLS_VARIANT_FILE_RE = new RegExp(`^(?:${escapeRegExp(DEFAULT_HLS_OPTIONS.playlistName)}|${SEGMENT_PREFIX}\\d{5,9}\\.(?:ts|vtt))$`);

/**
 * The longest segment a variant may have and still set the cuts of the others. A copied source
 * whose keyframes are further apart (one keyframe in a minute, a screen recording's 20 s) would
 * make every variant's segments that long: a player then loads a whole long segment before it
 * can start or switch. Its copy stays out of the adaptive set once the ladder lands
 * (ladderJob.ts), and the ladder's rungs are cut at their own keyframes.
 */
export const MAX_ALIGNED_SEGMENT_SECONDS = 10;

/** Fills defaults and validates; throws an Error that names the bad option. */
export function resolveHlsOptions(input: Partial<HlsOptions> = {}): HlsOptions {
  const o: HlsOptions = { ...DEFAULT_HLS_OPTIONS, ...input };
  if (!(o.segmentSeconds >= 1)) throw new Error('Option segmentSeconds must be at least 1.');
  if (!/^[\w.-]+\.m3u8$/.test(o.playlistName)) throw new Error('Option playlistName must be a plain file name ending in .m3u8.');
  return o;
}

/** One MP4 to repackage, and the (existing, empty) directory its segments go to. */
export interface HlsVariantJob {
  /** Absolute path of the rendition MP4. */
  input: string;
  /** Absolute path of the directory for this variant. */
  dir: string;
  /**
   * Where each segment after the first starts, in seconds of the MP4's timeline: the cuts of
   * the variant that set them. Absent: the variant sets its own, at its keyframes.
   */
  cuts?: readonly number[];
  /**
   * Which of the MP4's streams the segments carry: its video and its audio (the default), its
   * video alone (the variants of a master with an audio group), or its audio alone (a rendition
   * of that group).
   */
  streams?: 'video+audio' | 'video' | 'audio';
  /**
   * How far before a cut time a keyframe may fall and still be the cut: half a frame, since an
   * encode forces its keyframe on the frame nearest the time asked.
   */
  toleranceSeconds?: number;
}

/**
 * Arguments for one ffmpeg run writing, for every variant, its segments and
 * `<dir>/segments.csv` (the list of what was cut). The playlists are written from that list
 * ({@link buildVariantPlaylist}).
 *
 * Timestamps pass through as they are (`avoid_negative_ts` off, in the segment muxer and in each
 * segment's MPEG-TS muxer): the same picture then carries the same presentation time in every
 * variant and every segment, whatever each MP4's own start (B-frames, AAC priming), which is what
 * a player switching variants lines them up by.
 */
export function buildHlsArgs(variants: readonly HlsVariantJob[], options: HlsOptions = DEFAULT_HLS_OPTIONS): string[] {
  if (variants.length === 0) throw new Error('buildHlsArgs needs at least one variant.');
  const args: string[] = [];
  for (const v of variants) args.push('-protocol_whitelist', 'file', '-i', absolute(v.input));
  variants.forEach((v, i) => {
    const dir = absolute(v.dir);
    let cutAt: string[];
    if (v.cuts === undefined) cutAt = ['-segment_time', String(options.segmentSeconds)];
    else {
      const list = timeList(v.cuts);
      if (list === null) throw new Error(`Variant ${v.dir} has too many cuts to pass to ffmpeg (${v.cuts.length}).`);
      // An empty list (a video shorter than one segment) is one segment: no time to cut at.
      cutAt = v.cuts.length > 0 ? ['-segment_times', list] : ['-segment_time', '86400000'];
    }
    const streams = v.streams ?? 'video+audio';
    if (streams !== 'audio') args.push('-map', `${i}:v:0`);
    if (streams !== 'video') args.push('-map', `${i}:a:0${streams === 'audio' ? '' : '?'}`);
    args.push(
      '-c', 'copy',
      '-f', 'segment',
      '-segment_format', 'mpegts',
      ...cutAt,
      '-segment_time_delta', formatTime(Math.max(0, v.toleranceSeconds ?? 0)),
      '-avoid_negative_ts', 'disabled',
      '-segment_format_options', 'avoid_negative_ts=disabled',
      '-segment_list', path.join(dir, SEGMENT_LIST_NAME),
      '-segment_list_type', 'csv',
      '-y', path.join(dir, `${SEGMENT_PREFIX}%05d.ts`),
    );
  });
  return args;
}

/** One segment as the segment muxer cut it. */
export interface HlsSegment {
  /** File name, inside the variant's directory. */
  file: string;
  /** Start and end, in seconds of the MP4's timeline. */
  start: number;
  end: number;
}

/** The segment muxer's csv list (`file,start,end` a line); throws when a line is not one. */
export function parseSegmentList(text: string): HlsSegment[] {
  const out: HlsSegment[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const m = /^([\w.-]+),(-?[\d.]+),(-?[\d.]+)$/.exec(line.trim());
    if (!m) throw new Error(`Not a line of ffmpeg's segment list: "${line}".`);
    out.push({ file: m[1]!, start: Number(m[2]), end: Number(m[3]) });
  }
  if (out.length === 0) throw new Error('ffmpeg cut no segment.');
  return out;
}

/** Each segment's length: up to the next one's start, the last to its end. */
export function segmentDurations(segments: readonly HlsSegment[]): number[] {
  return segments.map((s, i) => Math.max(0, (segments[i + 1]?.start ?? s.end) - s.start));
}

/** Where the segments after the first start: the cuts the other variants are made to share. */
export function cutsOf(segments: readonly HlsSegment[]): number[] {
  return segments.slice(1).map((s) => s.start);
}

/**
 * Whether `segments` were cut at `cuts`, each within `toleranceSeconds` (and a millisecond for
 * the lists' rounding): as many segments, each starting where asked.
 */
export function alignedWith(segments: readonly HlsSegment[], cuts: readonly number[], toleranceSeconds: number): boolean {
  const own = cutsOf(segments);
  return own.length === cuts.length && own.every((t, i) => Math.abs(t - cuts[i]!) <= toleranceSeconds + 0.001);
}

/**
 * The media playlist of one variant (RFC 8216 section 4.3.3): every segment with its exact
 * length, a VOD playlist that ends. EXT-X-TARGETDURATION is the longest segment rounded up.
 * With `bytes` (each segment's size), each segment carries its rate as EXT-X-BITRATE (kbit/s,
 * RFC 8216bis section 4.4.4.8; older players ignore the tag): an audio rendition's, which the
 * ladder adds to the BANDWIDTH of the variants it makes later ({@link bitRatesOfPlaylist}).
 */
export function buildVariantPlaylist(segments: readonly HlsSegment[], bytes?: readonly number[]): string {
  const durations = segmentDurations(segments);
  const lines = [
    '#EXTM3U',
    '#EXT-X-VERSION:3',
    `#EXT-X-TARGETDURATION:${Math.max(1, Math.ceil(Math.max(...durations) - 0.0005))}`,
    '#EXT-X-MEDIA-SEQUENCE:0',
    '#EXT-X-PLAYLIST-TYPE:VOD',
    '#EXT-X-INDEPENDENT-SEGMENTS',
  ];
  segments.forEach((s, i) => {
    const size = bytes?.[i];
    if (size !== undefined) lines.push(`#EXT-X-BITRATE:${Math.max(1, Math.round(segmentBitRates([{ seconds: durations[i]!, bytes: size }]).peakBps / 1000))}`);
    lines.push(`#EXTINF:${durations[i]!.toFixed(6)},`, s.file);
  });
  lines.push('#EXT-X-ENDLIST');
  return lines.join('\n') + '\n';
}

/**
 * The segment lengths of a media playlist (ours, or ffmpeg's HLS muxer's before vop cut them
 * itself); empty when it has none.
 */
export function parseVariantDurations(text: string): number[] {
  const out: number[] = [];
  for (const m of text.matchAll(/^#EXTINF:([\d.]+)/gm)) out.push(Number(m[1]));
  return out.every((d) => Number.isFinite(d) && d >= 0) ? out : [];
}

/**
 * The rates of a media playlist {@link buildVariantPlaylist} wrote with sizes: the highest
 * EXT-X-BITRATE, and their average over the segments' lengths, in bits per second; null when it
 * carries none.
 */
export function bitRatesOfPlaylist(text: string): { peakBps: number; averageBps: number } | null {
  let peak = 0;
  let bits = 0;
  let seconds = 0;
  let rate: number | undefined;
  for (const line of text.split(/\r?\n/)) {
    const r = /^#EXT-X-BITRATE:(\d+)$/.exec(line);
    if (r) rate = Number(r[1]) * 1000;
    const d = /^#EXTINF:([\d.]+)/.exec(line);
    if (d && rate !== undefined) {
      peak = Math.max(peak, rate);
      bits += rate * Number(d[1]);
      seconds += Number(d[1]);
    }
  }
  return peak > 0 ? { peakBps: peak, averageBps: Math.round(bits / Math.max(0.001, seconds)) } : null;
}

/** The cuts a media playlist's segments were made at: each segment's start after the first. */
export function cutsOfDurations(durations: readonly number[]): number[] {
  const cuts: number[] = [];
  let t = 0;
  for (const d of durations.slice(0, -1)) cuts.push((t += d));
  return cuts;
}

/**
 * A variant's bit rates from its segments (Apple's HLS authoring specification): the peak is the
 * highest of its segments' rates (BANDWIDTH), the average its bytes over its length
 * (AVERAGE-BANDWIDTH). A segment shorter than half a second counts at half a second: a last
 * segment of a frame or two would otherwise declare a peak the stream never has.
 */
export function segmentBitRates(segments: ReadonlyArray<{ seconds: number; bytes: number }>): { peakBps: number; averageBps: number } {
  let peak = 0;
  let bytes = 0;
  let seconds = 0;
  for (const s of segments) {
    peak = Math.max(peak, (s.bytes * 8) / Math.max(0.5, s.seconds));
    bytes += s.bytes;
    seconds += s.seconds;
  }
  return { peakBps: Math.round(peak), averageBps: Math.round((bytes * 8) / Math.max(0.001, seconds)) };
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
  /** The GROUP-ID of the audio renditions it plays with (its own segments then carry no audio). */
  audioGroup?: string;
  /** The GROUP-ID of the subtitle renditions offered with it. */
  subtitlesGroup?: string;
}

/** One rendition of a master playlist's group (RFC 8216 section 4.3.4.1): an audio track or a subtitle language. */
export interface MasterMedia {
  type: 'AUDIO' | 'SUBTITLES';
  groupId: string;
  /** What a player's menu shows; unique within the group. */
  name: string;
  /** BCP-47 tag, when known. */
  language?: string;
  /** The one a player picks without being asked (one per group at most). */
  default: boolean;
  /** Whether a player may pick it on its own (by the viewer's language); a DEFAULT one is. */
  autoselect: boolean;
  /** Subtitles the source marks forced: shown whatever the viewer chose. */
  forced?: boolean;
  /** Address of its media playlist, relative to the master playlist. */
  uri: string;
  /** Audio channels ("2"), when known. */
  channels?: string;
}

/**
 * `text` as a playlist's quoted attribute can carry it, for a name a source or an application
 * gave (a track's title): a double quote becomes a single one, control characters (line breaks
 * among them) spaces, at most 100 characters.
 */
export function playlistSafe(text: string): string {
  return text.replace(/"/g, "'").replace(/[\u0000-\u001f\u007f]+/g, ' ').trim().slice(0, 100);
}

/**
 * `names` made unique within a group, as RFC 8216 asks of NAME: a name met again becomes
 * "<name> (2)", "<name> (3)", in order.
 */
export function uniqueNames(names: readonly string[]): string[] {
  const used = new Map<string, number>();
  return names.map((name) => {
    const seen = (used.get(name) ?? 0) + 1;
    used.set(name, seen);
    return seen === 1 ? name : `${name} (${seen})`;
  });
}

/**
 * The master playlist as delivery serves it: `stored` (what the jobs wrote) with `subtitles`
 * listed as renditions of the subtitle group, which every variant then names. Pure; `stored`
 * as it is when there are none.
 */
export function withSubtitles(stored: string, subtitles: readonly MasterMedia[]): string {
  if (subtitles.length === 0) return stored;
  const variants = parseMasterPlaylist(stored).map((v) => ({ ...v, subtitlesGroup: SUBTITLES_GROUP }));
  const media = [...parseMasterMedia(stored).filter((m) => m.type !== 'SUBTITLES'), ...subtitles.map((m) => ({ ...m, type: 'SUBTITLES' as const, groupId: SUBTITLES_GROUP }))];
  return buildMasterPlaylist(variants, media);
}

/** The group every audio rendition is in: one group, since every variant plays with every track. */
export const AUDIO_GROUP = 'audio';

/** The group every subtitle rendition is in. */
export const SUBTITLES_GROUP = 'subs';

/**
 * The master playlist text listing every variant (RFC 8216 section 4.3.4.2), after the
 * renditions of their groups (`media`).
 */
export function buildMasterPlaylist(variants: readonly MasterVariant[], media: readonly MasterMedia[] = []): string {
  if (variants.length === 0) throw new Error('A master playlist needs at least one variant.');
  const lines = ['#EXTM3U', '#EXT-X-VERSION:3', '#EXT-X-INDEPENDENT-SEGMENTS'];
  for (const m of media) {
    for (const text of [m.uri, m.name, m.groupId, m.language ?? '', m.channels ?? '']) {
      if (/[\r\n"]/.test(text)) throw new Error(`Rendition "${m.uri}" has a character a playlist cannot carry.`);
    }
    const attrs = [`TYPE=${m.type}`, `GROUP-ID="${m.groupId}"`, `NAME="${m.name}"`];
    if (m.language) attrs.push(`LANGUAGE="${m.language}"`);
    attrs.push(`DEFAULT=${m.default ? 'YES' : 'NO'}`, `AUTOSELECT=${m.autoselect || m.default ? 'YES' : 'NO'}`);
    if (m.type === 'SUBTITLES' && m.forced) attrs.push('FORCED=YES');
    if (m.channels) attrs.push(`CHANNELS="${m.channels}"`);
    attrs.push(`URI="${m.uri}"`);
    lines.push(`#EXT-X-MEDIA:${attrs.join(',')}`);
  }
  for (const v of variants) {
    if (/[\r\n"]/.test(v.uri) || /[\r\n"]/.test(v.codecs)) throw new Error(`Variant "${v.uri}" has a character a playlist cannot carry.`);
    const attrs = [`BANDWIDTH=${Math.round(v.bandwidthBps)}`];
    if (v.averageBandwidthBps !== undefined) attrs.push(`AVERAGE-BANDWIDTH=${Math.round(v.averageBandwidthBps)}`);
    attrs.push(`RESOLUTION=${v.width}x${v.height}`, `CODECS="${v.codecs}"`);
    if (v.frameRate !== undefined) attrs.push(`FRAME-RATE=${v.frameRate.toFixed(3)}`);
    if (v.audioGroup) attrs.push(`AUDIO="${v.audioGroup}"`);
    if (v.subtitlesGroup) attrs.push(`SUBTITLES="${v.subtitlesGroup}"`);
    lines.push(`#EXT-X-STREAM-INF:${attrs.join(',')}`, v.uri);
  }
  return lines.join('\n') + '\n';
}

/** The renditions of a master playlist {@link buildMasterPlaylist} wrote; lines it does not know are left out. */
export function parseMasterMedia(text: string): MasterMedia[] {
  const out: MasterMedia[] = [];
  for (const m of text.matchAll(/^#EXT-X-MEDIA:(.*)$/gm)) {
    const attrs = attributesOf(m[1]!);
    const type = attrs.get('TYPE');
    const groupId = attrs.get('GROUP-ID');
    const name = attrs.get('NAME');
    const uri = attrs.get('URI');
    if ((type !== 'AUDIO' && type !== 'SUBTITLES') || !groupId || !name || !uri) continue;
    const language = attrs.get('LANGUAGE');
    const channels = attrs.get('CHANNELS');
    out.push({
      type,
      groupId,
      name,
      ...(language ? { language } : {}),
      default: attrs.get('DEFAULT') === 'YES',
      autoselect: attrs.get('AUTOSELECT') === 'YES',
      ...(attrs.get('FORCED') === 'YES' ? { forced: true } : {}),
      uri,
      ...(channels ? { channels } : {}),
    });
  }
  return out;
}

/** A tag's attribute list (RFC 8216 section 4.2), quoted strings unquoted. */
function attributesOf(list: string): Map<string, string> {
  const attrs = new Map<string, string>();
  for (const a of list.matchAll(/([A-Z0-9-]+)=("[^"]*"|[^,]*)/g)) attrs.set(a[1]!, a[2]!.replace(/^"|"$/g, ''));
  return attrs;
}

/**
 * The bit rate at or below which the first variant of a master playlist is chosen: a native
 * player (Safari, Chromium) starts with the first variant listed and measures from there
 * (Apple's HLS authoring specification asks for the first to be a sensible start, not the
 * highest). 3 Mbit/s is a 720p rung with its audio.
 */
export const FIRST_VARIANT_MAX_BPS = 3_000_000;

/**
 * `variants` in the order a master playlist lists them: first the highest whose average bit rate
 * is at most {@link FIRST_VARIANT_MAX_BPS} (the lowest when none is), then the others, highest
 * peak first.
 */
export function orderForPlayers(variants: readonly MasterVariant[]): MasterVariant[] {
  const sorted = [...variants].sort((a, b) => b.bandwidthBps - a.bandwidthBps);
  const average = (v: MasterVariant) => v.averageBandwidthBps ?? v.bandwidthBps;
  const start = sorted.find((v) => average(v) <= FIRST_VARIANT_MAX_BPS) ?? sorted.at(-1);
  return start ? [start, ...sorted.filter((v) => v !== start)] : sorted;
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
    const attrs = attributesOf(m[1]!);
    const uri = lines[i + 1]?.trim() ?? '';
    const size = /^(\d+)x(\d+)$/.exec(attrs.get('RESOLUTION') ?? '');
    const bandwidth = Number(attrs.get('BANDWIDTH'));
    const codecs = attrs.get('CODECS');
    if (!uri || uri.startsWith('#') || !size || !(bandwidth > 0) || !codecs) continue;
    const average = Number(attrs.get('AVERAGE-BANDWIDTH'));
    const rate = Number(attrs.get('FRAME-RATE'));
    const audioGroup = attrs.get('AUDIO');
    const subtitlesGroup = attrs.get('SUBTITLES');
    out.push({
      uri,
      bandwidthBps: bandwidth,
      ...(average > 0 ? { averageBandwidthBps: average } : {}),
      width: Number(size[1]),
      height: Number(size[2]),
      codecs,
      ...(rate > 0 ? { frameRate: rate } : {}),
      ...(audioGroup ? { audioGroup } : {}),
      ...(subtitlesGroup ? { subtitlesGroup } : {}),
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
