/**
 * The video the delivery bench serves, and the request cases on it (bench/deliveryRequests.ts).
 * Its bytes are made once per run ({@link makeVideoContent}) and written into each vop that serves
 * it — the embedded one (local disk, sql.js) and the cluster one (S3 on Ceph RGW, PostgreSQL) —
 * through vop's own stores ({@link seedVideo}), so that every server is asked for the very same bytes.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { createServer } from '../server/app.js';
import type { ServerOptionsInput } from '../server/config.js';
import { defaultFfmpegBinaries } from '../server/media/ffmpegBinaries.js';
import { COVER_FILE, HLS_MASTER, makeDateFolder, playFileName } from '../server/processing/mediaNames.js';
import { mediaKey, type MediaStore } from '../server/storage/media/mediaStore.js';
import type { RequestCase } from './deliveryRequests.js';
import type { LoadRequest } from './lib.js';

/** The small rendition the Range cases read (the size of issue 14's measurements), and the HLS rendition's shape. */
const SMALL_RENDITION_BYTES = 2_400_000;
const HLS_SEGMENTS = 12;
/** 2 s at about 750 kbit/s: a 360p segment. */
const HLS_SEGMENT_BYTES = 188 * 1000;

/** The bytes of the bench video: random (the content does not matter to delivery) but for a real cover. */
export interface VideoContent {
  /** One MiB, repeated to make the large rendition. */
  chunk: Buffer;
  small: Buffer;
  /** A full-size cover made by ffmpeg (the sizes of `?t=` are made from it). */
  coverFile: string;
  segments: Buffer[];
}

