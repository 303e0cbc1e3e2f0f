/**
 * What a stored file is, judged by its content (ffprobe), never by its name (issue 3, item 5).
 *
 * ffprobe is run directly with `-print_format json` rather than through fluent-ffmpeg's
 * `ffprobe()`: that one parses the flat `key=value` output, which merges side data (the rotation)
 * into the stream and leaves negative numbers as strings, and its `setFfprobePath()` is
 * module-wide (see ffmpegRunner.ts).
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { confine } from './confinement.js';
import { BUILT_IN_CONTAINERS, VERDICT_FORMATS } from './demuxers.js';

/** A file we can transcode. Sizes are as displayed: after rotation and the pixel aspect ratio. */
export interface VideoInfo {
  isVideo: true;
  /** Playing time in seconds (not rounded). */
  durationSeconds: number;
  /** Displayed width in pixels: rotation applied, non-square pixels stretched. */
  width: number;
  /** Displayed height in pixels. */
  height: number;
  /** Stored (coded) picture size, before rotation. */
  storedWidth: number;
  storedHeight: number;
  /** Clockwise rotation a player applies to the stored picture: 0, 90, 180 or 270. */
  rotation: number;
  /** ffprobe codec name of the first video stream, e.g. "h264". */
  videoCodec: string;
  /** Codec profile, e.g. "High"; null when not reported. */
  videoProfile: string | null;
  /** Codec level as ffprobe reports it (H.264: 31 means 3.1); null when not reported. */
  videoLevel: number | null;
  /**
   * ffprobe's pixel format of the video stream, e.g. "yuv420p" (8-bit 4:2:0) or "yuv420p10le";
   * null (or absent) when not reported. Whether a source plays in browsers as it is depends on it.
   */
  pixelFormat?: string | null;
  /** Average frames per second; null when not reported. */
  frameRate: number | null;
  /**
   * ffprobe's average rate alone (avg_frame_rate), without {@link frameRate}'s fall-back on the
   * nominal rate: null (or absent) when not reported, as for a WebM with millisecond timestamps
   * whose nominal rate is 1000.
   */
  averageFrameRate?: number | null;
  /**
   * The rate every frame time fits (ffprobe's r_frame_rate), which ffmpeg fills a constant-rate
   * output to: 1000 for a WebM or MKV with millisecond timestamps whatever its real rate.
   */
  nominalFrameRate: number | null;
  /**
   * How many frames the decoder holds back to put them in order (ffprobe's has_b_frames): above
   * 0 when the stream has B-frames; null (or absent) when not reported.
   */
  reorderedFrames?: number | null;
  /**
   * ffprobe's names of the picture's colours, null (or absent) when untagged: the transfer
   * (`bt709`, `arib-std-b67` for HLG, `smpte2084` for PQ), the primaries (`bt709`, `bt2020`),
   * the matrix (`bt709`, `bt2020nc`) and the range (`tv` limited, `pc` full). HLG and PQ are
   * tone-mapped (toneMapping.ts).
   */
  colorTransfer?: string | null;
  colorPrimaries?: string | null;
  colorMatrix?: string | null;
  colorRange?: string | null;
  /**
   * Whether the stream is stored as interlaced fields: true for a top- or bottom-field-first
   * field order, false for progressive, null when ffprobe does not say (DV, some transport
   * streams: the decoder then flags each frame).
   */
  interlaced: boolean | null;
  /** ffprobe codec name of the first audio stream, or null when there is none. */
  audioCodec: string | null;
  /** Channels of the first audio stream; null (or absent) when there is none or it is not reported. */
  audioChannels?: number | null;
  /**
   * Every audio stream, in the file's order (`0:a:<index>`); absent where not probed. The first
   * is {@link audioCodec}'s, the one every MP4 rendition carries; HLS offers them all
   * (processing/audioRenditions.ts).
   */
  audioTracks?: AudioTrack[];
  /** Every subtitle stream, in the file's order (`0:s:<index>`), whatever its codec; absent where not probed. */
  subtitleTracks?: SubtitleTrack[];
  /** The file's chapters, in its order; absent where not probed. */
  chapters?: Chapter[];
  /** Overall bitrate in kbit/s; null when neither reported nor computable. */
  bitrateKbps: number | null;
  /** ffprobe's container name, e.g. "mov,mp4,m4a,3gp,3g2,mj2". */
  formatName: string;
}

