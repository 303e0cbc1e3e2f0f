/**
 * HLS over the written renditions (beyond the spec): each MP4 repackaged without re-encoding
 * into `<label>/` of a scratch folder, and a master playlist listing them. The transcode job
 * stores the folder as `hls/<videoId>/`, the master playlist last (publishOutputs.ts), so a
 * player never finds a master playlist whose variants are not all there.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { run } from '../media/ffmpegRunner.js';
import { buildHlsArgs, buildMasterPlaylist, hlsCodecs, resolveHlsOptions } from '../media/hls.js';
import { HLS_MASTER } from './mediaNames.js';
import type { FfmpegRunContext, WrittenRendition } from './renditionOutputs.js';

/** Writes the HLS folder for `renditions` into `outDir` (an empty folder). */
export async function packageHls(
  renditions: readonly WrittenRendition[],
  outDir: string,
  ffmpeg: FfmpegRunContext,
  segmentSeconds: number,
): Promise<void> {
  const hls = resolveHlsOptions({ segmentSeconds });
  const variants = renditions.map((r) => ({ input: r.path, dir: path.join(outDir, r.label) }));
  for (const v of variants) await fsp.mkdir(v.dir);
  await run(buildHlsArgs(variants, hls), { ffmpegPath: ffmpeg.ffmpegPath, signal: ffmpeg.signal, pidFile: ffmpeg.pidFile, memoryLimitBytes: ffmpeg.memoryLimitBytes });
  const master = buildMasterPlaylist(
    renditions.map((r) => ({
      uri: `${r.label}/${hls.playlistName}`,
      // BANDWIDTH is a peak (RFC 8216 4.3.4.2): the rung's ceiling, or the measured rate if above it.
      bandwidthBps: Math.max(r.peakKbps, r.bitrateKbps) * 1000,
      averageBandwidthBps: r.bitrateKbps * 1000,
      width: r.width,
      height: r.height,
      codecs: hlsCodecs(r.info),
      frameRate: r.info.frameRate ?? undefined,
    })),
  );
  await fsp.writeFile(path.join(outDir, HLS_MASTER), master);
}
