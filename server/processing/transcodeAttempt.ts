/**
 * What the two transcode jobs (transcodeJob.ts, the first rendition; ladderJob.ts, the rest)
 * share about one attempt: its deadline, how its failures read for people (both used by
 * runAttempt.ts, which runs the attempt), its ffmpeg runs, its progress, and the rows its
 * renditions become.
 */
import { PermanentJobError, type JobContext } from '../jobs/jobQueue.js';
import { FfmpegMemoryError, type FfmpegProgress } from '../media/ffmpegRunner.js';
import { checkMediaKey } from '../storage/media/mediaStore.js';
import type { RenditionRecord } from '../storage/types.js';
import type { FfmpegTools } from '../media/ffmpegTools.js';
import type { ProcessingOptions } from './processingOptions.js';
import type { FfmpegRunContext, WrittenRendition } from './renditionOutputs.js';
import type { PauseGroup } from '../media/pauseGroup.js';

/** Share of the progress bar the ffmpeg transcode (with the cover beside it) takes; HLS and the rows take the rest. */
export const TRANSCODE_SHARE = 90;

/** The attempt's deadline passed (processing.jobTimeout). */
export class TranscodeTimeout extends Error {
  override name = 'TranscodeTimeout';
  constructor(timeoutMs: number, durationSeconds: number) {
    super(`took longer than ${minutes(timeoutMs)}, the limit for a source of ${Math.round(durationSeconds * 10) / 10} s (processing.jobTimeout); ffmpeg was stopped`);
  }
}

/**
 * A failure that a limit caused, as a permanent one with the limit as its reason: another
 * attempt would take as long, or need as much memory, again. A cancel or a shutdown stays what
 * it is (the job's own signal).
 */
export function limitFailure(err: unknown, deadline: AbortSignal, own: AbortSignal): unknown {
  if (own.aborted) return err;
  if (deadline.aborted) return new PermanentJobError((deadline.reason as Error).message);
  if (err instanceof FfmpegMemoryError) return new PermanentJobError(err.message);
  return err;
}

function minutes(ms: number): string {
  return ms >= 60_000 ? `${Math.round(ms / 6_000) / 10} min` : `${Math.round(ms / 100) / 10} s`;
}

/**
 * How an attempt's ffmpeg runs are made: the chosen binaries, the attempt's signal, the record of
 * live processes, the caps; `niceness` for work that gives way (the ladder).
 */
export async function ffmpegRunContext(
  tools: FfmpegTools,
  options: Pick<ProcessingOptions, 'probeTimeoutMs' | 'memoryLimitBytes'>,
  o: { signal: AbortSignal; pidFile: string; niceness?: number; pauseGroup?: PauseGroup },
): Promise<FfmpegRunContext> {
  const bins = await tools.binaries();
  return {
    ffmpegPath: bins.ffmpeg.path,
    // The renditions are vop's own files: judged as files, not against the source policy.
    probe: (file, p) => tools.probe(file, { ...p, source: false }),
    signal: o.signal,
    pidFile: o.pidFile,
    probeTimeoutMs: options.probeTimeoutMs,
    memoryLimitBytes: options.memoryLimitBytes,
    toneMapping: (await tools.toneMapping()).available,
    ...(o.niceness ? { niceness: o.niceness } : {}),
    ...(o.pauseGroup ? { pauseGroup: o.pauseGroup } : {}),
  };
}

export function toRecord(videoId: string, w: WrittenRendition): RenditionRecord {
  return { videoId, label: w.label, width: w.width, height: w.height, bitrateKbps: w.bitrateKbps, file: w.file, bytes: w.bytes };
}

/** ffmpeg's reports as the job's progress: the transcode fills the first 90%, with its time left and speed. */
export function transcodeProgress(ctx: JobContext): (p: FfmpegProgress) => void {
  return (p) => {
    ctx.progress({
      percent: Math.round(((p.percent ?? 0) * TRANSCODE_SHARE) / 100),
      etaSeconds: p.etaSeconds === null ? undefined : Math.ceil(p.etaSeconds),
      speed: p.speed === null ? undefined : `${p.speed.toFixed(2)}x`,
    });
  };
}

/** The media key of a stored source (VideoRecord.sourceFile, `<videoId>/source`). */
export function sourceKeyOf(sourceFile: string): string {
  return checkMediaKey(`sources/${sourceFile}`);
}

/**
 * The failure as kept on the video and the job (admins read it): absolute paths, which ffmpeg's
 * and the file system's messages carry, are cut at each of `roots` (the attempt's folder, the
 * source's, then the data directory: `media/play/…` at worst). The class is kept, so a permanent
 * failure stays permanent.
 */
export function forPeople(err: unknown, roots: readonly string[]): unknown {
  if (!(err instanceof Error) || !roots.some((r) => err.message.includes(r))) return err;
  let message = err.message;
  for (const root of roots) message = message.split(`${root}/`).join('');
  return err instanceof PermanentJobError ? new PermanentJobError(message) : new Error(message);
}