/** What a stream's tags say of it, as the file gives them (not checked). */
export interface TrackTags {
  /** The `language` tag: ISO 639-2 in MP4 and Matroska ("eng"), BCP-47 in newer Matroska; null when absent or "und". */
  language: string | null;
  /** The `title` tag (Matroska's track name, an MP4 track's name); null when absent. */
  title: string | null;
}

/** One audio stream of a source. */
export interface AudioTrack extends TrackTags {
  /** Its position among the audio streams: `0:a:<index>` in ffmpeg's terms. */
  index: number;
  /** ffprobe's codec name, e.g. "aac", "ac3". */
  codec: string;
  /** Channels; null when not reported. */
  channels: number | null;
}

/** One subtitle stream of a source. */
export interface SubtitleTrack extends TrackTags {
  /** Its position among the subtitle streams: `0:s:<index>`. */
  index: number;
  /** ffprobe's codec name: "subrip", "ass", "mov_text", "webvtt" are text; "hdmv_pgs_subtitle", "dvd_subtitle" pictures. */
  codec: string;
  /** Whether the source marks it forced (shown whatever the viewer chose): disposition "forced". */
  forced: boolean;
}

/** One chapter of a source. */
export interface Chapter {
  /** Start and end in seconds of the file's timeline. */
  start: number;
  end: number;
  /** Its `title` tag; null when absent. */
  title: string | null;
}

/** The most chapters read of a file: a book-length film has a few hundred; more is a file's doing. */
export const MAX_CHAPTERS = 1000;

/** The most streams of a kind kept: more audio or subtitle streams than any release carries is a file's doing. */
export const MAX_TRACKS = 32;

/** A file that is not a video, with why (kept as the video's failure reason). */
export interface NotVideo {
  isVideo: false;
  /** Plain-language reason, e.g. "no video stream (audio only)". */
  reason: string;
  /** The container ffprobe recognised, if any. */
  formatName: string | null;
}

export type ProbeResult = VideoInfo | NotVideo;

/** Options of {@link probe}. */
export interface ProbeOptions {
  /**
   * ffprobe executable, chosen by the caller (media/ffmpegTools.ts, the binaries' proof): the
   * choice itself probes files, so probe cannot ask for it without a circle.
   */
  ffprobePath: string;
  /** How long ffprobe may take, in ms; a file that takes longer is reported as an error, not as a verdict. */
  timeoutMs: number;
  /**
   * Cap on ffprobe's address space in bytes (Linux with prlimit; 0: none). ffprobe decodes a
   * frame or two of some formats, and runs confined like ffmpeg (media/confinement.ts).
   */
  memoryLimitBytes: number;
  /**
   * The demuxers ffprobe may open (`-format_whitelist`, exact ffmpeg names): a file no other
   * demuxer reads is "not a video" before any other demuxer has looked inside it. Default: the
   * built-in containers and the verdict formats (media/demuxers.ts).
   */
  formats: readonly string[];
}

/**
 * The most address space a probe gets, whatever a transcode may take: ffprobe reads headers and
 * decodes a frame or two with one thread (a 4K HEVC 10-bit source needs under 384 MiB), so more
 * is what a hostile file makes it take (a playlist that names itself drove it to 4 GB).
 */
export const PROBE_MEMORY_LIMIT_BYTES = 512 * 2 ** 20;

/** A probe's cap under the processing cap `limit` (0: none, and none for probes either). */
export function probeMemoryLimit(limit: number): number {
  return limit > 0 ? Math.min(limit, PROBE_MEMORY_LIMIT_BYTES) : 0;
}

export const DEFAULT_PROBE_OPTIONS = { timeoutMs: 30_000, memoryLimitBytes: 0, formats: [...BUILT_IN_CONTAINERS, ...VERDICT_FORMATS] } satisfies Partial<ProbeOptions>;

/**
 * ffprobe gave no verdict on the content. `tool`: the binary failed (could not start, crashed,
 * was killed, ran out of time), so another binary may still read the file; `file`: the file is
 * not there to read.
 */
export class ProbeError extends Error {
  override name = 'ProbeError';
  constructor(
    message: string,
    readonly failed: 'tool' | 'file' = 'tool',
  ) {
    super(message);
  }
}

/**
 * Containers that point at other files or at the network. ffmpeg would follow the references, so
 * an uploaded playlist could pull local files or internal URLs into a rendition; we refuse them.
 * `tty` turns any text into "video" frames.
 */
