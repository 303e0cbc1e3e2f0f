import { defaultFfmpegBinaries, resolveFfmpegBinaries, type FfmpegBinaries } from '../media/ffmpegBinaries.js';

/** What /healthz shows of the binaries: the pair in use, or why there is none. */
export type FfmpegStatus =
  | { ok: true; ffmpeg: FfmpegBinaries['ffmpeg']; ffprobe: FfmpegBinaries['ffprobe']; skipped: string[] }
  | { ok: false; error: string };

/**
 * The ffmpeg and ffprobe this server runs: the configured overrides, else the order of
 * preference of media/ffmpegBinaries.ts (setting, ffmpeg-static, the installer packages, PATH).
 * Resolved on first use, not at start-up, so that the API serves even where ffmpeg is missing
 * (transcodes then fail with the reason, and /healthz says why). A success is kept; a failure is
 * not, so installing ffmpeg or fixing the setting takes effect without a restart.
 */
export class FfmpegTools {
  private resolved: Promise<FfmpegBinaries> | undefined;

  constructor(private readonly overrides: { ffmpegPath?: string; ffprobePath?: string }) {}

  binaries(): Promise<FfmpegBinaries> {
    if (!this.resolved) {
      const { ffmpegPath, ffprobePath } = this.overrides;
      const p = ffmpegPath || ffprobePath ? resolveFfmpegBinaries({ ffmpegPath, ffprobePath }) : defaultFfmpegBinaries();
      this.resolved = p;
      p.catch(() => {
        if (this.resolved === p) this.resolved = undefined;
      });
    }
    return this.resolved;
  }

  /** For /healthz: never throws. */
  async status(): Promise<FfmpegStatus> {
    try {
      const b = await this.binaries();
      return { ok: true, ffmpeg: b.ffmpeg, ffprobe: b.ffprobe, skipped: b.skipped };
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
  }
}
