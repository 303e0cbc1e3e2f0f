/**
 * One ffmpeg or ffprobe executable as vop knows it: the words that the resolution of the binaries
 * (ffmpegBinaries.ts) and their proof on sample files (ffmpegProof.ts) share.
 */

/** Which of the two tools. */
export type Tool = 'ffmpeg' | 'ffprobe';

/** Where a binary was found. */
export type BinarySource = 'setting' | 'ffmpeg-static' | '@ffmpeg-installer/ffmpeg' | '@ffprobe-installer/ffprobe' | 'PATH';

/** One resolved binary. */
export interface ResolvedBinary {
  /** Absolute path of the executable. */
  path: string;
  /** Which rule of the order of preference chose it. */
  source: BinarySource;
  /** First line of `<binary> -version`, e.g. "ffmpeg version 6.1.1 Copyright (c) …". */
  version: string;
  /** libavformat's version as `-version` prints it ("59.27.100"); null when it printed none. */
  libavformat: string | null;
}
