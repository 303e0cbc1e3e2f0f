/**
 * A video's text tracks (beyond the spec; issue 33, items 4 and 5): captions, one language each,
 * from the source's text subtitle streams or added by its application, and its chapters. Each is
 * a WebVTT file, `text/<videoId>/<id>.vtt`, for players of the MP4s (`<track>`), and each caption
 * track is also an HLS subtitle rendition, `hls/<videoId>/subs-<id>/`: segmented WebVTT cut where
 * the video's variants are cut. The master playlist lists them as delivery serves it
 * (services/mediaDelivery.ts), from the rows, so adding or removing one changes no stored playlist
 * and races no job that writes one.
 */
import crypto from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { run } from '../media/ffmpegRunner.js';
import { buildVariantPlaylist, cutsOfDurations, parseMasterPlaylist, parseVariantDurations, playlistSafe } from '../media/hls.js';
import { canonicalLanguage, languageName } from '../media/languages.js';
import type { VideoInfo } from '../media/probe.js';
import { buildSubtitleExtractArgs, textSubtitleTracks } from '../media/subtitleTracks.js';
import { buildChaptersVtt, buildVtt, parseCaptionFile, segmentVtt, type Cue } from '../media/webvtt.js';
import { mediaKey, readSmallObject, type MediaStore } from '../storage/media/mediaStore.js';
import type { TextTrackRecord, VideoStore } from '../storage/types.js';
import { HLS_MASTER, subtitleRenditionLabel, textTrackFile } from './mediaNames.js';
import { runOptions, type FfmpegRunContext } from './renditionOutputs.js';

/** The most caption tracks a video has, from its source and its application together. */
export const MAX_CAPTION_TRACKS = 20;

/** The largest WebVTT file a track may be, from a source or an application: hours of dense captions are a fraction of it. */
export const MAX_TEXT_TRACK_BYTES = 2 * 1024 * 1024;

/**
 * Where the picture of media time 0 is on the MPEG-TS clock of every HLS segment: ffmpeg's
 * MPEG-TS muxer starts timestamps 1.4 s in (its default `muxdelay`, twice over), and the
 * segments keep the MP4's timeline (media/hls.ts). A subtitle segment's X-TIMESTAMP-MAP maps its
 * cue times there.
 */
export const MPEGTS_START_SECONDS = 1.4;

/** A new track's id: eight hex digits, random, which name its files. */
export function newTextTrackId(): string {
  return crypto.randomBytes(4).toString('hex');
}

/** One text track written into the scratch folder, not yet stored. */
export interface WrittenTextTrack {
  record: TextTrackRecord;
  /** Its WebVTT file in the scratch folder. */
  path: string;
  /** A caption track's cues, for its HLS rendition; absent for chapters. */
  cues?: Cue[];
}

/**
 * The source's text subtitle streams and its chapters, as WebVTT files in `outDir`. A stream
 * that ffmpeg cannot convert or that does not read as captions (no cue, cues out of order, over
 * the size limit) is left out and logged: subtitles never fail a video.
 */
