/**
 * HLS over the written renditions (beyond the spec): each MP4 repackaged without re-encoding
 * into `<label>/` of a scratch folder, its playlist written from the segments ffmpeg cut, and a
 * master playlist listing them. The transcode job stores the folder as `hls/<videoId>/`, the
 * master playlist last (storeOutputs.ts), so a player never finds a master playlist whose
 * variants are not all there; the ladder job adds its variants to the folder the same way.
 *
 * Every variant a master playlist lists is cut at the same times (media/hls.ts says why): the
 * first rendition sets them at its keyframes, and the others are cut there, checked.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { run } from '../media/ffmpegRunner.js';
import {
  alignedWith,
  AUDIO_GROUP,
  buildHlsArgs,
  buildMasterPlaylist,
  buildVariantPlaylist,
  cutsOf,
  hlsCodecs,
  orderForPlayers,
  parseSegmentList,
  resolveHlsOptions,
  segmentBitRates,
  segmentDurations,
  SEGMENT_LIST_NAME,
  type HlsOptions,
  type HlsSegment,
  type HlsVariantJob,
  type MasterMedia,
  type MasterVariant,
} from '../media/hls.js';
import type { AudioRendition } from './audioRenditions.js';
import { HLS_MASTER } from './mediaNames.js';
import { runOptions, type FfmpegRunContext, type WrittenRendition } from './renditionOutputs.js';

/** Options of {@link packageHls}. */
export interface PackageHlsOptions {
  /**
   * The source's audio tracks, when it has several (audioRenditions.ts): each cut at the same
   * times into an audio rendition of the master's group, and the variants cut without audio.
   */
  audio?: readonly AudioRendition[];
  /**
   * The renditions the stored master lists (the ladder's case): kept in the new master. With an
   * audio group among them, the new variants are cut without audio and play with that group,
   * `audioRates` (read from its playlists) added to their bit rates.
   */
  media?: readonly MasterMedia[];
  audioRates?: { peakBps: number; averageBps: number };
  /** Variants already stored, listed in the master with the new ones when they share `cuts`. */
  alongside?: readonly MasterVariant[];
  /** The cuts of the variants `alongside` (from their playlists): the new variants are cut there. */
  cuts?: readonly number[];
  /** Told when variants cannot share the cuts asked, and what happens instead. */
  log?: (line: string) => void;
  /**
   * The first rendition's segments, cut already ({@link cutFirstRendition}, begun as soon as its
   * file was written); only without `cuts`.
   */
  firstCut?: Promise<HlsSegment[]>;
}

/**
 * Cuts a first rendition's MP4 into `<label>/` of `outDir` at its own keyframes, as
 * {@link packageHls} does for the first of its renditions; hand the result to it as `firstCut`.
 * A copied source's cut then runs while the rest of the first rendition is made (its other audio
 * tracks, its subtitles). `grouped`: the master will have an audio group (the segments carry the
 * video alone).
 */
export async function cutFirstRendition(file: string, label: string, outDir: string, ffmpeg: FfmpegRunContext, segmentSeconds: number, grouped: boolean): Promise<HlsSegment[]> {
  const dir = path.join(outDir, label);
  await fsp.mkdir(dir, { recursive: true });
  return (await cut([{ input: file, dir, streams: grouped ? 'video' : 'video+audio' }], resolveHlsOptions({ segmentSeconds }), ffmpeg))[0]!;
}

/**
 * Writes the HLS folder for `renditions` into `outDir` (an empty folder): each variant's
 * segments and playlist, and a master playlist that lists them (and, where they share the cuts,
 * the variants `alongside`).
 *
 * Without `cuts`, the first rendition is cut at its own keyframes and the others at the same
 * times. With `cuts`, every rendition is cut there; should one not come out so (its encode has no
 * keyframe at a cut), the renditions are cut anew as if no cuts were given, and the master lists
 * them without the variants `alongside`, which no longer line up with them.
 */
