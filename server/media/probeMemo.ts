/**
 * Recent probe verdicts, by the file they were made on (issue 37). A source is probed when it is
 * stored (ingest), again when its transcode starts and again when its ladder starts, seconds apart
 * and, in embedded mode, on the same node and the same file: the second ffprobe (0.15 s, most of
 * it starting the program) was on the path to "playable", and the third ran beside other uploads'
 * first renditions. A file is the same file while its device, inode, size and modification
 * time (in nanoseconds) are: a rename keeps them all, a write changes the last two. Only ffprobe's
 * verdict is kept; the source policy is judged on every call (FfmpegTools.probe), so a change of
 * the settings takes effect at once.
 */
import fsp from 'node:fs/promises';
import type { ProbeResult } from './probe.js';

/** How many verdicts are kept, and for how long: the time a video may wait in the queue. */
export interface ProbeMemoLimits {
  entries: number;
  ttlMs: number;
}

export const DEFAULT_PROBE_MEMO_LIMITS: ProbeMemoLimits = { entries: 256, ttlMs: 60 * 60_000 };

export class ProbeMemo {
  /** By key, oldest first (a Map keeps insertion order). */
  private readonly verdicts = new Map<string, { verdict: ProbeResult; at: number }>();

  constructor(
    private readonly limits: ProbeMemoLimits = DEFAULT_PROBE_MEMO_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The key of `file` as it is now, with `context` (what else the verdict depends on: the
   * demuxers allowed); null when it cannot be read, and then nothing is remembered.
   */
  async keyOf(file: string, context: string): Promise<string | null> {
    const s = await fsp.stat(file, { bigint: true }).catch(() => null);
    if (!s || !s.isFile()) return null;
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}|${context}`;
  }

  /** A copy of the verdict remembered under `key`, if it is recent enough. */
  get(key: string): ProbeResult | undefined {
    const hit = this.verdicts.get(key);
    if (!hit) return undefined;
    if (this.now() - hit.at > this.limits.ttlMs) {
      this.verdicts.delete(key);
      return undefined;
    }
    return structuredClone(hit.verdict);
  }

  set(key: string, verdict: ProbeResult): void {
    this.verdicts.delete(key);
    this.verdicts.set(key, { verdict: structuredClone(verdict), at: this.now() });
    for (const oldest of this.verdicts.keys()) {
      if (this.verdicts.size <= this.limits.entries) break;
      this.verdicts.delete(oldest);
    }
  }
}
