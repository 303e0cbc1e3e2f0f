/**
 * Clean-up after a transcode attempt that did not finish: cut off by a crash or a stop (the
 * job's `recover`), or failed (the handler). What such an attempt can leave behind:
 *  - its scratch folder (outputs being written), on the node that ran it: removed by the attempt
 *    itself, by `recover` when it runs again, or at the node's next start (Scratch.clearAll);
 *  - renditions stored in `play/<date>/` whose rows were never written (the crash came between
 *    storing and `setRenditions`): complete objects, but nobody's, and never served (delivery
 *    serves only files listed as renditions).
 * HLS and covers stored by such an attempt sit under the video's own prefixes, are not served
 * before the video is 1, and are replaced by the next attempt (or removed with the video).
 * The date folder is the attempt's (from the job's start time), so only that folder is listed.
 */
import type { MediaStore } from '../storage/media/mediaStore.js';
import { mediaKey } from '../storage/media/mediaStore.js';
import { isPlayFileOf } from './mediaNames.js';

/**
 * Removes what an unfinished attempt on `videoId` stored: its renditions of `dateFolder` that
 * `keep` (the video's rendition files, `<date>/<file>`, as the rows list them) does not name,
 * and, when no row names anything of the video (`unnamed`), its HLS and covers. Returns the keys
 * removed. (Scratch folders are the caller's: each attempt removes its own.)
 */
export async function removeAttemptOutputs(objects: MediaStore, videoId: string, dateFolder: string, keep: ReadonlySet<string>, o: { unnamed?: boolean } = {}): Promise<string[]> {
  const removed: string[] = [];
  if (o.unnamed) {
    for (const area of ['hls', 'covers'] as const) {
      for (const { key } of await objects.list(mediaKey(area, videoId))) removed.push(key);
      await objects.deletePrefix(mediaKey(area, videoId));
    }
  }
  for (const { key } of await objects.list(mediaKey('play', dateFolder))) {
    const name = key.split('/').at(-1)!;
    if (!isPlayFileOf(videoId, name) || keep.has(`${dateFolder}/${name}`)) continue;
    await objects.delete(key);
    removed.push(key);
  }
  return removed;
}

/**
 * A job's `recover` for an attempt a crash or a stop cut off, before it runs again: the uploads it
 * left incomplete (hidden partial files on local disk, open multipart uploads on S3) in its date
 * folder and in the video's `areas` (what the job writes besides renditions), then its complete
 * renditions no row names (removeAttemptOutputs). Returns the keys of the latter.
 */
export async function removeCutOffOutputs(
  objects: MediaStore,
  videoId: string,
  dateFolder: string,
  keep: ReadonlySet<string>,
  areas: ReadonlyArray<'hls' | 'covers' | 'text'>,
): Promise<string[]> {
  await objects.removeIncomplete(mediaKey('play', dateFolder), `${videoId}_`);
  for (const area of areas) await objects.removeIncomplete(mediaKey(area, videoId));
  return removeAttemptOutputs(objects, videoId, dateFolder, keep);
}

/**
 * Removes rendition files of `videoId` that a finished attempt replaced (a retry on another day
 * writes to another date folder): every file in `previous` not in `current`.
 */
export async function removeReplacedRenditions(objects: MediaStore, previous: readonly string[], current: ReadonlySet<string>): Promise<void> {
  for (const rel of previous) {
    if (current.has(rel)) continue;
    await objects.delete(mediaKey('play', ...rel.split('/')));
  }
}