export async function packageHls(
  renditions: readonly WrittenRendition[],
  outDir: string,
  ffmpeg: FfmpegRunContext,
  segmentSeconds: number,
  o: PackageHlsOptions = {},
): Promise<void> {
  const hls = resolveHlsOptions({ segmentSeconds });
  const dirOf = (r: { label: string }) => path.join(outDir, r.label);
  // The first's may be there already (firstCut).
  for (const r of [...renditions, ...(o.audio ?? [])]) await fsp.mkdir(dirOf(r), { recursive: true });
  // With an audio group, a variant's segments are its picture alone; the group brings the sound.
  const kept = o.media ?? [];
  const grouped = (o.audio?.length ?? 0) > 0 || kept.some((m) => m.type === 'AUDIO');
  const streams = grouped ? 'video' : 'video+audio';

  let cuts = o.cuts ? [...o.cuts] : undefined;
  const segments = new Map<WrittenRendition, HlsSegment[]>();
  let toCut = renditions;
  if (!cuts) {
    // The first rendition sets the cuts: the copy of a source, or the rung encoded first.
    const first = renditions[0]!;
    segments.set(first, o.firstCut ? await o.firstCut : (await cut([{ input: first.path, dir: dirOf(first), streams }], hls, ffmpeg))[0]!);
    cuts = cutsOf(segments.get(first)!);
    toCut = renditions.slice(1);
  }
  // The other variants and the audio tracks in one run, at the same times. An audio track's
  // frames are each a cut point: it needs no check.
  const jobs = [
    ...toCut.map((r) => ({ input: r.path, dir: dirOf(r), streams, cuts: cuts!, toleranceSeconds: toleranceOf(r) }) satisfies HlsVariantJob),
    ...(o.audio ?? []).map((a) => ({ input: a.path, dir: dirOf(a), streams: 'audio', cuts: cuts! }) satisfies HlsVariantJob),
  ];
  const made = jobs.length > 0 ? await cut(jobs, hls, ffmpeg) : [];
  toCut.forEach((r, i) => segments.set(r, made[i]!));
  const audioSegments = made.slice(toCut.length);

  const astray = renditions.filter((r) => segments.has(r) && !(r === renditions[0] && !o.cuts) && !alignedWith(segments.get(r)!, cuts, toleranceOf(r)));
  if (o.cuts && astray.length > 0) {
    o.log?.(`HLS: ${astray.map((r) => r.label).join(', ')} could not be cut where the variants already listed are; the master lists the new variants alone.`);
    for (const r of renditions) await fsp.rm(dirOf(r), { recursive: true, force: true });
    // The audio group stays: its segments need not line up with the picture's.
    const { alongside: _alongside, cuts: _cuts, ...rest } = o;
    await packageHls(renditions, outDir, ffmpeg, segmentSeconds, rest);
    return;
  }
  // Cut by the first rendition's times and not matching them: left out of the master rather
  // than offered to a player that would fall off its end when it switches.
  for (const r of astray) {
    o.log?.(`HLS: ${r.label} could not be cut where ${renditions[0]!.label} is; it is left out of the master playlist.`);
    await fsp.rm(dirOf(r), { recursive: true, force: true });
    segments.delete(r);
  }

  // The audio tracks: playlists that carry each segment's rate, which the ladder reads back.
  const media: MasterMedia[] = [...kept];
  let audioRates = o.audioRates ?? { peakBps: 0, averageBps: 0 };
  for (const [i, a] of (o.audio ?? []).entries()) {
    const segs = audioSegments[i]!;
    const sized = await sizedSegments(segs, dirOf(a));
    await fsp.writeFile(path.join(dirOf(a), hls.playlistName), buildVariantPlaylist(segs, sized.map((x) => x.bytes)));
    const rates = segmentBitRates(sized);
    audioRates = { peakBps: Math.max(audioRates.peakBps, rates.peakBps), averageBps: Math.max(audioRates.averageBps, rates.averageBps) };
    media.push({ type: 'AUDIO', groupId: AUDIO_GROUP, name: a.name, ...(a.language ? { language: a.language } : {}), default: a.default, autoselect: true, uri: `${a.label}/${hls.playlistName}`, channels: String(a.channels) });
  }

  const listed: MasterVariant[] = [];
  for (const r of renditions) {
    const segs = segments.get(r);
    if (!segs) continue;
    await fsp.writeFile(path.join(dirOf(r), hls.playlistName), buildVariantPlaylist(segs));
    listed.push(await masterVariantOf(r, segs, dirOf(r), hls.playlistName, grouped ? audioRates : undefined));
  }
  // Reaching here with `cuts` given, every new variant was cut at them: the old ones stay listed.
  await fsp.writeFile(path.join(outDir, HLS_MASTER), buildMasterPlaylist(orderForPlayers([...(o.cuts ? (o.alongside ?? []) : []), ...listed]), media));
}

/** One ffmpeg run cutting every job's MP4 (at its `cuts`, or at its own keyframes); resolves with each one's segments. */
async function cut(jobs: readonly HlsVariantJob[], hls: HlsOptions, ffmpeg: FfmpegRunContext): Promise<HlsSegment[][]> {
  await run(buildHlsArgs(jobs, hls), runOptions(ffmpeg));
  return Promise.all(
    jobs.map(async (j) => {
      const list = path.join(j.dir, SEGMENT_LIST_NAME);
      const segments = parseSegmentList(await fsp.readFile(list, 'utf8'));
      await fsp.rm(list);
      return segments;
    }),
  );
}

/** Each segment's length and size. */
async function sizedSegments(segments: readonly HlsSegment[], dir: string): Promise<Array<{ seconds: number; bytes: number }>> {
  const durations = segmentDurations(segments);
  return Promise.all(segments.map(async (s, i) => ({ seconds: durations[i]!, bytes: (await fsp.stat(path.join(dir, s.file))).size })));
}

/** Half a frame of the rendition: an encode forces its keyframe on the frame nearest a cut time. */
function toleranceOf(r: WrittenRendition): number {
  return Math.min(0.5, Math.max(0.002, 0.5 / (r.info.frameRate ?? 25)));
}

/**
 * The master playlist's line of a variant: its bit rates measured on its segments, plus the
 * audio group's when it plays with one (`audio`); its codecs from its probe.
 */
async function masterVariantOf(r: WrittenRendition, segments: readonly HlsSegment[], dir: string, playlistName: string, audio?: { peakBps: number; averageBps: number }): Promise<MasterVariant> {
  const rates = segmentBitRates(await sizedSegments(segments, dir));
  return {
    uri: `${r.label}/${playlistName}`,
    bandwidthBps: rates.peakBps + (audio?.peakBps ?? 0),
    averageBandwidthBps: rates.averageBps + (audio?.averageBps ?? 0),
    width: r.width,
    height: r.height,
    // The group's tracks are AAC whatever the rendition's own audio.
    codecs: hlsCodecs(audio ? { ...r.info, audioCodec: 'aac' } : r.info),
    frameRate: r.info.frameRate ?? undefined,
    ...(audio ? { audioGroup: AUDIO_GROUP } : {}),
  };
}
