/**
 * The cover sizes of spec 2.3 (`?t=2` to `?t=7`), each made once from the full-size cover on its
 * first request and kept as `covers/<videoId>/t<n>.jpg`.
 *
 * Concurrent first requests for one size share one ffmpeg run (an in-flight map keyed by video
 * and size), and the file is written under a temporary name and renamed, so no request can read
 * a half-written picture. A small limit on runs at once keeps a page of new thumbnails from
 * starting dozens of ffmpeg processes.
 */
import fsp from 'node:fs/promises';
import { atomicOutput } from '../media/atomicFile.js';
import { COVER_SIZES, resizeCover, type CoverSizeKey } from '../media/cover.js';
import type { LocalMediaStore } from '../storage/mediaStore.js';
import { COVER_FILE, coverSizeFileName } from './mediaNames.js';

/** Whether `t` is one of the sizes of spec 2.3. */
export function isCoverSize(t: number): t is CoverSizeKey {
  return Object.hasOwn(COVER_SIZES, t);
}

export interface CoverSizeCacheDeps {
  media: LocalMediaStore;
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
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly deps: CoverSizeCacheDeps) {}

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
      pending = this.make(videoId, t, this.deps.media.path('covers', videoId, name)).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return (await pending) ? name : undefined;
  }

  /** Makes size `t` unless it is there; resolves false if there is no full-size cover to make it from. */
  private async make(videoId: string, t: CoverSizeKey, file: string): Promise<boolean> {
    await this.slot();
    try {
      if (await exists(file)) return true; // made by a run that finished since the caller looked, or while we waited for a slot
      const cover = this.deps.media.path('covers', videoId, COVER_FILE);
      if (!(await exists(cover))) return false;
      const { width, height } = COVER_SIZES[t];
      const out = atomicOutput(file, { fsync: false }); // a cache: lost on a power cut, it is made again
      try {
        await resizeCover(cover, out.tmpPath, width, height, {
          ffmpegPath: await this.deps.ffmpegPath(),
          signal: this.deps.signal,
          pidFile: this.deps.pidFile,
          memoryLimitBytes: this.deps.memoryLimitBytes,
        });
        await out.commit();
      } catch (err) {
        await out.abort().catch(() => undefined);
        throw err;
      }
      return true;
    } finally {
      this.release();
    }
  }

  private async slot(): Promise<void> {
    if (this.running < this.deps.concurrency) {
      this.running++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}

function exists(file: string): Promise<boolean> {
  return fsp.access(file).then(
    () => true,
    () => false,
  );
}