/** Makes the video's bytes, the cover in `dir`. */
export async function makeVideoContent(dir: string): Promise<VideoContent> {
  const coverFile = path.join(dir, COVER_FILE);
  const { ffmpeg } = await defaultFfmpegBinaries();
  await promisify(execFile)(ffmpeg.path, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=1280x720', '-frames:v', '1', '-y', coverFile]);
  return {
    chunk: crypto.randomBytes(1024 * 1024),
    small: crypto.randomBytes(SMALL_RENDITION_BYTES),
    coverFile,
    segments: Array.from({ length: HLS_SEGMENTS }, () => crypto.randomBytes(HLS_SEGMENT_BYTES)),
  };
}

/** What {@link seedVideo} made, as URLs below `/media/`. */
export interface SeededVideo {
  /** `<date>/<file>` of the large rendition, and its file on local disk; none when seeded without one. */
  big?: { url: string; file: string };
  /** `<date>/<file>` of the small rendition. */
  smallUrl: string;
  videoId: string;
  /**
   * Where the video's media are asked for: `/media`, or for a video of a signed application
   * `/media/s/<token>` (a token good for a day, longer than any run).
   */
  mediaPrefix: string;
  /** The same for its cover, whose token opens the cover only. */
  coverPrefix: string;
  /** `<label>/<file>` of the HLS rendition's segments, in order, and its playlist. */
  segments: string[];
  playlist: string;
  /** Bytes of the rendition's playlist: the smallest answer of the HLS walk. */
  playlistBytes: number;
  /**
   * What nginx and bare Node serve under `/same/`: vop's paths and theirs, in the same order for
   * every seeding (so that a second vop's paths pair with the first one's files).
   */
  mirrored: Array<{ from: string; to: string }>;
}

/**
 * A video in status 1, written through the server's own stores while no server runs on them (in
 * cluster mode, the database and bucket `server` names): a rendition of `bigMb` MiB (none if 0)
 * and the small one, the cover (its sizes are made on first request, the mirror's warm-up) and an
 * HLS rendition (playlists and segments).
 */
export async function seedVideo(server: ServerOptionsInput, content: VideoContent, bigMb: number, o: { signed?: boolean } = {}): Promise<SeededVideo> {
  const vop = await createServer({ ...server, log: () => undefined });
  try {
    const app = await vop.services.apps.create({ name: o.signed ? 'bench delivery, signed' : 'bench delivery', ...(o.signed ? { mediaAccess: 'signed', mediaTtlSeconds: 86_400 } : {}) });
    const appRecord = (await vop.stores.apps.get(app.appId))!;
    const video = await vop.services.videos.register(appRecord, { VideoTitle: 'large', SourceFileGetType: '1' });
    const date = makeDateFolder()(Date.now());
    const big = playFileName(video.id, '720p', 'mp4');
    const small = playFileName(video.id, '360p', 'mp4');
    if (bigMb > 0) {
      await put(vop.objects, mediaKey('play', date, big), Readable.from((function* () {
        for (let i = 0; i < bigMb; i++) yield content.chunk;
      })()));
    }
    await put(vop.objects, mediaKey('play', date, small), Readable.from([content.small]));
    await vop.stores.videos.setRenditions(video.id, [
      ...(bigMb > 0 ? [{ videoId: video.id, label: '720p', width: 1280, height: 720, bitrateKbps: 2928, file: `${date}/${big}`, bytes: bigMb * 1024 * 1024 }] : []),
      { videoId: video.id, label: '360p', width: 640, height: 360, bitrateKbps: 800, file: `${date}/${small}`, bytes: content.small.length },
    ]);

    await vop.objects.put(mediaKey('covers', video.id, COVER_FILE), { file: content.coverFile });
    await vop.stores.videos.updateMedia(video.id, { coverFile: mediaKey('covers', video.id, COVER_FILE) });

    const segments = content.segments.map((_, i) => `seg_${String(i).padStart(5, '0')}.ts`);
    const playlist = ['#EXTM3U', '#EXT-X-VERSION:3', '#EXT-X-TARGETDURATION:2', '#EXT-X-PLAYLIST-TYPE:VOD', ...segments.flatMap((seg) => ['#EXTINF:2.000000,', seg]), '#EXT-X-ENDLIST', ''].join('\n');
    await put(vop.objects, mediaKey('hls', video.id, '360p', 'index.m3u8'), Readable.from([Buffer.from(playlist)]));
    await put(vop.objects, mediaKey('hls', video.id, HLS_MASTER), Readable.from([Buffer.from('#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360\n360p/index.m3u8\n')]));
    for (const [i, seg] of segments.entries()) await put(vop.objects, mediaKey('hls', video.id, '360p', seg), Readable.from([content.segments[i]!]));

    await vop.services.lifecycle.move(video.id, 1);
    const view = vop.services.mediaAccess.view(appRecord, { baseUrl: '', formatDate: String });
    const hlsFiles = ['360p/index.m3u8', ...segments.map((seg) => `360p/${seg}`)];
    return {
      ...(bigMb > 0 ? { big: { url: `${date}/${big}`, file: vop.media.path('play', date, big) } } : {}),
      smallUrl: `${date}/${small}`,
      videoId: video.id,
      mediaPrefix: view.mediaPrefix ? view.mediaPrefix(video.id) : '/media',
      coverPrefix: view.coverPrefix ? view.coverPrefix(video.id) : '/media',
      segments: segments.map((seg) => `360p/${seg}`),
      playlist: '360p/index.m3u8',
      playlistBytes: Buffer.byteLength(playlist),
      mirrored: [
        { from: `/media/play/${date}/${small}`, to: `play/${date}/${small}` },
        // The sized cover is made by vop's first request for it (the warm-up of a real player's first view).
        { from: `/media/cover/${video.id}.jpg?t=3`, to: `cover/${video.id}/t3.jpg` },
        ...hlsFiles.map((f) => ({ from: `/media/hls/${video.id}/${f}`, to: `hls/${video.id}/${f}` })),
      ],
    };
  } finally {
    await vop.close();
  }
}

async function put(objects: MediaStore, key: string, stream: Readable): Promise<void> {
  await objects.put(key, { stream });
}

/** Where one server is asked for the video's files: a vop and its seeded video, or the mirror (`/same/`) of `video`. */
export type VideoServer = { name: string; vop: SeededVideo } | { name: string; mirrorOf: SeededVideo };

/** The request cases (issue 14, item 3), each on the same bytes through every server. */
export function requestCases(servers: VideoServer[]): RequestCase[] {
  const range = (from: number, length: number) => ({ Range: `bytes=${from}-${from + length - 1}` });
  /** One case: `file` gives each server's path for it. */
  const one = (name: string, file: (s: VideoServer) => string, bodyBytes: number, extra: Partial<RequestCase> = {}, headers?: Record<string, string>): RequestCase => ({
    name,
    connections: 50,
    asks: Object.fromEntries(servers.map((s) => [s.name, [{ path: file(s), headers, method: extra.head ? 'HEAD' : 'GET' } satisfies LoadRequest]])),
    bodyBytes,
    ...extra,
  });
  const play = (s: VideoServer) => ('vop' in s ? `${s.vop.mediaPrefix}/play/${s.vop.smallUrl}` : `/same/play/${s.mirrorOf.smallUrl}`);
  const hls = (s: VideoServer, file: string) => ('vop' in s ? `${s.vop.mediaPrefix}/hls/${s.vop.videoId}/${file}` : `/same/hls/${s.mirrorOf.videoId}/${file}`);
  const video = (s: VideoServer) => ('vop' in s ? s.vop : s.mirrorOf);
  return [
    one('Range 1 KiB', play, 1024, { targeted: true }, range(1000, 1024)),
    one('Range 64 KiB', play, 64 * 1024, { targeted: true }, range(1_000_000, 64 * 1024)),
    one('HEAD', play, 0, { head: true }),
    one('cover ?t=3', (s) => ('vop' in s ? `${s.vop.coverPrefix}/cover/${s.vop.videoId}.jpg?t=3` : `/same/cover/${s.mirrorOf.videoId}/t3.jpg`), 1000),
    one('HLS playlist', (s) => hls(s, video(s).playlist), 200),
    one('HLS segment', (s) => hls(s, video(s).segments[0]!), HLS_SEGMENT_BYTES),
    {
      name: 'many viewers (HLS walk)',
      connections: 200,
      // Each connection a viewer: the rendition's playlist, then its segments in order, then again.
      asks: Object.fromEntries(servers.map((s) => [s.name, [video(s).playlist, ...video(s).segments].map((f) => ({ path: hls(s, f) }))])),
      // The least of the walk: in a short run on a loaded machine a connection may get no further
      // than its playlist (half a segment on average failed a 3 s run at load average 16); a
      // refusal is a non-2xx, which the run's check counts anyway.
      bodyBytes: Math.min(...servers.map((s) => video(s).playlistBytes)),
    },
  ];
}
