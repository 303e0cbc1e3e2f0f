/**
 * The cover sizes of spec 2.3 (`?t=2` to `?t=7`) that a video's transcode did not make (it makes
 * them all, coverOutput.ts; videos transcoded before it did have only the full size): each made
 * once from the full-size cover on its first request and stored as `covers/<videoId>/t<n>.jpg`.
 * Needs ffmpeg on the node that serves, so it is the fallback, not the way.
 *
 * Concurrent first requests for one size share one ffmpeg run (an in-flight map keyed by video
 * and size), and the picture is made in scratch and then stored (atomic), so no request can read
 * a half-written one. A small limit on runs at once keeps a page of new thumbnails from
 * starting dozens of ffmpeg processes.
 */
import path from 'node:path';
import { Slots } from '../core/slots.js';
import { COVER_SIZES, resizeCover, type CoverSizeKey } from '../media/cover.js';
import { mediaKey, type MediaStore } from '../storage/media/mediaStore.js';
import type { Scratch } from '../storage/scratch.js';
import { COVER_FILE, coverSizeFileName } from './mediaNames.js';

/** Whether `t` is one of the sizes of spec 2.3. */
export function isCoverSize(t: number): t is CoverSizeKey {
  return Object.hasOwn(COVER_SIZES, t);
}

export interface CoverSizeCacheDeps {
  objects: MediaStore;
  scratch: Scratch;
  ffmpegPath: () => Promise<string>;
  pidFile: string;
  /** Cap on each run's address space in bytes; 0: none. */
  memoryLimitBytes: number;
  /** Resize runs at once. */
  concurrency: number;
  /** Aborted when the server closes. */
  signal: AbortSignal;
}

export class CoverSizeCache {
  private readonly inFlight = new Map<string, Promise<boolean>>();
  private readonly slots: Slots;

  constructor(private readonly deps: CoverSizeCacheDeps) {
    this.slots = new Slots(() => deps.concurrency);
  }

  /** Resolves once every resize under way has ended (after the signal is aborted, at shutdown). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.inFlight.values()]);
  }

  /**
   * Resolves with the file name (inside `covers/<videoId>/`) of size `t`, making it first if
   * needed; undefined if the full-size cover to make it from is not there. Delivery calls this
   * only once serving the size found no file, so the look for it is in {@link make}, after the
   * wait for a slot.
   */
  async ensure(videoId: string, t: CoverSizeKey): Promise<string | undefined> {
    const name = coverSizeFileName(t);
    const key = `${videoId}/${t}`;
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.make(videoId, t, name).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return (await pending) ? name : undefined;
  }

  /** Makes size `t` unless it is there, in a slot; resolves false if there is no full-size cover to make it from. */
  private make(videoId: string, t: CoverSizeKey, name: string): Promise<boolean> {
    return this.slots.run(() => this.makeNow(videoId, t, name));
  }

  private async makeNow(videoId: string, t: CoverSizeKey, name: string): Promise<boolean> {
    const { objects, scratch } = this.deps;
    const key = mediaKey('covers', videoId, name);
    if (await objects.stat(key)) return true; // made by a run that finished since the caller looked, or while we waited for a slot
    const cover = mediaKey('covers', videoId, COVER_FILE);
    if (!(await objects.stat(cover))) return false;
    const { width, height } = COVER_SIZES[t];
    const work = await scratch.fresh('covers', `${videoId}_t${t}`);
    try {
      const out = path.join(work, name);
      await objects.withLocalCopy(cover, async (file) =>
        resizeCover(file, out, width, height, {
          ffmpegPath: await this.deps.ffmpegPath(),
          signal: this.deps.signal,
          pidFile: this.deps.pidFile,
          memoryLimitBytes: this.deps.memoryLimitBytes,
        }),
      );
      await objects.put(key, { file: out, move: true }, { contentType: 'image/jpeg' });
    } finally {
      await scratch.remove('covers', `${videoId}_t${t}`);
    }
    return true;
  }
}
