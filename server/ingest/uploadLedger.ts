/** One upload under way, as the ledger knows it. */
export interface LiveUpload {
  videoId: string;
  /** The size the client declared (tus Upload-Length, a multipart Content-Length). */
  size: number;
  /** Bytes of it already on disk: the reservation is `size - written`. */
  written: number;
  /** Unix ms after which it no longer counts (a tus upload's expiry); absent: until released. */
  expiresAt?: number;
  /** Who created it, for replacing it (a digest of the upload page's credential); absent: nobody may. */
  owner?: string;
  /** Writes to it in progress (a PATCH, a multipart body): it is not replaced while receiving. */
  receiving: number;
  /** When the entry was made (Unix ms), so that a rebuild does not drop one whose file is not there yet. */
  since: number;
}

/**
 * The uploads under way and the disk space they were promised (issue 12, item 7): every upload
 * reserves its declared bytes when it is created, the reservation shrinks as bytes land, and goes
 * when the upload finishes, is terminated or expires. The space check of a new upload counts what
 * is promised to the others (IngestService.reserveRoom), and the ledger tells whether a video
 * already has an upload under way: there is at most one per video.
 *
 * In memory, for this process's own disk: the tus uploads are rebuilt from the store's folder at
 * start and on every sweep (TusUploads.reconcileLedger). Synchronous on purpose: a check and the
 * entry it allows happen without an await between them, so two concurrent creations cannot both
 * take the last free bytes or the same video.
 */
export class UploadLedger {
  private readonly entries = new Map<string, LiveUpload>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Bytes promised to uploads under way and not yet on disk. */
  reservedBytes(): number {
    let total = 0;
    for (const e of this.live()) total += Math.max(0, e[1].size - e[1].written);
    return total;
  }

  /** The upload under way for `videoId` (not expired), if any, with its key. */
  liveFor(videoId: string): [string, LiveUpload] | undefined {
    for (const e of this.live()) if (e[1].videoId === videoId) return e;
    return undefined;
  }

  get(key: string): LiveUpload | undefined {
    return this.entries.get(key);
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  /** Records an upload (replacing an entry of the same key). */
  add(key: string, upload: Omit<LiveUpload, 'receiving' | 'since' | 'written'> & { written?: number }): void {
    this.entries.set(key, { written: 0, ...upload, receiving: this.entries.get(key)?.receiving ?? 0, since: this.now() });
  }

  /** `written` bytes of the upload are now on disk. */
  progress(key: string, written: number): void {
    const e = this.entries.get(key);
    if (e) e.written = written;
  }

  /** A write to the upload starts (+1) or ends (-1). */
  receiving(key: string, delta: 1 | -1): void {
    const e = this.entries.get(key);
    if (e) e.receiving = Math.max(0, e.receiving + delta);
  }

  /** The upload is done, terminated or gone: its reservation is released. */
  release(key: string): void {
    this.entries.delete(key);
  }

  private *live(): Generator<[string, LiveUpload]> {
    const now = this.now();
    for (const e of this.entries) if (e[1].expiresAt === undefined || e[1].expiresAt > now) yield e;
  }
}
