import type { VideoRecord } from '../types.js';

/** A list page as the video store hands it out: read-only, the same object for every caller. */
export type ListPage = Readonly<{ total: number; items: VideoRecord[] }>;

/** Pages kept at most (a page of 50 with its JSON, made by the API's read calls, is about 100 KB). */
const MAX_PAGES = 256;

/**
 * List pages a node read from PostgreSQL, each with the version of its application's videos it
 * was read at (the sum of the application's `video_counts.changes`, which grows with every write
 * of one of its videos, in the writing transaction: migration 15). A page is handed out again
 * only after a read of the current version finds it unchanged, so a write committed on any node
 * shows on the next list read here; what is saved is the page's rows, their transfer and their
 * decoding, and (the page being the same object) the API's JSON of it.
 */
export class KeptPages {
  private readonly pages = new Map<string, { version: number; page: ListPage }>();

  /** The page kept under `key`, if it was read at `version`. */
  get(key: string, version: number): ListPage | undefined {
    const kept = this.pages.get(key);
    return kept && kept.version === version ? kept.page : undefined;
  }

  /** Whether any page is kept under `key` (then the current version is worth reading first). */
  has(key: string): boolean {
    return this.pages.has(key);
  }

  /** Keeps `page`, read at `version`, frozen; the oldest page goes when there are too many. */
  keep(key: string, version: number, total: number, items: VideoRecord[]): ListPage {
    for (const v of items) Object.freeze(v);
    const page: ListPage = Object.freeze({ total, items: Object.freeze(items) as VideoRecord[] });
    this.pages.delete(key);
    if (this.pages.size >= MAX_PAGES) this.pages.delete(this.pages.keys().next().value!);
    this.pages.set(key, { version, page });
    return page;
  }
}
