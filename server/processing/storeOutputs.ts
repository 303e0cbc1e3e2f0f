/**
 * An attempt's finished outputs, from its scratch folder into the media store (issue 11: "workers
 * transcode in local scratch and upload the results"). Every file is handed over (`move`): on
 * local disk a rename, on S3 an upload. What is stored first is what nothing lists yet: HLS (its
 * master playlist last, so a player never finds a master whose variants are not all there), the
 * covers and the renditions; the rows that name them are written by the job afterwards, and only
 * then does the video move to 1.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { mediaContentType } from '../storage/media/contentTypes.js';
import { mediaKey, type MediaStore } from '../storage/media/mediaStore.js';
import { COVER_FILE, HLS_MASTER } from './mediaNames.js';
import type { WrittenRendition } from './renditionOutputs.js';

/**
 * Replaces `hls/<videoId>/` with the folder `dir` (variants first, the master playlist last); with
 * `add`, stores `dir` over what is there, keeping the variants it does not hold (the ladder's).
 */
export async function storeHls(objects: MediaStore, videoId: string, dir: string, signal?: AbortSignal, o: { add?: boolean } = {}): Promise<void> {
  if (!o.add) await objects.deletePrefix(mediaKey('hls', videoId));
  const files = (await fsp.readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep));
  const master = files.filter((parts) => parts.length === 1 && parts[0] === HLS_MASTER);
  const put = (parts: string[]) => objects.put(mediaKey('hls', videoId, ...parts), { file: path.join(dir, ...parts), move: true }, { contentType: mediaContentType(parts.at(-1)!) });
  // An hour of video is some 1,500 segments: on S3, one request (and a HEAD) each, so several at
  // once; the master playlist only once every variant file is stored.
  const rest = files.filter((p) => !master.includes(p));
  let failed = false;
  const workers = Array.from({ length: Math.min(HLS_PUTS_AT_ONCE, rest.length) }, async () => {
    for (let parts = rest.shift(); parts && !failed; parts = rest.shift()) {
      signal?.throwIfAborted();
      await put(parts).catch((err: unknown) => {
        failed = true;
        throw err;
      });
    }
  });
  // Every worker settled before a failure is thrown: the clean-up after it must not race a put.
  const settled = await Promise.allSettled(workers);
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
  for (const parts of master) {
    signal?.throwIfAborted();
    await put(parts);
  }
}

/** HLS files stored at once (each a segment of a few seconds). */
const HLS_PUTS_AT_ONCE = 8;

/** Stores the covers written into `dir` (`names`, from writeCovers) as `covers/<videoId>/<name>`. */
export async function storeCovers(objects: MediaStore, videoId: string, dir: string, names: readonly string[], signal?: AbortSignal): Promise<string> {
  for (const name of names) {
    signal?.throwIfAborted();
    await objects.put(mediaKey('covers', videoId, name), { file: path.join(dir, name), move: true }, { contentType: 'image/jpeg' });
  }
  return `covers/${videoId}/${COVER_FILE}`;
}

/** Stores each rendition as `play/<date>/<file>`. */
export async function storeRenditions(objects: MediaStore, renditions: readonly WrittenRendition[], signal?: AbortSignal): Promise<void> {
  for (const w of renditions) {
    signal?.throwIfAborted();
    await objects.put(mediaKey('play', ...w.file.split('/')), { file: w.path, move: true }, { contentType: mediaContentType(w.file) });
  }
}

