import fs from 'node:fs';
import type { LocalMediaFile, MediaObjectInfo } from './mediaStore.js';

/** Bounds of {@link OpenFileCache}. */
export interface OpenFileCacheOptions {
  /** Most files kept open; the one opened longest ago goes first (nginx's `open_file_cache max`). */
  maxFiles: number;
  /** A file nobody asked for during this long is closed (nginx's `inactive`). */
  inactiveMs: number;
}

export const DEFAULT_OPEN_FILE_CACHE: OpenFileCacheOptions = { maxFiles: 1000, inactiveMs: 10_000 };

interface Entry {
  file: string;
  fd: number;
  info: MediaObjectInfo;
  /** The open file's identity: a file at `file` with another one is another object. */
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  /** Answers reading it now: its descriptor is closed only once none is. */
  readers: number;
  /** Out of the cache (replaced, removed, evicted): closed when its last reader lets go. */
  dropped: boolean;
  /** Asked for since the last sweep. */
  used: boolean;
}

/**
 * Open descriptors of media files, kept for a short time (nginx's `open_file_cache`), for
 * delivery's hot path on local disk (issue 14): a player's Range requests and an HLS walk open,
 * fstat and close the same files again and again, and the local store builds and checks the path
 * of the key each time.
 *
 * Never stale: each use first stats the path (one system call, where open, fstat and close were
 * three) and uses the kept descriptor only if the file there is still the one it has open (same
 * inode, size, modification and change times). A rendition replaced by rename, a file rewritten
 * in place or removed, by this process or another (shared media folders), is opened anew or
 * answered as missing at once. The local store also drops a key it writes or removes, so that a
 * removed file's space is freed at once rather than at the next sweep. Only keys the store
 * accepted (made into a path by its containment check) are ever in the cache.
 */
export class OpenFileCache {
  private readonly entries = new Map<string, Entry>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly o: OpenFileCacheOptions = DEFAULT_OPEN_FILE_CACHE) {}

  /**
   * The object under `key` opened, from the cache or by `open` (which makes the path from the
   * key, checked, and opens it: undefined if there is no file). The caller calls `release` once
   * done reading.
   */
  acquire(key: string, open: () => { file: string; fd: number; st: fs.Stats; info: MediaObjectInfo } | undefined): LocalMediaFile | undefined {
    const kept = this.entries.get(key);
    if (kept) {
      const st = fs.statSync(kept.file, { throwIfNoEntry: false });
      if (st && st.ino === kept.ino && st.size === kept.size && st.mtimeMs === kept.mtimeMs && st.ctimeMs === kept.ctimeMs) {
        kept.used = true;
        return this.lend(kept);
      }
      this.drop(key);
    }
    const opened = open();
    if (!opened) return undefined;
    const entry: Entry = {
      file: opened.file,
      fd: opened.fd,
      info: opened.info,
      ino: opened.st.ino,
      size: opened.st.size,
      mtimeMs: opened.st.mtimeMs,
      ctimeMs: opened.st.ctimeMs,
      readers: 0,
      dropped: false,
      used: true,
    };
    if (this.entries.size >= this.o.maxFiles) this.drop(this.entries.keys().next().value!);
    this.entries.set(key, entry);
    this.sweeper ??= setInterval(() => this.sweep(), this.o.inactiveMs).unref();
    return this.lend(entry);
  }

  /** Forgets `key` (written or removed): its descriptor closes once no answer reads it. */
  drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    entry.dropped = true;
    if (entry.readers === 0) fs.close(entry.fd, () => undefined);
  }

  /** Forgets every key under `prefix` (whole segments). */
  dropPrefix(prefix: string): void {
    for (const key of [...this.entries.keys()]) if (key.startsWith(`${prefix}/`)) this.drop(key);
  }

  /** Files kept open now (for tests). */
  get size(): number {
    return this.entries.size;
  }

  private lend(entry: Entry): LocalMediaFile {
    entry.readers++;
    let released = false;
    return {
      fd: entry.fd,
      info: entry.info,
      release: () => {
        if (released) return;
        released = true;
        entry.readers--;
        if (entry.readers === 0 && entry.dropped) fs.close(entry.fd, () => undefined);
      },
    };
  }

  /** Closes what nobody asked for since the last sweep; stops once nothing is kept. */
  private sweep(): void {
    for (const [key, entry] of this.entries) {
      if (entry.used) entry.used = false;
      else this.drop(key);
    }
    if (this.entries.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}