const REFERENCE_FORMATS = new Set(['hls', 'applehttp', 'concat', 'ffconcat', 'sdp', 'rtp', 'rtsp', 'tee', 'tty', 'lavfi', 'dash', 'image2', 'imf', 'webm_dash_manifest']);

/** Whether `format` (a demuxer name) reads other files or streams, and so is never opened on an upload. */
export function isReferenceFormat(format: string): boolean {
  return REFERENCE_FORMATS.has(format);
}

/** The most of ffprobe's JSON report read; a larger one is a verdict on the file (see probe). */
const MAX_REPORT_BYTES = 8 * 2 ** 20;

/** Probes `file`; resolves with a verdict, rejects with {@link ProbeError} when ffprobe cannot give one. */
export async function probe(file: string, input: Partial<ProbeOptions> & Pick<ProbeOptions, 'ffprobePath'>): Promise<ProbeResult> {
  const o: ProbeOptions = { ...DEFAULT_PROBE_OPTIONS, ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)), ffprobePath: input.ffprobePath };
  if (!(o.timeoutMs > 0)) throw new Error('Option timeoutMs must be greater than 0.');
  const abs = path.resolve(file);
  const stat = await fs.stat(abs).catch((err: NodeJS.ErrnoException) => {
    throw new ProbeError(`Cannot probe "${abs}": ${err.code ?? err.message}`, 'file');
  });
  if (!stat.isFile()) throw new ProbeError(`Cannot probe "${abs}": not a regular file.`, 'file');
  if (stat.size === 0) return { isVideo: false, reason: 'the file is empty', formatName: null };
  const ffprobePath = o.ffprobePath;
  // "file:" stops ffprobe from reading a name as a protocol ("http:…", "concat:…") or an option ("-…").
  const url = `file:${abs}`;
  const formats = ['-format_whitelist', o.formats.join(',')];
  // One decoding thread: the frames decoded to learn a stream's parameters need no more, and every
  // thread adds its stack and its allocator's arena to the address space the cap counts.
  const args = ['-v', 'error', '-hide_banner', '-threads', '1', '-protocol_whitelist', 'file', ...formats, '-print_format', 'json', '-show_format', '-show_streams', '-show_chapters', url];
  const json = await new Promise<FfprobeJson | NotVideo>((resolve, reject) => {
    const cmd = confine(ffprobePath, args, { dieWithParent: true, memoryLimitBytes: o.memoryLimitBytes });
    execFile(cmd.file, cmd.args, { timeout: o.timeoutMs, maxBuffer: MAX_REPORT_BYTES, windowsHide: true, env: cmd.env }, (err, stdout, stderr) => {
      if (err) {
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string; signal?: NodeJS.Signals | null };
        // A report this large is the file's doing (megabytes of metadata tags), not the tool's: a
        // file no camera or editor writes, refused as one, not passed on as a probe that broke.
        if (e.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') return resolve({ isVideo: false, reason: `ffprobe's report on it is over ${MAX_REPORT_BYTES / 2 ** 20} MiB (metadata no video needs)`, formatName: null });
        if (e.killed) return reject(new ProbeError(`ffprobe took longer than ${o.timeoutMs} ms on "${abs}".`));
        if (typeof e.code === 'string') return reject(new ProbeError(`Could not run ffprobe "${ffprobePath}": ${e.message}`));
        // The confining wrappers (setpriv, prlimit) exec ffprobe in place; when that exec fails they say so and exit 126 or 127.
        if (cmd.file !== ffprobePath && (e.code === 126 || e.code === 127) && /failed to execute/.test(stderr)) return reject(new ProbeError(`Could not run ffprobe "${ffprobePath}": ${lastLine(stderr)}`));
        // Killed by a signal (SIGSEGV, SIGABRT, the OOM killer's SIGKILL), or a shell wrapper's
        // 128+N for one: the tool broke, which says nothing about the file (issue 10, item 1).
        const signal = e.signal ?? (typeof e.code === 'number' && e.code > 128 && e.code < 160 ? `signal ${e.code - 128}` : null);
        if (signal) return reject(new ProbeError(`ffprobe "${ffprobePath}" crashed (${signal}) on "${abs}".`));
        // Recognised as a format it may not open: refused by name, before that demuxer read a byte
        // more (a playlist never opens what it names).
        const refused = /\[([\w,]+) @ 0x[0-9a-f]+\] Format not on whitelist/.exec(stderr)?.[1];
        if (refused) return resolve(notOpened(refused));
        const said = lastLine(stderr).replace(`${url}: `, '');
        return resolve({ isVideo: false, reason: `not a media file ffprobe can read${said ? ` (${said})` : ''}`, formatName: null });
      }
      try {
        resolve(JSON.parse(stdout) as FfprobeJson);
      } catch (parseErr) {
        reject(new ProbeError(`ffprobe printed output we cannot read: ${(parseErr as Error).message}`));
      }
    });
  });
  if ('isVideo' in json) return json;
  // A recording written as it was made (a browser's MediaRecorder, a live stream saved to disk)
  // has no duration in its header: the end of its last video packet is its playing time.
  if (json.format && positive(json.format.duration) === null && !(json.streams ?? []).some((st) => positive(st.duration) !== null)) {
    const { end } = await videoPackets(ffprobePath, url, o);
    if (end !== null) json.format.duration = String(end);
  } else if (json.format && (json.format.format_name ?? '').split(',').some((f) => JUMPING_TIMESTAMPS.has(f))) {
    // A stream whose timestamps may jump: its header's duration is the span of its timestamps,
    // which a jump (a capture cut and resumed, a crafted file) makes hours long while ffmpeg plays
    // and transcodes only the frames there are. Its playing time is the frames' own.
    const { played } = await videoPackets(ffprobePath, url, o);
    const header = positive(json.format.duration);
    // Only a jump replaces the header's duration: otherwise they differ by the audio's tail at most.
    if (played !== null && header !== null && header - played > JUMP_SECONDS) {
      json.format.duration = String(played);
      delete json.format.bit_rate; // ffprobe's is the size over the jumped span: worked out again from the played time
    }
  }
  return interpretProbe(json);
}

/**
 * Containers whose timestamps may jump mid-stream (MPEG transport and program streams): ffmpeg
 * reads over a jump as a discontinuity and plays on, so their header duration is no playing time.
 */
const JUMPING_TIMESTAMPS = new Set(['mpegts', 'mpeg']);

/**
 * A step between two packets' decoding times longer than this is a jump, not time played:
 * ffmpeg's own threshold for a discontinuity in these streams (`-dts_delta_threshold`, 10 s).
 */
const JUMP_SECONDS = 10;

/**
 * The first video stream's packets, from a pass over them (no decoding), read line by line so
 * that a long file costs no memory: `end`, the end time of the last one; `played`, the time from
 * the first to the end of the last with every jump of their timestamps (see JUMP_SECONDS) taken
 * out, null when they have no decoding times. A pass that runs out of time or breaks is the
 * tool's failure, as in {@link probe}; one that ffprobe ends with an error gives nulls.
 */
function videoPackets(ffprobePath: string, url: string, o: ProbeOptions): Promise<{ end: number | null; played: number | null }> {
  const args = ['-v', 'error', '-hide_banner', '-threads', '1', '-protocol_whitelist', 'file', '-format_whitelist', o.formats.join(','), '-select_streams', 'v:0', '-show_entries', 'packet=pts_time,dts_time,duration_time', '-of', 'csv=p=0', url];
  const cmd = confine(ffprobePath, args, { dieWithParent: true, memoryLimitBytes: o.memoryLimitBytes });
  return new Promise((resolve, reject) => {
    const child = spawn(cmd.file, cmd.args, { stdio: ['ignore', 'pipe', 'ignore'], windowsHide: true, env: cmd.env });
    let end: number | null = null;
    let played = 0;
    let lastDts: number | null = null;
    let lastDuration = 0;
    let rest = '';
    let timedOut = false;
    const take = (line: string) => {
      if (line.trim() === '') return;
      const [pts, dts, duration] = line.split(',').map((v) => (v === '' || v === 'N/A' ? NaN : Number(v)));
      const known = duration !== undefined && Number.isFinite(duration) && duration > 0;
      if (dts !== undefined && Number.isFinite(dts)) {
        // Time from the packet before, in decoding order; a step back or a leap is a jump, which
        // counts as the packet before's own duration.
        if (lastDts !== null) {
          const step = dts - lastDts;
          played += step >= 0 && step <= JUMP_SECONDS ? step : lastDuration;
        }
        lastDts = dts;
        lastDuration = known ? duration : 0;
      }
      if (pts === undefined || !Number.isFinite(pts)) return;
      const packetEnd = pts + (known ? duration : 0);
      if (end === null || packetEnd > end) end = packetEnd;
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) take(line);
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, o.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new ProbeError(`Could not run ffprobe "${ffprobePath}": ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) return reject(new ProbeError(`ffprobe took longer than ${o.timeoutMs} ms reading the packets of "${url}".`));
      if (signal) return reject(new ProbeError(`ffprobe "${ffprobePath}" crashed (${signal}) reading the packets of "${url}".`));
      if (code !== 0) return resolve({ end: null, played: null });
      take(rest);
      played += lastDuration;
      resolve({ end: end !== null && end > 0 ? end : null, played: lastDts !== null && played > 0 ? played : null });
    });
  });
}

