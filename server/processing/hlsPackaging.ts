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
  type MasterVariant,
} from '../media/hls.js';
import { HLS_MASTER } from './mediaNames.js';
import { runOptions, type FfmpegRunContext, type WrittenRendition } from './renditionOutputs.js';

/** Options of {@link packageHls}. */
export interface PackageHlsOptions {
  /** Variants already stored, listed in the master with the new ones when they share `cuts`. */
  alongside?: readonly MasterVariant[];
  /** The cuts of the variants `alongside` (from their playlists): the new variants are cut there. */
  cuts?: readonly number[];
  /** Told when variants cannot share the cuts asked, and what happens instead. */
  log?: (line: string) => void;
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
  const dirOf = (r: WrittenRendition) => path.join(outDir, r.label);
  for (const r of renditions) await fsp.mkdir(dirOf(r));

  let cuts = o.cuts ? [...o.cuts] : undefined;
  const segments = new Map<WrittenRendition, HlsSegment[]>();
  let toCut = renditions;
  if (!cuts) {
    // The first rendition sets the cuts: the copy of a source, or the rung encoded first.
    const first = renditions[0]!;
    segments.set(first, (await cut([first], undefined, hls, ffmpeg, dirOf))[0]!);
    cuts = cutsOf(segments.get(first)!);
    toCut = renditions.slice(1);
  }
  if (toCut.length > 0) {
    const made = await cut(toCut, cuts, hls, ffmpeg, dirOf);
    toCut.forEach((r, i) => segments.set(r, made[i]!));
  }

  const astray = renditions.filter((r) => segments.has(r) && !(r === renditions[0] && !o.cuts) && !alignedWith(segments.get(r)!, cuts, toleranceOf(r)));
  if (o.cuts && astray.length > 0) {
    o.log?.(`HLS: ${astray.map((r) => r.label).join(', ')} could not be cut where the variants already listed are; the master lists the new variants alone.`);
    for (const r of renditions) await fsp.rm(dirOf(r), { recursive: true, force: true });
    await packageHls(renditions, outDir, ffmpeg, segmentSeconds, { ...(o.log ? { log: o.log } : {}) });
    return;
  }
  // Cut by the first rendition's times and not matching them: left out of the master rather
  // than offered to a player that would fall off its end when it switches.
  for (const r of astray) {
    o.log?.(`HLS: ${r.label} could not be cut where ${renditions[0]!.label} is; it is left out of the master playlist.`);
    await fsp.rm(dirOf(r), { recursive: true, force: true });
    segments.delete(r);
  }

  const listed: MasterVariant[] = [];
  for (const r of renditions) {
    const segs = segments.get(r);
    if (!segs) continue;
    await fsp.writeFile(path.join(dirOf(r), hls.playlistName), buildVariantPlaylist(segs));
    listed.push(await masterVariantOf(r, segs, dirOf(r), hls.playlistName));
  }
  // Reaching here with `cuts` given, every new variant was cut at them: the old ones stay listed.
  await fsp.writeFile(path.join(outDir, HLS_MASTER), buildMasterPlaylist(orderForPlayers([...(o.cuts ? (o.alongside ?? []) : []), ...listed])));
}

/** One ffmpeg run cutting `renditions` (at `cuts`, or the one rendition at its own keyframes); resolves with each one's segments. */
async function cut(
  renditions: readonly WrittenRendition[],
  cuts: readonly number[] | undefined,
  hls: HlsOptions,
  ffmpeg: FfmpegRunContext,
  dirOf: (r: WrittenRendition) => string,
): Promise<HlsSegment[][]> {
  const jobs = renditions.map((r) => ({ input: r.path, dir: dirOf(r), ...(cuts ? { cuts, toleranceSeconds: toleranceOf(r) } : {}) }));
  await run(buildHlsArgs(jobs, hls), runOptions(ffmpeg));
  return Promise.all(
    renditions.map(async (r) => {
      const list = path.join(dirOf(r), SEGMENT_LIST_NAME);
      const segments = parseSegmentList(await fsp.readFile(list, 'utf8'));
      await fsp.rm(list);
      return segments;
    }),
  );
}

/** Half a frame of the rendition: an encode forces its keyframe on the frame nearest a cut time. */
function toleranceOf(r: WrittenRendition): number {
  return Math.min(0.5, Math.max(0.002, 0.5 / (r.info.frameRate ?? 25)));
}

/** The master playlist's line of a variant: its bit rates measured on its segments, its codecs from its probe. */
async function masterVariantOf(r: WrittenRendition, segments: readonly HlsSegment[], dir: string, playlistName: string): Promise<MasterVariant> {
  const durations = segmentDurations(segments);
  const sized = await Promise.all(segments.map(async (s, i) => ({ seconds: durations[i]!, bytes: (await fsp.stat(path.join(dir, s.file))).size })));
  const rates = segmentBitRates(sized);
  return {
    uri: `${r.label}/${playlistName}`,
    bandwidthBps: rates.peakBps,
    averageBandwidthBps: rates.averageBps,
    width: r.width,
    height: r.height,
    codecs: hlsCodecs(r.info),
    frameRate: r.info.frameRate ?? undefined,
  };
}
