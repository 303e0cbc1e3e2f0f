/**
 * The sources users bring (issue 10, item 2): phone clips, AV1, WebM, MKV, AVI, WMV, broadcast
 * transport streams, DVDs, camcorder DV, old camera QuickTimes, 3GP, FLV and the odd ones. Each
 * is made here with Debian's ffmpeg (it encodes what the bundled 2018 build cannot), uploaded
 * through the spec API to a real server, and must end in status 1 with renditions that every
 * browser plays. ffprobe then checks every MP4 rendition and its HLS variant:
 *
 *   - H.264 High, 8-bit yuv420p, even sizes; AAC LC (no audio track for a silent source);
 *   - the picture upright (rotation baked in, no display matrix left) and in its real proportions
 *     (square pixels at the source's display aspect);
 *   - the source's duration, within 0.2 s; the index (moov) before the media data (faststart);
 *   - interlaced sources deinterlaced (ffmpeg's idet finds no interlaced frame in the output);
 *   - the cover upright and in proportion as well.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isBlankFrame } from '../../server/media/cover.js';
import { run } from '../../server/media/ffmpegRunner.js';
import { pickRungs, resolveLadderOptions } from '../../server/media/ladder.js';
import type { SpecClient } from '../helpers/client.js';
import { imageLuma, makeTempDir, mp4TopLevelBoxes } from '../helpers/clips.js';
import { waitForStatus } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

const FFMPEG = '/usr/bin/ffmpeg';
const FFPROBE = '/usr/bin/ffprobe';
const available = fs.existsSync(FFMPEG) && fs.existsSync(FFPROBE);

/** Two small rungs, plus a 576p one that only the DVD and DV sources reach: idet needs their full height. */
const LADDER = {
  rungs: [
    { label: '576p', shortSide: 576, videoBitrateKbps: 1500 },
    { label: '180p', shortSide: 180, videoBitrateKbps: 300 },
    { label: '120p', shortSide: 120, videoBitrateKbps: 200 },
  ],
  audioBitrateKbps: 64,
};

/** One source users bring. */
interface SourceCase {
  name: string;
  /** File name extension, as the user's file would have it. */
  ext: string;
  /** ffmpeg runs (arguments without the binary) that make the file at `out`, in order. */
  make: (out: string, dir: string) => string[][];
  /** Encoders the fixture needs; a case whose encoder Debian's ffmpeg lacks is skipped. */
  encoders: string[];
  /** The picture as a player shows it: rotation applied, pixels made square. */
  display: [number, number];
  /** Whether the source has sound (the renditions then carry AAC). */
  audio: boolean;
  /** The renditions' audio sample rate: the first audio track's. */
  sampleRate?: number;
  /** Audio tracks beyond one: HLS then offers each as an audio rendition, its variants picture alone. */
  audioTracks?: number;
  /** Interlaced source: the full-height rendition must have no interlaced frame left. */
  interlaced?: boolean;
  /** Frames per second the renditions keep. */
  fps?: number;
  /** The upright picture (a lavfi source): the largest rendition must match it, not a turned or mirrored copy. */
  upright?: string;
  /**
   * A source browsers play as it is (H.264 4:2:0 8-bit, unturned, progressive, up to 1080p): its
   * top rendition is its own video stream, copied (its profile is the source's), not an encode.
   */
  copied?: boolean;
}

const picture = (size: string, rate: number | string, filters = '', seconds = 1) => ['-f', 'lavfi', '-i', `testsrc2=s=${size}:r=${rate}:d=${seconds}${filters ? `,${filters}` : ''}`];
const tone = (sampleRate = 48000, seconds = 1) => ['-f', 'lavfi', '-i', `sine=f=440:sample_rate=${sampleRate}:d=${seconds}`];
const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast'];