/** The parts of `ffprobe -print_format json -show_format -show_streams` that we read. */
export interface FfprobeJson {
  streams?: Array<{
    codec_type?: string;
    codec_name?: string;
    profile?: string;
    level?: number;
    pix_fmt?: string;
    channels?: number;
    width?: number;
    height?: number;
    sample_aspect_ratio?: string;
    avg_frame_rate?: string;
    r_frame_rate?: string;
    has_b_frames?: number;
    color_transfer?: string;
    color_primaries?: string;
    color_space?: string;
    color_range?: string;
    /** "progressive", "tt", "bb", "tb", "bt" or "unknown". */
    field_order?: string;
    duration?: string;
    nb_frames?: string;
    disposition?: { attached_pic?: number; default?: number; forced?: number };
    tags?: Record<string, string>;
    side_data_list?: Array<{ side_data_type?: string; rotation?: number | string }>;
  }>;
  chapters?: Array<{ start_time?: string; end_time?: string; tags?: Record<string, string> }>;
  format?: { format_name?: string; duration?: string; bit_rate?: string; size?: string };
}

/** The verdict on a file ffprobe recognised as `format`, a demuxer it may not open. */
function notOpened(format: string): NotVideo {
  if (format.split(',').some((f) => REFERENCE_FORMATS.has(f))) return { isVideo: false, reason: `"${format}" refers to other files or streams; upload the media itself`, formatName: format };
  return { isVideo: false, reason: `its container (${format}) is not one vop accepts; an admin can allow it (processing.allowFormats.containers)`, formatName: format };
}

