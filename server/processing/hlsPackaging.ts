/**
 * HLS over the written renditions (beyond the spec): each MP4 repackaged without re-encoding
 * into `<label>/` of a scratch folder, and a master playlist listing them. The transcode job
 * stores the folder as `hls/<videoId>/`, the master playlist last (storeOutputs.ts), so a
 * player never finds a master playlist whose variants are not all there; the ladder job adds its
 * variants to the folder the same way.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { run } from '../media/ffmpegRunner.js';
import { buildHlsArgs, buildMasterPlaylist, hlsCodecs, resolveHlsOptions, type MasterVariant } from '../media/hls.js';
import { HLS_MASTER } from './mediaNames.js';
import type { FfmpegRunContext, WrittenRendition } from './renditionOutputs.js';

/**
 * Writes the HLS folder for `renditions` into `outDir` (an empty folder), with a master playlist
 * that lists them and, with `alongside`, the variants already stored (the ladder's rungs join
 * those of the first rendition).
 */
export async function packageHls(
  renditions: readonly WrittenRendition[],
  outDir: string,
  ffmpeg: FfmpegRunContext,
  segmentSeconds: number,
  o: { alongside?: readonly MasterVariant[] } = {},
): Promise<void> {
  const hls = resolveHlsOptions({ segmentSeconds });
  const variants = renditions.map((r) => ({ input: r.path, dir: path.join(outDir, r.label) }));
  for (const v of variants) await fsp.mkdir(v.dir);
  await run(buildHlsArgs(variants, hls), { ffmpegPath: ffmpeg.ffmpegPath, signal: ffmpeg.signal, pidFile: ffmpeg.pidFile, memoryLimitBytes: ffmpeg.memoryLimitBytes, niceness: ffmpeg.niceness });
  await writeMaster(outDir, [...(o.alongside ?? []), ...masterVariantsOf(renditions, hls.playlistName)]);
}

/** The master playlist of `variants`, highest bandwidth first, written as `outDir/master.m3u8`. */
async function writeMaster(outDir: string, variants: MasterVariant[]): Promise<void> {
  const sorted = [...variants].sort((a, b) => b.bandwidthBps - a.bandwidthBps);
  await fsp.writeFile(path.join(outDir, HLS_MASTER), buildMasterPlaylist(sorted));
}

function masterVariantsOf(renditions: readonly WrittenRendition[], playlistName: string): MasterVariant[] {
  return renditions.map((r) => ({
    uri: `${r.label}/${playlistName}`,
    // BANDWIDTH is a peak (RFC 8216 4.3.4.2): the rung's ceiling, or the measured rate if above it.
    bandwidthBps: Math.max(r.peakKbps, r.bitrateKbps) * 1000,
    averageBandwidthBps: r.bitrateKbps * 1000,
    width: r.width,
    height: r.height,
    codecs: hlsCodecs(r.info),
    frameRate: r.info.frameRate ?? undefined,
  }));
}
