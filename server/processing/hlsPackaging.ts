/**
 * HLS over the written renditions (beyond the spec): each MP4 repackaged without re-encoding
 * into `hls/<videoId>/<label>/`, and a master playlist listing them. The whole directory is
 * built under a temporary name and renamed into place, so a player never sees a master playlist
 * whose variants are still being written.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { atomicOutput } from '../media/atomicFile.js';
import { run } from '../media/ffmpegRunner.js';
import { buildHlsArgs, buildMasterPlaylist, hlsCodecs, resolveHlsOptions } from '../media/hls.js';
import type { LocalMediaStore } from '../storage/mediaStore.js';
import { HLS_MASTER } from './mediaNames.js';
import type { FfmpegRunContext, WrittenRendition } from './renditionOutputs.js';

/** Writes `hls/<videoId>/` for `renditions`; resolves once it is in place. */
export async function packageHls(
  videoId: string,
  renditions: readonly WrittenRendition[],
  media: LocalMediaStore,
  ffmpeg: FfmpegRunContext,
  segmentSeconds: number,
): Promise<void> {
  const hls = resolveHlsOptions({ segmentSeconds });
  const out = atomicOutput(media.path('hls', videoId), { directory: true });
  try {
    const variants = renditions.map((r) => ({ input: r.path, dir: path.join(out.tmpPath, r.label) }));
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
    await fsp.writeFile(path.join(out.tmpPath, HLS_MASTER), master);
    await out.commit();
  } catch (err) {
    await out.abort().catch(() => undefined);
    throw err;
  }
}
