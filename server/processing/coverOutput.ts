/**
 * The full-size cover of a video (issue 4, item 4): a representative frame of the source (not a
 * black or blank first frame; see media/cover.ts), written under a temporary name and renamed to
 * `covers/<videoId>/cover.jpg`. The sizes of spec 2.3 are made from it on first request
 * (coverSizeCache.ts); a new cover makes those stale, so they are removed with it.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { atomicOutput } from '../media/atomicFile.js';
import { extractCover } from '../media/cover.js';
import type { VideoInfo } from '../media/probe.js';
import { demuxerOf } from '../media/sourcePolicy.js';
import { mayBeInterlaced } from '../media/transcodeArgs.js';
import type { LocalMediaStore } from '../storage/mediaStore.js';
import { COVER_FILE } from './mediaNames.js';
import type { FfmpegRunContext } from './renditionOutputs.js';

/** Writes the cover; resolves with its path relative to the media root (VideoRecord.coverFile). */
export async function writeCover(
  videoId: string,
  source: string,
  info: Pick<VideoInfo, 'durationSeconds' | 'interlaced' | 'storedWidth' | 'storedHeight' | 'formatName'>,
  media: LocalMediaStore,
  ffmpeg: FfmpegRunContext,
): Promise<string> {
  const out = atomicOutput(media.path('covers', videoId, COVER_FILE));
  try {
    await extractCover(source, out.tmpPath, info.durationSeconds, {
      ffmpegPath: ffmpeg.ffmpegPath,
      signal: ffmpeg.signal,
      pidFile: ffmpeg.pidFile,
      memoryLimitBytes: ffmpeg.memoryLimitBytes,
      // Read as what it was judged, as the renditions' run reads it.
      inputFormat: demuxerOf(info.formatName),
      // As the renditions are: a DVD's cover is one picture, not two fields' moments combed.
      deinterlace: mayBeInterlaced(info),
    });
    await out.commit();
  } catch (err) {
    await out.abort().catch(() => undefined);
    throw err;
  }
  await removeCachedSizes(path.dirname(out.finalPath));
  return `covers/${videoId}/${COVER_FILE}`;
}

/** Removes the cached `t<n>.jpg` sizes of a cover (they were made from the previous one). */
async function removeCachedSizes(dir: string): Promise<void> {
  for (const name of await fsp.readdir(dir)) {
    if (/^t\d+\.jpg$/.test(name)) await fsp.rm(path.join(dir, name), { force: true });
  }
}
