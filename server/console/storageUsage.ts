import type { MediaStore } from '../storage/media/mediaStore.js';
import type { MediaArea } from '../storage/media/localMediaRoot.js';
import type { StorageArea, StorageUsageView } from './housekeepingViews.js';

/** The kinds of media the overview counts, by the media store's areas. */
export const STORAGE_AREAS = ['sources', 'play', 'hls', 'covers', 'incoming'] as const satisfies readonly (MediaArea & StorageArea)[];

/**
 * The storage vop uses, split by kind, counted through the media store (MediaStore.list), so it
 * is the same on local disk and on S3 and never counts what else is on the disk. Listing every
 * object is work (a walk of the folders, or S3 list calls), so the figures are kept for
 * `cacheMs` and one count serves every caller that asks while it runs.
 */
export class StorageUsage {
  private cached: { view: StorageUsageView; at: number } | undefined;
  private counting: Promise<StorageUsageView> | undefined;

  constructor(
    private readonly store: Pick<MediaStore, 'list'>,
    private readonly cacheMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async get(): Promise<StorageUsageView> {
    if (this.cached && this.now() - this.cached.at < this.cacheMs) return this.cached.view;
    this.counting ??= this.count().finally(() => (this.counting = undefined));
    return this.counting;
  }

  private async count(): Promise<StorageUsageView> {
    const at = this.now();
    const sums = await Promise.all(
      STORAGE_AREAS.map(async (area) => {
        const objects = await this.store.list(area);
        return [area, { bytes: objects.reduce((n, o) => n + o.size, 0), files: objects.length }] as const;
      }),
    );
    const areas = Object.fromEntries(sums) as StorageUsageView['areas'];
    const view: StorageUsageView = {
      areas,
      totalBytes: sums.reduce((n, [, s]) => n + s.bytes, 0),
      countedAt: new Date(at).toISOString(),
    };
    this.cached = { view, at };
    return view;
  }
}