export async function writeSourceTextTracks(
  job: { videoId: string; source: string; info: VideoInfo; outDir: string; ffmpeg: FfmpegRunContext },
  log: (line: string) => void,
): Promise<WrittenTextTrack[]> {
  const { videoId, info, outDir } = job;
  await fsp.mkdir(outDir, { recursive: true });
  const now = Date.now();
  const made: WrittenTextTrack[] = [];
  const streams = textSubtitleTracks(info, MAX_CAPTION_TRACKS);
  if (streams.length > 0) {
    const raw = streams.map((s) => ({ index: s.index, path: path.join(outDir, `stream-${s.index}.vtt`) }));
    const extracted = await run(buildSubtitleExtractArgs(job.source, info, raw), runOptions(job.ffmpeg)).then(
      () => true,
      (err: unknown) => {
        if (job.ffmpeg.signal.aborted) throw err;
        log(`Transcode of ${videoId}: the source's subtitles could not be read (${(err as Error).message.split('\n')[0]}); the video has none from its source.`);
        return false;
      },
    );
    for (const [i, s] of (extracted ? streams : []).entries()) {
      const parsed = parseCaptionFile(await fsp.readFile(raw[i]!.path), { maxBytes: MAX_TEXT_TRACK_BYTES });
      if (!parsed.ok) {
        log(`Transcode of ${videoId}: subtitle stream ${s.index} (${s.codec}) is left out: ${parsed.detail}`);
        continue;
      }
      const language = s.language ? (canonicalLanguage(s.language) ?? '') : '';
      const label = (s.title ? playlistSafe(s.title) : '') || (language ? languageName(language) : `Subtitles ${made.length + 1}`);
      made.push(await written({ videoId, kind: 'captions', language, label, forced: s.forced, createdAt: now + made.length }, buildVtt(parsed.cues, { keepMarkup: true }), outDir, parsed.cues));
    }
  }
  const chapters = buildChaptersVtt(info.chapters ?? [], info.durationSeconds);
  if (chapters !== null) made.push(await written({ videoId, kind: 'chapters', language: '', label: 'Chapters', forced: false, createdAt: now + made.length }, chapters, outDir));
  return made;
}

async function written(
  t: Pick<TextTrackRecord, 'videoId' | 'kind' | 'language' | 'label' | 'forced' | 'createdAt'>,
  vtt: string,
  outDir: string,
  cues?: Cue[],
): Promise<WrittenTextTrack> {
  const id = newTextTrackId();
  const file = path.join(outDir, `${id}.vtt`);
  await fsp.writeFile(file, vtt);
  return { record: { ...t, id, origin: 'source', bytes: Buffer.byteLength(vtt) }, path: file, ...(cues ? { cues } : {}) };
}

/** Stores a track's WebVTT text as `text/<videoId>/<id>.vtt`. */
export async function storeTextTrack(objects: MediaStore, track: Pick<TextTrackRecord, 'videoId' | 'id'>, vtt: string | { file: string }): Promise<void> {
  const source = typeof vtt === 'string' ? { stream: Readable.from([Buffer.from(vtt)]) } : { file: vtt.file, move: true };
  await objects.put(mediaKey('text', track.videoId, textTrackFile(track.id)), source, { contentType: 'text/vtt' });
}

/** A stored track's cues; undefined when its file is gone or no longer reads as captions. */
export async function readStoredCues(objects: MediaStore, track: Pick<TextTrackRecord, 'videoId' | 'id'>): Promise<Cue[] | undefined> {
  const bytes = await readSmallObject(objects, mediaKey('text', track.videoId, textTrackFile(track.id)));
  const parsed = bytes === undefined ? undefined : parseCaptionFile(bytes, { maxBytes: MAX_TEXT_TRACK_BYTES });
  return parsed?.ok ? parsed.cues : undefined;
}

/** How the video's HLS variants are cut: where each segment after the first starts, and their length. */
export interface HlsTimeline {
  cuts: number[];
  seconds: number;
}

/**
 * The timeline of the video's stored master playlist (its first variant's cuts, which every
 * variant listed shares); undefined when the video has no HLS.
 */
export async function storedHlsTimeline(objects: MediaStore, videoId: string): Promise<HlsTimeline | undefined> {
  const master = (await readSmallObject(objects, mediaKey('hls', videoId, HLS_MASTER)))?.toString('utf8');
  const first = master === undefined ? undefined : parseMasterPlaylist(master)[0];
  const parts = first?.uri.split('/') ?? [];
  if (parts.length !== 2) return undefined;
  const playlist = (await readSmallObject(objects, mediaKey('hls', videoId, parts[0]!, parts[1]!)).catch(() => undefined))?.toString('utf8');
  const durations = playlist === undefined ? [] : parseVariantDurations(playlist);
  if (durations.length === 0) return undefined;
  return { cuts: cutsOfDurations(durations), seconds: durations.reduce((a, b) => a + b, 0) };
}

