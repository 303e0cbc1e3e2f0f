import fs from 'node:fs';
import type { LocalMediaRoot } from './localMediaRoot.js';
import { mediaKey, type MediaStore } from './mediaStore.js';

/**
 * Everything one video has, wherever it lives: its objects in the media store (source, HLS,
 * covers, renditions) and what this node holds of it on its own disk (uploads in progress, a
 * source claimed but not yet handed to object storage). Deletion goes through here.
 */
export class VideoMedia {
  constructor(
    private readonly objects: MediaStore,
    private readonly local: LocalMediaRoot,
  ) {}

  /** Removes every object and local file of `videoId`; `playFiles` are its renditions (`<date>/<file>`). */
  async removeVideo(videoId: string, playFiles: readonly string[] = []): Promise<void> {
    for (const area of ['sources', 'hls', 'covers', 'text'] as const) await this.objects.deletePrefix(mediaKey(area, videoId));
    for (const rel of playFiles) await this.objects.delete(mediaKey('play', ...rel.split('/')));
    for (const area of ['incoming', 'sources'] as const) await fs.promises.rm(this.local.path(area, videoId), { recursive: true, force: true });
  }
}
