import fs from 'node:fs';
import path from 'node:path';
import type { UploadInProgress } from '../http/adminApiTypes.js';
import type { VideoStore } from '../storage/types.js';
import type { StalledUpload } from './housekeepingViews.js';

/** What the monitor reads of the tus endpoint: its folder, its uploads and its store (server/ingest/tus/tusUpload.ts). */
export interface TusUploadSource {
  directory: string;
  /** The ids of the uploads in the folder, in @tus/server's format (safe to join to `directory`). */
  listUploadIds(): Promise<string[]>;
  store: {
    getUpload(id: string): Promise<{ offset: number; size?: number; metadata?: Record<string, string | null>; creation_date?: string }>;
    /** Removes the upload and its bytes (tus termination's store call). */
    remove(id: string): Promise<void>;
  };
}


/** An upload with no byte for this long counts as stalled (its rate is 0). */
const STALLED_MS = 5_000;
/** Rates are measured over at least this long, so a burst of one chunk does not read as the speed. */
const MIN_SAMPLE_MS = 900;

/**
 * Uploads in progress on the tus endpoint, read from its store's folder (the ingest code emits
 * no per-byte events; multipart uploads finish within one request and are not listed). The rate
 * is measured between successive calls, which the events stream makes every second while a
 * console is watching.
 */
export class UploadMonitor {
  private samples = new Map<string, { offset: number; at: number; rate: number | null }>();

  constructor(
    private readonly source: TusUploadSource,
    private readonly videos: VideoStore,
    private readonly now: () => number = Date.now,
  ) {}

  async list(): Promise<UploadInProgress[]> {
    const { ids, entries } = await this.read();
    const out: UploadInProgress[] = [];
    const now = this.now();
    for (const { id, upload, mtimeMs } of entries) {
      const size = upload.size ?? null;
      const meta = upload.metadata ?? {};
      const videoId = meta.videoId ?? '';
      const rate = this.rate(id, upload.offset, now, mtimeMs);
      out.push({
        id,
        videoId,
        appId: meta.appId ?? '',
        title: videoId ? ((await this.videos.get(videoId))?.title ?? '') : '',
        filename: meta.filename ?? '',
        uploadType: meta.uploadType ?? '',
        size,
        offset: upload.offset,
        percent: percentOf(upload.offset, size),
        createdAt: upload.creation_date ? new Date(upload.creation_date).toISOString() : null,
        lastWriteAt: new Date(mtimeMs).toISOString(),
        bytesPerSecond: rate,
        etaSeconds: size !== null && rate !== null && rate > 0 ? Math.ceil((size - upload.offset) / rate) : null,
      });
    }
    for (const id of this.samples.keys()) if (!ids.includes(id)) this.samples.delete(id);
    return out.sort((a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? ''));
  }

  /**
   * Uploads with no byte for `stalledMs` or more (issue 13, item 4), longest stalled first. Read
   * apart from {@link list}, whose rates are measured between its own calls.
   */
  async stalled(stalledMs: number): Promise<StalledUpload[]> {
    const now = this.now();
    const out: Array<StalledUpload & { since: number }> = [];
    for (const { id, upload, mtimeMs } of (await this.read()).entries) {
      if (now - mtimeMs < stalledMs) continue;
      const videoId = upload.metadata?.videoId ?? '';
      out.push({
        id,
        videoId,
        title: videoId ? ((await this.videos.get(videoId))?.title ?? '') : '',
        filename: upload.metadata?.filename ?? '',
        size: upload.size ?? null,
        offset: upload.offset,
        percent: percentOf(upload.offset, upload.size ?? null),
        lastWriteAt: new Date(mtimeMs).toISOString(),
        since: mtimeMs,
      });
    }
    return out.sort((a, b) => a.since - b.since).map(({ since: _since, ...u }) => u);
  }

  /** The videos an upload is under way for (the sweep of expired registrations leaves them be). */
  async videosUploading(): Promise<Set<string>> {
    return new Set((await this.read()).entries.map((e) => e.upload.metadata?.videoId ?? '').filter((v) => v !== ''));
  }

  /**
   * Cancels an unfinished upload, as tus termination does: its bytes go, the video stays in 8 and
   * can take another upload (the ledger lets its reservation go when it next finds the upload
   * gone). Only an id the folder lists is removed (no path is made from request text); false if
   * there is none such, or it is complete (being checked: it is the video's now).
   */
  async cancel(id: string): Promise<boolean> {
    const entry = (await this.read()).entries.find((e) => e.id === id);
    if (!entry) return false;
    await this.source.store.remove(entry.id);
    this.samples.delete(entry.id);
    return true;
  }

  /** The unfinished uploads in the folder, with their last write. */
  private async read(): Promise<{ ids: string[]; entries: Array<{ id: string; upload: Awaited<ReturnType<TusUploadSource['store']['getUpload']>>; mtimeMs: number }> }> {
    let ids: string[];
    try {
      ids = await this.source.listUploadIds();
    } catch {
      return { ids: [], entries: [] };
    }
    const entries = [];
    for (const id of ids) {
      try {
        const upload = await this.source.store.getUpload(id);
        // listUploadIds checked the id's format: no request text reaches this path.
        const mtimeMs = (await fs.promises.stat(path.join(this.source.directory, id))).mtimeMs;
        const size = upload.size ?? null;
        if (size !== null && upload.offset >= size) continue; // complete: being checked, then gone
        entries.push({ id, upload, mtimeMs });
      } catch {
        continue; // finished or removed meanwhile
      }
    }
    return { ids, entries };
  }

  /** Bytes per second since the previous sample, smoothed; 0 for a stalled upload; null before a second sample. */
  private rate(id: string, offset: number, now: number, mtimeMs: number): number | null {
    if (now - mtimeMs > STALLED_MS) {
      this.samples.set(id, { offset, at: now, rate: 0 });
      return 0;
    }
    const prev = this.samples.get(id);
    if (!prev) {
      this.samples.set(id, { offset, at: now, rate: null });
      return null;
    }
    if (now - prev.at < MIN_SAMPLE_MS) return prev.rate;
    const current = Math.max(0, (offset - prev.offset) / ((now - prev.at) / 1000));
    const rate = Math.round(prev.rate ? prev.rate * 0.5 + current * 0.5 : current);
    this.samples.set(id, { offset, at: now, rate });
    return rate;
  }
}

function percentOf(offset: number, size: number | null): number | null {
  return size ? Math.min(100, Math.floor((offset / size) * 100)) : null;
}
