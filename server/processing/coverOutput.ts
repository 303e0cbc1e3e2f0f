/**
 * The covers of a video (issue 4, item 4): a representative frame of the source (not a black or
 * blank first frame; see media/cover.ts) as the full-size `cover.jpg`, and from it every size of
 * spec 2.3 (`t<n>.jpg`, `?t=2` to `?t=7`), all written into the attempt's scratch folder. The
 * worker makes the sizes with the cover (issue 11: API nodes need no ffmpeg); the transcode job
 * stores them as `covers/<videoId>/…` with the renditions.
 */
import path from 'node:path';
import { COVER_SIZES, extractCover } from '../media/cover.js';
import type { VideoInfo } from '../media/probe.js';
import { demuxerOf } from '../media/sourcePolicy.js';
import { toneMapFilters, type ColourInfo } from '../media/toneMapping.js';
import { mayBeInterlaced } from '../media/transcodeArgs.js';
import { COVER_FILE, coverSizeFileName } from './mediaNames.js';
import type { FfmpegRunContext } from './renditionOutputs.js';

/** Writes `cover.jpg` and every `t<n>.jpg` into `outDir`; resolves with their names, the full size first. */
export async function writeCovers(
  source: string,
  info: Pick<VideoInfo, 'durationSeconds' | 'interlaced' | 'storedWidth' | 'storedHeight' | 'formatName'> & ColourInfo,
  outDir: string,
  ffmpeg: FfmpegRunContext,
): Promise<string[]> {
  const run = { ffmpegPath: ffmpeg.ffmpegPath, signal: ffmpeg.signal, pidFile: ffmpeg.pidFile, memoryLimitBytes: ffmpeg.memoryLimitBytes };
  const cover = path.join(outDir, COVER_FILE);
  const sizes = Object.entries(COVER_SIZES).map(([t, { width, height }]) => ({ name: coverSizeFileName(Number(t)), width, height }));
  // The sizes in the cover's own run, from the same decoded picture.
  await extractCover(source, cover, info.durationSeconds, {
    ...run,
    // Read as what it was judged, as the renditions' run reads it.
    inputFormat: demuxerOf(info.formatName),
    // As the renditions are: a DVD's cover is one picture, not two fields' moments combed.
    deinterlace: mayBeInterlaced(info),
    // As the renditions are: an HDR source's cover is tone-mapped, not washed out.
    toneMap: ffmpeg.toneMapping ? toneMapFilters(info) : [],
    // With the duration, how the keyframes are read (one pass for a short source).
    picture: { width: info.storedWidth, height: info.storedHeight },
  }, sizes.map((s) => ({ path: path.join(outDir, s.name), width: s.width, height: s.height })));
  return [COVER_FILE, ...sizes.map((s) => s.name)];
}