/** Pure: turns ffprobe's JSON into a verdict. */
export function interpretProbe(json: FfprobeJson): ProbeResult {
  const streams = json.streams ?? [];
  const formatName = json.format?.format_name ?? null;
  const no = (reason: string): NotVideo => ({ isVideo: false, reason, formatName });
  if (formatName && formatName.split(',').some((f) => REFERENCE_FORMATS.has(f))) return no(`"${formatName}" refers to other files or streams; upload the media itself`);

  // Cover art in an audio file is a video stream too, flagged attached_pic: it is not a video.
  const video = streams.find((s) => s.codec_type === 'video' && s.disposition?.attached_pic !== 1);
  const audio = streams.find((s) => s.codec_type === 'audio');
  if (!video) return no(audio ? 'no video stream (audio only)' : 'no video stream');
  if (formatName && (formatName === 'image2' || formatName.endsWith('_pipe'))) return no(`a still image (${video.codec_name ?? formatName}), not a video`);

  const durationSeconds = positive(json.format?.duration) ?? positive(video.duration);
  if (durationSeconds === null) return no(`no playing time (${video.codec_name ?? 'unknown codec'}); a single picture or a damaged file`);
  if (video.nb_frames === '1') return no(`a single frame (${video.codec_name ?? 'unknown codec'}), not a video`);
  const storedWidth = video.width ?? 0;
  const storedHeight = video.height ?? 0;
  if (storedWidth <= 0 || storedHeight <= 0) return no('the video stream has no picture size');

  const rotation = rotationOf(video);
  // Non-square pixels (DV, some broadcast captures): the displayed width is the stored width stretched.
  const sar = /^(\d+):(\d+)$/.exec(video.sample_aspect_ratio ?? '');
  const sarNum = sar ? Number(sar[1]) : 1;
  const sarDen = sar ? Number(sar[2]) : 1;
  const shownWidth = sarNum > 0 && sarDen > 0 ? Math.round((storedWidth * sarNum) / sarDen) : storedWidth;
  const quarter = rotation === 90 || rotation === 270;

  const sizeBytes = positive(json.format?.size);
  const bitRate = positive(json.format?.bit_rate);
  return {
    isVideo: true,
    durationSeconds,
    width: quarter ? storedHeight : shownWidth,
    height: quarter ? shownWidth : storedHeight,
    storedWidth,
    storedHeight,
    rotation,
    videoCodec: video.codec_name ?? 'unknown',
    videoProfile: video.profile ?? null,
    videoLevel: typeof video.level === 'number' && video.level > 0 ? video.level : null,
    pixelFormat: video.pix_fmt ?? null,
    frameRate: rate(video.avg_frame_rate) ?? rate(video.r_frame_rate),
    averageFrameRate: rate(video.avg_frame_rate),
    nominalFrameRate: rate(video.r_frame_rate),
    colorTransfer: colourName(video.color_transfer),
    colorPrimaries: colourName(video.color_primaries),
    colorMatrix: colourName(video.color_space),
    colorRange: colourName(video.color_range),
    reorderedFrames: typeof video.has_b_frames === 'number' && video.has_b_frames >= 0 ? video.has_b_frames : null,
    interlaced: video.field_order === 'progressive' ? false : ['tt', 'bb', 'tb', 'bt'].includes(video.field_order ?? '') ? true : null,
    audioCodec: audio?.codec_name ?? null,
    audioChannels: typeof audio?.channels === 'number' && audio.channels > 0 ? audio.channels : null,
    audioTracks: streams
      .filter((st) => st.codec_type === 'audio')
      .slice(0, MAX_TRACKS)
      .map((st, index) => ({ index, codec: st.codec_name ?? 'unknown', channels: typeof st.channels === 'number' && st.channels > 0 ? st.channels : null, ...tagsOf(st) })),
    subtitleTracks: streams
      .filter((st) => st.codec_type === 'subtitle')
      .slice(0, MAX_TRACKS)
      .map((st, index) => ({ index, codec: st.codec_name ?? 'unknown', forced: st.disposition?.forced === 1, ...tagsOf(st) })),
    chapters: chaptersOf(json.chapters ?? []),
    bitrateKbps: bitRate !== null ? Math.round(bitRate / 1000) : sizeBytes !== null ? Math.round((sizeBytes * 8) / durationSeconds / 1000) : null,
    formatName: formatName ?? 'unknown',
  };
}

