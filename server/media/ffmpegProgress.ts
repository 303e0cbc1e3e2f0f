/**
 * Turns ffmpeg's `-progress` output into progress reports. Pure: no process, no clock.
 *
 * `-progress <url>` writes blocks of `key=value` lines, each closed by `progress=continue` or
 * `progress=end`, about twice a second. Machine-readable by design, unlike the stderr status line
 * (whose layout changes between versions and which `-nostats` turns off).
 */

/** One progress report of a running ffmpeg. */
export interface FfmpegProgress {
  /** 0 to 100, never decreasing within a run; null when the duration is unknown. */
  percent: number | null;
  /** Frames encoded per second, as ffmpeg reports it; null before the first frame. */
  fps: number | null;
  /** Processing speed as a multiple of real time (2 = twice as fast as playback); null when unknown. */
  speed: number | null;
  /** Media time written so far, in seconds. */
  outTimeSeconds: number;
  /** Estimated seconds left, from the remaining media time and the current speed; null when unknown. */
  etaSeconds: number | null;
  /** True for the last report of a run (`progress=end`). */
  done: boolean;
}

/** Splits the byte stream into blocks and reports each; feed it chunks as they arrive. */
export class ProgressParser {
  private pending = '';
  private block = new Map<string, string>();
  private lastPercent = 0;

  /**
   * @param durationSeconds media time of the whole run, to express progress as a percentage
   *   (the input's duration, or the shortest of a `-t`/`-shortest` limit); 0 or absent: unknown.
   */
  constructor(private readonly durationSeconds?: number) {}

  /** Returns the reports completed by this chunk (usually zero or one). */
  push(chunk: string): FfmpegProgress[] {
    this.pending += chunk;
    const lines = this.pending.split('\n');
    this.pending = lines.pop() ?? '';
    const out: FfmpegProgress[] = [];
    for (const raw of lines) {
      const line = raw.trim();
      const eq = line.indexOf('=');
      if (eq <= 0) continue;
      const key = line.slice(0, eq);
      const value = line.slice(eq + 1);
      if (key === 'progress') {
        out.push(this.report(value === 'end'));
        this.block = new Map();
      } else {
        this.block.set(key, value);
      }
    }
    return out;
  }

  private report(done: boolean): FfmpegProgress {
    // out_time_us is microseconds; out_time_ms is too, despite its name (a long-standing ffmpeg quirk).
    const micros = num(this.block.get('out_time_us')) ?? num(this.block.get('out_time_ms'));
    const outTimeSeconds = micros !== null && micros > 0 ? micros / 1e6 : 0;
    const fps = num(this.block.get('fps'));
    const speed = num(this.block.get('speed')?.replace(/x$/, ''));
    const d = this.durationSeconds;
    let percent: number | null = null;
    let etaSeconds: number | null = null;
    if (d !== undefined && d > 0) {
      this.lastPercent = Math.max(this.lastPercent, done ? 100 : Math.min(100, (outTimeSeconds / d) * 100));
      percent = Math.round(this.lastPercent * 10) / 10;
      etaSeconds = done ? 0 : speed !== null && speed > 0 ? Math.max(0, (d - outTimeSeconds) / speed) : null;
    }
    return { percent, fps: fps !== null && fps > 0 ? fps : null, speed: speed !== null && speed > 0 ? speed : null, outTimeSeconds, etaSeconds, done };
  }
}

/** "12:34:56.78" → seconds; used for fluent-ffmpeg's `timemark`. */
export function parseTimemark(mark: string): number | null {
  const m = /^(-?\d+):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(mark.trim());
  if (!m) return num(mark);
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]);
}

function num(value: string | undefined): number | null {
  if (value === undefined || value === '' || value === 'N/A') return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}
