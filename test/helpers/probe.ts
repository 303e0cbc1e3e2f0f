/**
 * The ffmpeg layer's probe with the ffprobe this machine resolves by default: the server passes
 * its chosen binary (media/ffmpegTools.ts); tests and their helpers need no choice of their own.
 */
import { defaultFfmpegBinaries } from '../../server/media/ffmpegBinaries.js';
import { probe as probeWith, type ProbeOptions, type ProbeResult } from '../../server/media/probe.js';

export async function probe(file: string, options: Partial<ProbeOptions> = {}): Promise<ProbeResult> {
  return probeWith(file, { ...options, ffprobePath: options.ffprobePath ?? (await defaultFfmpegBinaries()).ffprobe.path });
}