const CASES: SourceCase[] = [
  {
    name: 'phone clip: HEVC 10-bit in MOV, 90° display matrix',
    ext: 'mov',
    encoders: ['libx265'],
    // A portrait picture stored turned a quarter clockwise, as the sensor saw it; the display
    // matrix turns it back (ffprobe: rotation=90, counter-clockwise). ffmpeg 5.1 writes the
    // matrix from the rotate tag on a stream copy only.
    make: (out) => [
      [...picture('180x320', 30, 'transpose=clock'), ...tone(), '-c:v', 'libx265', '-preset', 'ultrafast', '-x265-params', 'log-level=error', '-pix_fmt', 'yuv420p10le', '-tag:v', 'hvc1', '-c:a', 'aac', '-y', `${out}.plain.mov`],
      ['-i', `${out}.plain.mov`, '-map', '0', '-c', 'copy', '-metadata:s:v:0', 'rotate=90', '-y', out],
    ],
    display: [180, 320],
    audio: true,
    upright: 'testsrc2=s=180x320:r=30:d=1',
  },
  {
    name: 'phone clip held upside down: H.264 in MP4, 180° display matrix',
    ext: 'mp4',
    encoders: ['libx264'],
    make: (out) => [
      [...picture('320x180', 30, 'hflip,vflip'), ...tone(), ...x264, '-c:a', 'aac', '-y', `${out}.plain.mp4`],
      ['-i', `${out}.plain.mp4`, '-map', '0', '-c', 'copy', '-metadata:s:v:0', 'rotate=180', '-y', out],
    ],
    display: [320, 180],
    audio: true,
    upright: 'testsrc2=s=320x180:r=30:d=1',
  },
  {
    name: 'AV1 in MP4',
    ext: 'mp4',
    encoders: ['libsvtav1'],
    make: (out) => [[...picture('320x240', 24), ...tone(), '-c:v', 'libsvtav1', '-preset', '12', '-c:a', 'aac', '-y', out]],
    display: [320, 240],
    audio: true,
  },
  {
    name: 'WebM: VP9 and Opus',
    ext: 'webm',
    encoders: ['libvpx-vp9', 'libopus'],
    make: (out) => [[...picture('320x180', 30), ...tone(), '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '300k', '-c:a', 'libopus', '-y', out]],
    display: [320, 180],
    audio: true,
  },
  {
    name: 'MKV with two audio tracks and subtitles',
    ext: 'mkv',
    encoders: ['libx264', 'ac3'],
    make: (out, dir) => {
      const srt = path.join(dir, 'subs.srt');
      fs.writeFileSync(srt, '1\n00:00:00,000 --> 00:00:00,900\nHello\n');
      return [
        [
          ...picture('320x180', 25), ...tone(48000), ...tone(44100), '-i', srt,
          '-map', '0:v', '-map', '1:a', '-map', '2:a', '-map', '3:s',
          ...x264, '-c:a:0', 'aac', '-c:a:1', 'ac3', '-c:s', 'srt',
          '-metadata:s:a:0', 'language=eng', '-metadata:s:a:1', 'language=fra', '-disposition:a:0', 'default', '-disposition:a:1', '0',
          '-y', out,
        ],
      ];
    },
    display: [320, 180],
    audio: true,
    sampleRate: 48000,
    audioTracks: 2,
    copied: true,
  },
  {
    name: 'a clip without sound',
    ext: 'mp4',
    encoders: ['libx264'],
    make: (out) => [[...picture('320x180', 25), ...x264, '-y', out]],
    display: [320, 180],
    audio: false,
    copied: true,
  },
  {
    name: 'AVI: MPEG-4 Part 2 (XviD) and MP3',
    ext: 'avi',
    encoders: ['mpeg4', 'libmp3lame'],
    make: (out) => [[...picture('320x240', 25), ...tone(44100), '-c:v', 'mpeg4', '-vtag', 'XVID', '-q:v', '5', '-c:a', 'libmp3lame', '-b:a', '128k', '-y', out]],
    display: [320, 240],
    audio: true,
  },
  {
    name: 'WMV/WMA (ASF)',
    ext: 'wmv',
    encoders: ['wmv2', 'wmav2'],
    make: (out) => [[...picture('320x240', 25), ...tone(44100), '-c:v', 'wmv2', '-b:v', '500k', '-c:a', 'wmav2', '-b:a', '64k', '-y', out]],
    display: [320, 240],
    audio: true,
  },
  {
    name: 'MPEG-TS: H.264 and AC-3 5.1',
    ext: 'ts',
    encoders: ['libx264', 'ac3'],
    make: (out) => [[...picture('320x180', 25), ...tone(), ...x264, '-c:a', 'ac3', '-ac', '6', '-f', 'mpegts', '-y', out]],
    display: [320, 180],
    audio: true,
    copied: true,
  },
  {
    name: 'M2TS (Blu-ray/AVCHD): H.264 and AC-3',
    ext: 'm2ts',
    encoders: ['libx264', 'ac3'],
    make: (out) => [[...picture('320x180', 25), ...tone(), ...x264, '-c:a', 'ac3', '-f', 'mpegts', '-mpegts_m2ts_mode', '1', '-y', out]],
    display: [320, 180],
    audio: true,
    copied: true,
  },
  {
    name: 'DVD (VOB): MPEG-2 PAL, anamorphic 16:9, interlaced top field first',
    ext: 'vob',
    encoders: ['mpeg2video', 'ac3'],
    // Made at 50 frames a second and woven into 25 interlaced ones: each field is its own moment.
    make: (out) => [[...picture('720x576', 50, 'interlace=scan=tff'), ...tone(), '-target', 'pal-dvd', '-aspect', '16:9', '-flags', '+ildct+ilme', '-top', '1', '-y', out]],
    display: [1024, 576],
    audio: true,
    interlaced: true,
  },
  {
    name: 'DVD (MPG): MPEG-2 NTSC, anamorphic 4:3',
    ext: 'mpg',
    encoders: ['mpeg2video', 'ac3'],
    make: (out) => [[...picture('720x480', '30000/1001'), ...tone(), '-target', 'ntsc-dvd', '-aspect', '4:3', '-y', out]],
    display: [640, 480],
    audio: true,
  },
  {
    name: 'camcorder DV in AVI: PAL 4:3, interlaced bottom field first',
    ext: 'avi',
    encoders: ['dvvideo', 'pcm_s16le'],
    make: (out) => [[...picture('720x576', 50, 'interlace=scan=bff,setfield=bff'), ...tone(), '-c:v', 'dvvideo', '-pix_fmt', 'yuv420p', '-aspect', '4:3', '-c:a', 'pcm_s16le', '-y', out]],
    display: [768, 576],
    audio: true,
    interlaced: true,
  },
  {
    name: 'old camera QuickTime: Motion JPEG 4:2:2 (yuvj422p) and PCM',
    ext: 'mov',
    encoders: ['mjpeg', 'pcm_s16le'],
    make: (out) => [[...picture('320x240', 30), ...tone(), '-c:v', 'mjpeg', '-pix_fmt', 'yuvj422p', '-q:v', '3', '-c:a', 'pcm_s16le', '-y', out]],
    display: [320, 240],
    audio: true,
  },
  {
    name: 'variable frame rate phone clip',
    ext: 'mp4',
    encoders: ['libx264'],
    // 60 frames a second, thinned unevenly in the first half: the frame times vary.
    make: (out) => [[...picture('320x180', 60, "select='gte(t\\,1)+not(mod(n\\,3))+not(mod(n\\,7))'", 2), ...tone(48000, 2), ...x264, '-vsync', 'vfr', '-c:a', 'aac', '-y', out]],
    display: [320, 180],
    audio: true,
    copied: true,
  },
  {
    name: 'variable frame rate WebM with millisecond timestamps (a nominal 1000 fps), as browsers and OBS record',
    ext: 'webm',
    encoders: ['libvpx', 'libopus'],
    make: (out) => [[...picture('320x180', 1000, "select='not(mod(n\\,33))+not(mod(n\\,47))+not(mod(n\\,61))'"), ...tone(), '-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '300k', '-vsync', 'vfr', '-c:a', 'libopus', '-y', out]],
    display: [320, 180],
    audio: true,
  },
  {
    name: '3GP: H.263 QCIF and AAC',
    ext: '3gp',
    encoders: ['h263'],
    make: (out) => [[...picture('176x144', 15), ...tone(16000), '-c:v', 'h263', '-c:a', 'aac', '-ac', '1', '-y', out]],
    display: [176, 144],
    audio: true,
  },
  {
    name: 'FLV: Sorenson Spark and MP3',
    ext: 'flv',
    encoders: ['flv', 'libmp3lame'],
    make: (out) => [[...picture('320x240', 25), ...tone(44100), '-c:v', 'flv', '-q:v', '5', '-c:a', 'libmp3lame', '-y', out]],
    display: [320, 240],
    audio: true,
  },
  {
    name: 'a 1x1 picture',
    ext: 'mp4',
    encoders: ['libx264'],
    make: (out) => [[...picture('16x16', 25, 'scale=1:1'), ...tone(), ...x264, '-pix_fmt', 'yuv444p', '-c:a', 'aac', '-y', out]],
    display: [1, 1],
    audio: true,
  },
  {
    name: 'odd dimensions (321x241)',
    ext: 'mp4',
    encoders: ['libx264'],
    make: (out) => [[...picture('321x241', 25), ...tone(), ...x264, '-pix_fmt', 'yuv444p', '-c:a', 'aac', '-y', out]],
    display: [321, 241],
    audio: true,
  },
  {
    name: '60 frames a second',
    ext: 'mp4',
    encoders: ['libx264'],
    make: (out) => [[...picture('320x180', 60), ...tone(), ...x264, '-c:a', 'aac', '-y', out]],
    display: [320, 180],
    audio: true,
    fps: 60,
    copied: true,
  },
  {
    name: '120 frames a second (a game capture): capped at 60',
    ext: 'mp4',
    encoders: ['libx264'],
    make: (out) => [[...picture('320x180', 120), ...tone(), ...x264, '-c:a', 'aac', '-y', out]],
    display: [320, 180],
    audio: true,
    fps: 60,
  },
  {
    name: 'ProRes 4:2:2 10-bit in MOV',
    ext: 'mov',
    encoders: ['prores_ks', 'pcm_s16le'],
    make: (out) => [[...picture('320x180', 25), ...tone(), '-c:v', 'prores_ks', '-profile:v', '2', '-pix_fmt', 'yuv422p10le', '-c:a', 'pcm_s16le', '-y', out]],
    display: [320, 180],
    audio: true,
  },
  {
    name: 'H.264 4:4:4 (High 4:4:4 Predictive)',
    ext: 'mp4',
    encoders: ['libx264'],
    make: (out) => [[...picture('320x180', 25), ...tone(), ...x264, '-pix_fmt', 'yuv444p', '-c:a', 'aac', '-y', out]],
    display: [320, 180],
    audio: true,
  },
  {
    name: 'full-range H.264 (yuvj420p)',
    ext: 'mp4',
    encoders: ['libx264'],
    make: (out) => [[...picture('320x180', 30), ...tone(), ...x264, '-pix_fmt', 'yuvj420p', '-c:a', 'aac', '-y', out]],
    display: [320, 180],
    audio: true,
  },
  {
    name: 'an audio-less screen recording: VP8 WebM at 683x384',
    ext: 'webm',
    encoders: ['libvpx'],
    make: (out) => [[...picture('683x384', 30), '-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '500k', '-y', out]],
    display: [683, 384],
    audio: false,
  },
];

const ladder = resolveLadderOptions(LADDER);
let t: TestServer;
let client: SpecClient;
let encoders = '';
let dir: string;

beforeAll(async () => {
  if (!available) return;
  dir = makeTempDir('vop-sources-');
  encoders = (await promisify(execFile)(FFMPEG, ['-hide_banner', '-encoders'])).stdout;
  // Debian's binaries read all of these (the bundled 2018 ffprobe crashes on MPEG-TS); vop picks
  // them itself where they are newer, but the matrix must not depend on that choice. Ingest's
  // check and the transcode share these settings.
  t = await startServer({ processing: { preset: 'superfast', concurrency: 2, hlsSegmentSeconds: 1, ladder: LADDER, retry: { maxRetries: 0 }, ffmpegPath: FFMPEG, ffprobePath: FFPROBE } });
  client = await t.newApp();
});
afterAll(async () => {
  await t?.close();
});

describe.skipIf(!available)('the sources users bring end in status 1 with renditions every browser plays', () => {
  for (const c of CASES) it.concurrent(c.name, async ({ skip }) => {
    const missing = c.encoders.filter((e) => !new RegExp(`^ \\S{6} ${e.replace(/[-+]/g, '\\$&')} `, 'm').test(encoders));
    if (missing.length > 0) skip(`Debian's ffmpeg lacks ${missing.join(', ')}`);

    const source = path.join(dir, `${c.name.replace(/\W+/g, '-')}.${c.ext}`);
    for (const args of c.make(source, dir)) await run(args, { ffmpegPath: FFMPEG });
    const src = await ffprobe(source);
    const sourceProfile = src.streams.find((st) => st.codec_type === 'video')?.profile as string;
    // ultrafast makes Constrained Baseline: a copy and an encode (High) can be told apart.
    if (c.copied) expect(sourceProfile, 'the fixture is not High profile').not.toBe('High');
    const sourceSeconds = Number(src.format.duration);
    if (c.upright) expect(src.streams[0]!.side_data_list?.[0]?.rotation, 'the fixture carries its display matrix').toBeTruthy();
    expect(sourceSeconds).toBeGreaterThan(0.5);

    const id = await client.register();
    const body = new FormData();
    for (const [k, v] of Object.entries({ ...client.auth(), VideoId: id })) body.append(k, v);
    body.append('file', new Blob([Uint8Array.from(fs.readFileSync(source))]), path.basename(source));
    const res = await fetch(`${t.baseUrl}/Api/Video/Upload`, { method: 'POST', body });
    expect((await res.json()).AuthMsg.ResultCode).toBe('1');
    const status = await waitForStatus(t.vop, id, [1, 7], { timeoutMs: 170_000 });
    expect(status, (await t.vop.stores.videos.get(id))?.statusReason).toBe(1);

    const rows = await t.vop.stores.videos.renditions(id);
    const planned = pickRungs({ width: c.display[0], height: c.display[1] }, ladder);
    expect(rows.map((r) => [r.label, r.width, r.height])).toEqual(planned.map((r) => [r.label, r.width, r.height]));
    for (const r of rows) {
      const file = t.vop.media.resolveRelative('play', r.file)!;
      const out = await ffprobe(file);
      // The copied top rendition keeps the source's profile; every encode is High.
      const profile = c.copied && r === rows[0] ? sourceProfile : 'High';
      expectPlayable(out, c, [r.width, r.height], sourceSeconds, 0.2, false, profile);
      // +faststart: the index before the media data, so playback starts before the download ends.
      const boxes = mp4TopLevelBoxes(file).map((b) => b.type);
      expect(boxes.indexOf('moov'), boxes.join(',')).toBeGreaterThanOrEqual(0);
      expect(boxes.indexOf('moov'), boxes.join(',')).toBeLessThan(boxes.indexOf('mdat'));
      // The HLS variant is the same encode, repackaged.
      const variant = await ffprobe(t.vop.media.path('hls', id, r.label, 'index.m3u8'));
      expectPlayable(variant, { ...c, audio: c.audio && !c.audioTracks }, [r.width, r.height], sourceSeconds, 0.3, true, profile);
      if (c.interlaced && r.label === '576p') expect(await interlacedFrames(file)).toEqual({ tff: 0, bff: 0 });
      // Turned the right way (a wrong turn or a mirror image scores about 6 dB).
      if (c.upright && r === rows[0]) expect(await psnr(file, c.upright, [r.width, r.height])).toBeGreaterThan(30);
    }
    // Several audio tracks: each an HLS audio rendition of AAC-LC, stereo at most, as long as the source.
    for (let n = 0; n < (c.audioTracks ?? 0); n++) {
      const track = await ffprobe(t.vop.media.path('hls', id, `audio-${n}`, 'index.m3u8'));
      expect(track.streams.map((st) => [st.codec_type, st.codec_name, st.profile])).toEqual([['audio', 'aac', 'LC']]);
      expect(track.streams[0]!.channels).toBeLessThanOrEqual(2);
      expect(Math.abs(Number(track.format.duration) - sourceSeconds)).toBeLessThan(0.3);
    }
    // The cover is the picture as shown too: upright, square pixels.
    const cover = (await ffprobe(t.vop.media.path('covers', id, 'cover.jpg'))).streams[0]!;
    expect(Math.abs((cover.width * c.display[1]) / c.display[0] - cover.height), `cover ${cover.width}x${cover.height}`).toBeLessThanOrEqual(1);
    if (c.interlaced) expect(await combing(t.vop.media.path('covers', id, 'cover.jpg'), cover.width, cover.height)).toBeLessThan(1);
    // A picture, not a black or blank frame (covers come from keyframes near the sampled moments;
    // a picture of a few pixels has no contrast to judge).
    if (cover.width >= 32 && cover.height >= 32) expect(isBlankFrame(await imageLuma(t.vop.media.path('covers', id, 'cover.jpg'))), 'a blank cover').toBe(false);
  }, 180_000);
});

interface Probed {
  streams: Array<Record<string, any> & { codec_type: string }>;
  format: Record<string, any>;
}

async function ffprobe(file: string): Promise<Probed> {
  const { stdout } = await promisify(execFile)(FFPROBE, ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', file]);
  return JSON.parse(stdout) as Probed;
}

/** What every browser plays, the right way up, in its proportions, for as long as the source. */
function expectPlayable(p: Probed, c: SourceCase, size: [number, number], sourceSeconds: number, tolerance: number, hls = false, profile = 'High'): void {
  const video = p.streams.filter((s) => s.codec_type === 'video');
  const audio = p.streams.filter((s) => s.codec_type === 'audio');
  expect(video).toHaveLength(1);
  expect(p.streams.filter((s) => s.codec_type !== 'video' && s.codec_type !== 'audio')).toEqual([]); // no subtitles, no data
  const v = video[0]!;
  expect({ codec: v.codec_name, profile: v.profile, pix_fmt: v.pix_fmt }).toEqual({ codec: 'h264', profile, pix_fmt: 'yuv420p' });
  expect([v.width, v.height]).toEqual(size);
  expect(v.width % 2 === 0 && v.height % 2 === 0).toBe(true);
  // Square pixels at the source's display aspect (within a pixel or two of rounding to even sizes).
  if (!hls) expect(v.sample_aspect_ratio ?? '1:1').toBe('1:1');
  expect(Math.abs((v.width * c.display[1]) / c.display[0] - v.height)).toBeLessThanOrEqual(2);
  // Upright: the rotation is in the pixels; no display matrix or rotate tag turns them again.
  const matrix = (v.side_data_list ?? []).find((d: { side_data_type?: string }) => d.side_data_type === 'Display Matrix');
  expect(Number(matrix?.rotation ?? 0)).toBe(0);
  expect(Number(v.tags?.rotate ?? 0)).toBe(0);
  if (c.fps) expect(rate(v.avg_frame_rate)).toBeCloseTo(c.fps, 0);
  if (!hls) {
    // At most 60 frames a second, none made up: a nominal 1000 fps must not become 1000 real ones.
    expect(rate(v.avg_frame_rate)).toBeLessThanOrEqual(60.01);
    expect(Number(v.nb_frames)).toBeLessThanOrEqual(Math.ceil(sourceSeconds * 60) + 2);
  }
  if (c.audio) {
    expect(audio.map((a) => [a.codec_name, a.profile])).toEqual([['aac', 'LC']]);
    expect(audio[0]!.channels).toBeLessThanOrEqual(2);
    if (c.sampleRate) expect(Number(audio[0]!.sample_rate)).toBe(c.sampleRate);
  } else {
    expect(audio).toEqual([]);
  }
  expect(Math.abs(Number(p.format.duration) - sourceSeconds)).toBeLessThan(tolerance);
}

/** "30000/1001" as a number. */
function rate(text: string): number {
  const [num, den] = text.split('/').map(Number);
  return num! / (den ?? 1);
}

/** Average PSNR (dB) of `file`'s picture against the lavfi source `reference` scaled to `size`. */
async function psnr(file: string, reference: string, size: [number, number]): Promise<number> {
  const graph = `[0:v]format=yuv420p[a];[1:v]scale=${size[0]}:${size[1]},format=yuv420p[b];[a][b]psnr`;
  const { stderrTail } = await run(['-i', file, '-f', 'lavfi', '-i', reference, '-lavfi', graph, '-f', 'null', '-'], { ffmpegPath: FFMPEG });
  const m = /PSNR .*average:(\d+(?:\.\d+)?|inf)/.exec(stderrTail);
  if (!m) throw new Error(`psnr printed no summary: ${stderrTail}`);
  return m[1] === 'inf' ? Infinity : Number(m[1]);
}

/**
 * How combed a still picture is: the mean difference between neighbouring lines over that between
 * lines two apart. Two fields of different moments woven together give about 1.4; one picture, 0.6.
 */
async function combing(image: string, width: number, height: number): Promise<number> {
  const { stdout: gray } = await promisify(execFile)(FFMPEG, ['-v', 'error', '-i', image, '-f', 'rawvideo', '-pix_fmt', 'gray', 'pipe:1'], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 });
  let next = 0;
  let field = 0;
  for (let y = 0; y + 2 < height; y++) {
    for (let x = 0; x < width; x += 2) {
      const at = y * width + x;
      next += Math.abs(gray[at]! - gray[at + width]!);
      field += Math.abs(gray[at]! - gray[at + 2 * width]!);
    }
  }
  return next / Math.max(1, field);
}

/** Frames ffmpeg's idet judges interlaced, over the whole file. */
async function interlacedFrames(file: string): Promise<{ tff: number; bff: number }> {
  const { stderrTail } = await run(['-i', file, '-map', '0:v:0', '-vf', 'idet', '-f', 'null', '-'], { ffmpegPath: FFMPEG });
  const m = /Multi frame detection: TFF:\s*(\d+)\s+BFF:\s*(\d+)/.exec(stderrTail);
  if (!m) throw new Error(`idet printed no summary: ${stderrTail}`);
  return { tff: Number(m[1]), bff: Number(m[2]) };
}
