/**
 * Clean-up after a transcode attempt that did not finish: cut off by a crash or a stop (the
 * job's `recover`), or failed (the handler). What such an attempt can leave behind:
 *  - temporary names of outputs (atomicFile.ts), in `play/<date>/`, `covers/<id>/` and `hls/`;
 *  - renditions renamed into `play/<date>/` whose rows were never written (the crash came
 *    between the rename and `setRenditions`): complete files, but nobody's, and never served
 *    (delivery serves only files listed as renditions).
 * The date folder is the attempt's (from the job's start time), so only that folder is read.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { isPartialOutputName, readdirOrEmpty, removePartialOutputs } from '../media/atomicFile.js';
import type { LocalMediaStore } from '../storage/mediaStore.js';
import { isPlayFileOf } from './mediaNames.js';

/**
 * Removes what an unfinished attempt on `videoId` left in the media areas. `keep` lists the
 * video's rendition files (`<date>/<file>`) as stored, which stay. Returns the names removed.
 */
export async function removeAttemptOutputs(media: LocalMediaStore, videoId: string, dateFolder: string, keep: ReadonlySet<string>): Promise<string[]> {
  const removed: string[] = [];
  const playDir = media.path('play', dateFolder);
  for (const name of await readdirOrEmpty(playDir)) {
    if (!isPlayFileOf(videoId, name) || keep.has(`${dateFolder}/${name}`)) continue;
    await fsp.rm(path.join(playDir, name), { recursive: true, force: true });
    removed.push(`play/${dateFolder}/${name}`);
  }
  for (const name of await removePartialOutputs(media.path('covers', videoId))) removed.push(`covers/${videoId}/${name}`);
  // hls/ holds every video's folder: only this video's temporary folders go.
  const hlsDir = media.path('hls');
  for (const name of await readdirOrEmpty(hlsDir)) {
    if (!name.startsWith(`.${videoId}.`) || !isPartialOutputName(name)) continue;
    await fsp.rm(path.join(hlsDir, name), { recursive: true, force: true });
    removed.push(`hls/${name}`);
  }
  return removed;
}

/**
 * Removes rendition files of `videoId` that a finished attempt replaced (a retry on another day
 * writes to another date folder): every file in `previous` not in `current`.
 */
export async function removeReplacedRenditions(media: LocalMediaStore, previous: readonly string[], current: ReadonlySet<string>): Promise<void> {
  for (const rel of previous) {
    if (current.has(rel)) continue;
    const file = media.resolveRelative('play', rel);
    if (file) await fsp.rm(file, { force: true });
  }
}