/** A stream's language and title tags, as given ("und" is no language). */
function tagsOf(stream: { tags?: Record<string, string> }): TrackTags {
  const tag = (name: string) => {
    const value = Object.entries(stream.tags ?? {}).find(([k]) => k.toLowerCase() === name)?.[1]?.trim();
    return value ? value.slice(0, 200) : null;
  };
  const language = tag('language');
  return { language: language === null || language.toLowerCase() === 'und' ? null : language, title: tag('title') };
}

/** The chapters that have a length, at most {@link MAX_CHAPTERS}. */
function chaptersOf(chapters: NonNullable<FfprobeJson['chapters']>): Chapter[] {
  return chapters
    .slice(0, MAX_CHAPTERS)
    .map((c) => ({ start: Number(c.start_time), end: Number(c.end_time), title: c.tags?.title?.trim().slice(0, 200) || null }))
    .filter((c) => Number.isFinite(c.start) && Number.isFinite(c.end) && c.end > c.start && c.start >= 0);
}

/** ffprobe's colour name, null when it says it does not know. */
function colourName(name: string | undefined): string | null {
  return name && name !== 'unknown' && name !== 'reserved' && name !== 'unspecified' ? name : null;
}

/**
 * Clockwise display rotation. Older ffprobe reports the `rotate` tag (clockwise); newer ones the
 * display matrix as side data, whose `rotation` is counter-clockwise, hence the minus.
 */
function rotationOf(video: NonNullable<FfprobeJson['streams']>[number]): number {
  const matrix = video.side_data_list?.find((d) => d.side_data_type === 'Display Matrix' && d.rotation !== undefined);
  const degrees = matrix ? -Number(matrix.rotation) : Number(video.tags?.rotate ?? 0);
  if (!Number.isFinite(degrees)) return 0;
  return (((Math.round(degrees / 90) * 90) % 360) + 360) % 360;
}

function positive(value: string | number | undefined): number | null {
  const n = Number(value);
  return value !== undefined && Number.isFinite(n) && n > 0 ? n : null;
}

function rate(value: string | undefined): number | null {
  const m = /^(\d+)\/(\d+)$/.exec(value ?? '');
  if (!m || Number(m[2]) === 0 || Number(m[1]) === 0) return null;
  return Math.round((Number(m[1]) / Number(m[2])) * 1000) / 1000;
}

function lastLine(text: string): string {
  return text.trim().split('\n').pop()?.trim() ?? '';
}