/**
 * Stores the HLS subtitle rendition of caption track `id` (`hls/<videoId>/subs-<id>/`): one
 * WebVTT segment a segment of the variants, each with the X-TIMESTAMP-MAP that places its cues on
 * the variants' clock, then its playlist.
 */
export async function storeSubtitleRendition(objects: MediaStore, videoId: string, id: string, cues: readonly Cue[], timeline: HlsTimeline): Promise<void> {
  const label = subtitleRenditionLabel(id);
  const segments = segmentVtt(cues, timeline.cuts, timeline.seconds, { timestampOffsetSeconds: MPEGTS_START_SECONDS, keepMarkup: true });
  const listed: Array<{ file: string; start: number; end: number }> = [];
  let at = 0;
  for (const [i, s] of segments.entries()) {
    const file = `seg_${String(i).padStart(5, '0')}.vtt`;
    await objects.put(mediaKey('hls', videoId, label, file), { stream: Readable.from([Buffer.from(s.text)]) }, { contentType: 'text/vtt' });
    listed.push({ file, start: at, end: (at += s.seconds) });
  }
  const playlist = buildVariantPlaylist(listed);
  await objects.put(mediaKey('hls', videoId, label, 'index.m3u8'), { stream: Readable.from([Buffer.from(playlist)]) }, { contentType: 'application/vnd.apple.mpegurl' });
}

/** Removes a track's files: its WebVTT file, its HLS rendition, a storyboard's sprites. */
export async function removeTextTrackFiles(objects: MediaStore, track: Pick<TextTrackRecord, 'videoId' | 'id'>): Promise<void> {
  await objects.deletePrefix(mediaKey('hls', track.videoId, subtitleRenditionLabel(track.id)));
  // A storyboard's sprites (processing/storyboardJob.ts).
  await objects.deletePrefix(mediaKey('text', track.videoId, track.id));
  await objects.delete(mediaKey('text', track.videoId, textTrackFile(track.id)));
}

/**
 * After a transcode stored the video's new HLS folder and text files: the video's text tracks
 * from its source become `found`, and the files of the ones found before go; then, with HLS,
 * every caption track (its application's too) gets its HLS rendition anew, cut as the new
 * variants are (the folder it was in was replaced). A track whose file no longer reads is
 * logged and left without one.
 */
export async function replaceSourceTextTracks(
  deps: { videos: Pick<VideoStore, 'textTracks' | 'setSourceTextTracks'>; objects: MediaStore },
  videoId: string,
  found: readonly WrittenTextTrack[],
  hls: boolean,
  log: (line: string) => void,
): Promise<void> {
  const { videos, objects } = deps;
  const before = (await videos.textTracks(videoId)).filter((t) => t.origin === 'source');
  if (before.length > 0 || found.length > 0) await videos.setSourceTextTracks(videoId, found.map((t) => t.record));
  for (const t of before) await removeTextTrackFiles(objects, t);
  if (!hls) return;
  const captions = (await videos.textTracks(videoId)).filter((t) => t.kind === 'captions');
  // Most videos have none: then nothing more is read.
  const timeline = captions.length > 0 ? await storedHlsTimeline(objects, videoId) : undefined;
  if (!timeline) return;
  const cuesOf = new Map(found.map((t) => [t.record.id, t.cues]));
  for (const t of captions) {
    const cues = cuesOf.get(t.id) ?? (await readStoredCues(objects, t));
    if (cues) await storeSubtitleRendition(objects, videoId, t.id, cues, timeline);
    else log(`Transcode of ${videoId}: caption track ${t.id} (${t.label}) has no readable file; it has no HLS rendition.`);
  }
}
