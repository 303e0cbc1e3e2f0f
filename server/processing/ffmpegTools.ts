import { defaultFfmpegBinaries, resolveFfmpegBinaries, type FfmpegBinaries } from '../media/ffmpegBinaries.js';
import type { ProofReport } from '../media/ffmpegProof.js';
import { ProbeError, probe, type ProbeResult } from '../media/probe.js';

/** What /healthz shows of the binaries: the pair in use and its proof, or why there is none. */
export type FfmpegStatus =
  | { ok: true; ffmpeg: FfmpegBinaries['ffmpeg']; ffprobe: FfmpegBinaries['ffprobe']; skipped: string[]; proof: ProofReport }
  | { ok: false; error: string };

/**
 * The ffmpeg and ffprobe this server runs: the configured overrides, else the order of
 * preference of media/ffmpegBinaries.ts, proved on a sample of each common container.
 * Resolved when processing starts, in the background, so that the API serves even where ffmpeg
 * is missing (transcodes then fail with the reason, and /healthz says why). A success is kept; a
 * failure is not, so installing ffmpeg or fixing the setting takes effect without a restart.
 */
export class FfmpegTools {
  private resolved: Promise<FfmpegBinaries> | undefined;

  /**
   * `ffmpegPath`/`ffprobePath`: the processing options that override the order of preference;
   * `env`: where VOP_FFMPEG_PATH, VOP_FFPROBE_PATH and PATH are read (default: the process's).
   */
  constructor(private readonly overrides: { ffmpegPath?: string; ffprobePath?: string; env?: NodeJS.ProcessEnv }) {}

  binaries(): Promise<FfmpegBinaries> {
    if (!this.resolved) {
      const { ffmpegPath, ffprobePath, env } = this.overrides;
      const own = ffmpegPath || ffprobePath || env;
      const p = own ? resolveFfmpegBinaries({ ffmpegPath, ffprobePath, ...(env ? { env } : {}) }) : defaultFfmpegBinaries();
      this.resolved = p;
      p.catch(() => {
        if (this.resolved === p) this.resolved = undefined;
      });
    }
    return this.resolved;
  }

  /**
   * A verdict on `file` from the chosen ffprobe; when that one breaks on it (crashes, is killed,
   * times out), from each other ffprobe that runs, in order. A broken tool is never a verdict on
   * the file: when every ffprobe breaks, this throws a {@link ProbeError} that says so, which the
   * callers treat as a failure to retry, not as "not a video".
   */
  async probe(file: string, options: { timeoutMs: number }): Promise<ProbeResult> {
    const b = await this.binaries().catch((err: Error) => {
      throw new ProbeError(`no usable ffprobe: ${err.message}`);
    });
    const failures: string[] = [];
    for (const ffprobe of [b.ffprobe, ...b.alternates.ffprobe]) {
      try {
        return await probe(file, { ffprobePath: ffprobe.path, timeoutMs: options.timeoutMs });
      } catch (err) {
        if (!(err instanceof ProbeError) || err.failed === 'file') throw err;
        failures.push(err.message);
      }
    }
    throw new ProbeError(failures.length === 1 ? String(failures[0]) : `every ffprobe failed: ${failures.join(' ')}`);
  }

  /** For /healthz: never throws. */
  async status(): Promise<FfmpegStatus> {
    try {
      const b = await this.binaries();
      return { ok: true, ffmpeg: b.ffmpeg, ffprobe: b.ffprobe, skipped: b.skipped, proof: b.proof };
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
  }
}
