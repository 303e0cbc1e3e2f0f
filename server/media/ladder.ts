/**
 * The rendition ladder: which sizes and bitrates a source is transcoded to (issue 4, item 3).
 *
 * A rung is named by the *shorter* side of the picture: a 1080x1920 portrait phone clip is
 * "1080p" just as 1920x1080 is, and gets 720p as 720x1280. Judging by height alone would call
 * that clip "1920p" and scale its 720p rung to 405x720, a quarter of the pixels it deserves.
 *
 * Sizes are the displayed ones (probe.ts applies rotation and pixel aspect): ffmpeg autorotates
 * while decoding, so the filter graph sees the displayed picture and must scale to these sizes.
 */

/** One step of the ladder. */
export interface LadderRung {
  /** Label shown to users and in `BitrateLabel`, e.g. "720p". */
  label: string;
  /** Shorter side of the output, in pixels (the "720" of 720p). Even, as libx264's 4:2:0 requires. */
  shortSide: number;
  /** Video bitrate ceiling in kbit/s (H.264). */
  videoBitrateKbps: number;
}

/** Options of {@link pickRungs}. */
export interface LadderOptions {
  /** The rungs, any order; sorted largest first on resolution. */
  rungs: LadderRung[];
  /** AAC bitrate of every rendition, in kbit/s. */
  audioBitrateKbps: number;
  /**
   * A source whose shorter side falls short of a rung by at most this fraction still gets that
   * rung, at its own size (never upscaled): an 853x479 or 1920x1072 file is a 480p or 1080p
   * video with a rounding error, not a reason to drop a whole step. 0 disables it.
   */
  snapTolerance: number;
  /** Floor for the bitrate of a rendition below the smallest rung, in kbit/s. */
  minVideoBitrateKbps: number;
}

export const DEFAULT_LADDER_OPTIONS = {
  rungs: [
    { label: '1080p', shortSide: 1080, videoBitrateKbps: 5000 },
    { label: '720p', shortSide: 720, videoBitrateKbps: 2800 },
    { label: '480p', shortSide: 480, videoBitrateKbps: 1400 },
    { label: '360p', shortSide: 360, videoBitrateKbps: 800 },
  ],
  audioBitrateKbps: 128,
  snapTolerance: 0.02,
  minVideoBitrateKbps: 150,
} satisfies LadderOptions;

/** One output to produce. */
export interface Rendition {
  /** e.g. "720p"; for a source below the smallest rung, its own shorter side, e.g. "240p". */
  label: string;
  /** Output width in pixels (even). */
  width: number;
  /** Output height in pixels (even). */
  height: number;
  /** Video bitrate ceiling, kbit/s. */
  videoBitrateKbps: number;
  /** AAC bitrate, kbit/s (unused when the source has no audio). */
  audioBitrateKbps: number;
}

/** Fills defaults and validates; throws an Error that names the bad option. */
export function resolveLadderOptions(input: Partial<LadderOptions> = {}): LadderOptions {
  const o: LadderOptions = { ...DEFAULT_LADDER_OPTIONS, ...input };
  if (!Array.isArray(o.rungs) || o.rungs.length === 0) throw new Error('Option rungs must list at least one rung.');
  const seen = new Set<number>();
  for (const [i, r] of o.rungs.entries()) {
    if (typeof r.label !== 'string' || r.label === '') throw new Error(`Option rungs[${i}].label must be a non-empty string.`);
    // The folders of HLS's audio and subtitle renditions beside the rungs' (processing/mediaNames.ts).
    if (/^(audio|subs)-/.test(r.label)) throw new Error(`Option rungs[${i}].label must not start with "audio-" or "subs-": HLS names its audio and subtitle renditions so.`);
    if (!Number.isInteger(r.shortSide) || r.shortSide < 2 || r.shortSide % 2 !== 0) throw new Error(`Option rungs[${i}].shortSide must be an even whole number of at least 2 (libx264 needs even sizes).`);
    if (seen.has(r.shortSide)) throw new Error(`Option rungs[${i}].shortSide ${r.shortSide} appears twice.`);
    seen.add(r.shortSide);
    if (!(r.videoBitrateKbps > 0)) throw new Error(`Option rungs[${i}].videoBitrateKbps must be greater than 0.`);
  }
  if (!(o.audioBitrateKbps > 0)) throw new Error('Option audioBitrateKbps must be greater than 0.');
  if (!(o.snapTolerance >= 0 && o.snapTolerance < 0.5)) throw new Error('Option snapTolerance must be at least 0 and below 0.5.');
  if (!(o.minVideoBitrateKbps > 0)) throw new Error('Option minVideoBitrateKbps must be greater than 0.');
  return { ...o, rungs: [...o.rungs].sort((a, b) => b.shortSide - a.shortSide) };
}

/**
 * The renditions for a source of the given displayed size, largest first: every rung at or below
 * the source (never upscaled), at least one, aspect ratio kept, both sides even.
 */
export function pickRungs(source: { width: number; height: number }, options: LadderOptions = resolveLadderOptions()): Rendition[] {
  const { width, height } = source;
  if (!(Number.isFinite(width) && Number.isFinite(height) && width >= 1 && height >= 1)) {
    throw new Error(`Cannot plan renditions for a ${width}x${height} picture.`);
  }
  const short = Math.min(width, height);
  const audioBitrateKbps = options.audioBitrateKbps;
  const out: Rendition[] = [];
  for (const rung of options.rungs) {
    if (short >= rung.shortSide) {
      out.push({ label: rung.label, ...scaledSize(width, height, rung.shortSide), videoBitrateKbps: rung.videoBitrateKbps, audioBitrateKbps });
    } else if (out.length === 0 && short >= rung.shortSide * (1 - options.snapTolerance)) {
      // Nearly this rung: keep the source's own size rather than upscale the last few lines.
      out.push({ label: rung.label, ...ownSize(width, height), videoBitrateKbps: rung.videoBitrateKbps, audioBitrateKbps });
    }
  }
  if (out.length > 0) return out;

  // Smaller than the smallest rung: one rendition at its own size, its bitrate cut with its area.
  const smallest = options.rungs[options.rungs.length - 1]!;
  const size = ownSize(width, height);
  const areaRatio = (Math.min(size.width, size.height) / smallest.shortSide) ** 2;
  return [
    {
      label: `${Math.min(size.width, size.height)}p`,
      ...size,
      videoBitrateKbps: Math.max(options.minVideoBitrateKbps, Math.round(smallest.videoBitrateKbps * areaRatio)),
      audioBitrateKbps,
    },
  ];
}

/** The nearest even whole number, at least 2 (libx264 with 4:2:0 chroma rejects odd sizes). */
export function evenSize(n: number): number {
  return Math.max(2, Math.round(n / 2) * 2);
}

/**
 * Scales so the shorter side becomes `shortSide`, the longer side in proportion, rounded to even
 * but never past the source (an 853x480 source at 480p is 852x480, not 854x480).
 */
function scaledSize(width: number, height: number, shortSide: number): { width: number; height: number } {
  const long = (side: number, other: number) => Math.min(evenSize((side * shortSide) / other), Math.max(2, Math.floor(side / 2) * 2));
  if (width >= height) return { width: long(width, height), height: shortSide };
  return { width: shortSide, height: long(height, width) };
}

/** The source's own size made even by dropping a line or column where odd (never adding one: no upscale). */
function ownSize(width: number, height: number): { width: number; height: number } {
  const down = (n: number) => Math.max(2, Math.floor(n / 2) * 2);
  return { width: down(width), height: down(height) };
}
