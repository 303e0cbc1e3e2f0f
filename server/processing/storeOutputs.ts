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
import { mediaKey, type MediaStore } from '../storage/media/mediaStore.js';
import { COVER_FILE, HLS_MASTER } from './mediaNames.js';
import type { WrittenRendition } from './renditionOutputs.js';

/** Replaces `hls/<videoId>/` with the folder `dir` (variants first, the master playlist last). */
export async function storeHls(objects: MediaStore, videoId: string, dir: string, signal?: AbortSignal): Promise<void> {
  await objects.deletePrefix(mediaKey('hls', videoId));
  const files = (await fsp.readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep));
  const master = files.filter((parts) => parts.length === 1 && parts[0] === HLS_MASTER);
  for (const parts of [...files.filter((p) => !master.includes(p)), ...master]) {
    signal?.throwIfAborted();
    await objects.put(mediaKey('hls', videoId, ...parts), { file: path.join(dir, ...parts), move: true }, { contentType: contentTypeOf(parts.at(-1)!) });
  }
}

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
    await objects.put(mediaKey('play', ...w.file.split('/')), { file: w.path, move: true }, { contentType: contentTypeOf(w.file) });
  }
}

const TYPES: Record<string, string> = { mp4: 'video/mp4', m4s: 'video/mp4', ts: 'video/mp2t', m3u8: 'application/vnd.apple.mpegurl', jpg: 'image/jpeg', webm: 'video/webm' };

/** What object storage answers a presigned GET with; delivery sets its own. */
function contentTypeOf(name: string): string {
  return TYPES[path.extname(name).slice(1).toLowerCase()] ?? 'application/octet-stream';
}
