import fs from 'node:fs';
import type { LocalMediaFile, MediaObjectInfo } from './mediaStore.js';

/** Bounds of {@link OpenFileCache}. */
export interface OpenFileCacheOptions {
  /** Most files kept open; the one opened longest ago goes first (nginx's `open_file_cache max`). */
  maxFiles: number;
  /** A file nobody asked for during this long is closed (nginx's `inactive`). */
  inactiveMs: number;
  /** Bytes of the files' recently read blocks kept in memory, in all ({@link BLOCK_BYTES} each); 0 keeps none. */
  blockCacheBytes: number;
  /**
   * How long a kept file is used without checking the path again (nginx's `open_file_cache_valid`,
   * 60 s by default there): a change made beside the store (by hand, another node on a shared
   * folder) is seen within this long; the store's own writes and removals drop the file at once.
   */
  validMs: number;
}

export const DEFAULT_OPEN_FILE_CACHE: OpenFileCacheOptions = { maxFiles: 1000, inactiveMs: 10_000, blockCacheBytes: 32 * 1024 * 1024, validMs: 100 };

/** The unit the block cache reads and keeps: a 1 KiB Range reads its whole block once, then none. */
export const BLOCK_BYTES = 64 * 1024;

/** One cached block of a file: immutable once read (answers hold views of it). */
interface Block {
  entry: Entry;
  index: number;
  bytes: Buffer;
}

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
  /** When the path was last found to be this file (Date.now()). */
  checkedAt: number;
  /** Its cached blocks by index (see {@link OpenFileCache.read}). */
  blocks: Map<number, Block>;
}

/**
 * Open descriptors of media files, kept for a short time (nginx's `open_file_cache`), for
 * delivery's hot path on local disk (issue 14): a player's Range requests and an HLS walk open,
 * fstat and close the same files again and again, and the local store builds and checks the path
 * of the key each time.
 *
 * Never stale for long: a use more than `validMs` (100 ms) after the last check first stats the
 * path (one system call, where open, fstat and close were three) and uses the kept descriptor
 * only if the file there is still the one it has open (same inode, size, modification and change
 * times). A rendition replaced by rename, a file rewritten in place or removed by another process
 * (shared media folders, a hand) is opened anew or answered as missing within `validMs`; until
 * then the answers are whole and consistent, the old file's bytes with the old file's headers.
 * The stat on every use was 9% of a 64 KiB Range answer's CPU (issue 14). The local store drops a
 * key it writes or removes itself at once, so its own changes are seen at once and a removed
 * file's space is freed at once rather than at the next sweep. Only keys the store accepted (made
 * into a path by its containment check) are ever in the cache.
 *
 * Blocks: the bytes of small answers are kept too, in blocks of {@link BLOCK_BYTES}, at most
 * `blockCacheBytes` of them in all, the least recently used going first. The kernel's page cache
 * already holds them, but copying them out of it (pread) was the largest single cost of a 64 KiB
 * Range answer (16% of its CPU, 26 µs on this 2-core machine; nginx's sendfile copies nothing),
 * and HLS viewers ask for the same few segments again and again. A block belongs to its open
 * file's entry and goes with it: it is never used once the file on disk is not the one it was
 * read from (the check above), so a block is never staler than its file.
 */
export class OpenFileCache {
  private readonly entries = new Map<string, Entry>();
  private sweeper: NodeJS.Timeout | undefined;
  /** Every cached block, the least recently used first (a Map keeps insertion order). */
  private readonly lru = new Map<Block, Block>();
  private blockBytes = 0;

  constructor(private readonly o: OpenFileCacheOptions = DEFAULT_OPEN_FILE_CACHE) {}

  /**
   * The object under `key` opened, from the cache or by `open` (which makes the path from the
   * key, checked, and opens it: undefined if there is no file). The caller calls `release` once
   * done reading.
   */
  acquire(key: string, open: () => { file: string; fd: number; st: fs.Stats; info: MediaObjectInfo } | undefined): LocalMediaFile | undefined {
    const kept = this.entries.get(key);
    if (kept) {
      const now = Date.now();
      if (now - kept.checkedAt < this.o.validMs) {
        kept.used = true;
        return this.lend(kept);
      }
      const st = fs.statSync(kept.file, { throwIfNoEntry: false });
      if (st && st.ino === kept.ino && st.size === kept.size && st.mtimeMs === kept.mtimeMs && st.ctimeMs === kept.ctimeMs) {
        kept.used = true;
        kept.checkedAt = now;
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
      checkedAt: Date.now(),
      blocks: new Map(),
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
    for (const block of entry.blocks.values()) this.forget(block);
    entry.blocks.clear();
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

  /** Bytes of blocks kept now (for tests). */
  get cachedBytes(): number {
    return this.blockBytes;
  }

  /**
   * Bytes `start` to `end` (inclusive) of `entry`'s file, as views of its blocks in order (not
   * joined: a copy of 64 KiB cost as much as reading it anew): the cached blocks, and the blocks
   * not cached read now, blocking (`sync`), or in the thread pool, all at once. Throws (rejects)
   * if the file is shorter than its entry says (cut by hand: the promised length cannot be met).
   * An entry out of the cache (its file replaced) reads what it needs without keeping it.
   */
  private read(entry: Entry, start: number, end: number, sync: true): Buffer[];
  private read(entry: Entry, start: number, end: number, sync: false): Buffer[] | Promise<Buffer[]>;
  private read(entry: Entry, start: number, end: number, sync: boolean): Buffer[] | Promise<Buffer[]> {
    const first = Math.floor(start / BLOCK_BYTES);
    const last = Math.floor(end / BLOCK_BYTES);
    const blocks: Array<Block | undefined> = [];
    const missing: number[] = [];
    for (let i = first; i <= last; i++) {
      const block = entry.blocks.get(i);
      if (block) {
        this.lru.delete(block);
        this.lru.set(block, block);
      } else missing.push(i - first);
      blocks.push(block);
    }
    const assemble = () => join(blocks as Block[], start - first * BLOCK_BYTES, end - start + 1);
    if (missing.length === 0) return assemble();
    if (sync) {
      for (const m of missing) blocks[m] = this.keep(entry, first + m, readBlockSync(entry, first + m));
      return assemble();
    }
    return Promise.all(missing.map((m) => readBlock(entry, first + m).then((bytes) => (blocks[m] = this.keep(entry, first + m, bytes))))).then(assemble);
  }

  /** Keeps block `index` of `entry` (unless the entry left the cache meanwhile), evicting the least recently used beyond the bound. */
  private keep(entry: Entry, index: number, bytes: Buffer): Block {
    const block: Block = { entry, index, bytes };
    if (entry.dropped || this.o.blockCacheBytes < BLOCK_BYTES || entry.blocks.has(index)) return block;
    entry.blocks.set(index, block);
    this.lru.set(block, block);
    this.blockBytes += bytes.length;
    while (this.blockBytes > this.o.blockCacheBytes) {
      const oldest = this.lru.keys().next().value!;
      oldest.entry.blocks.delete(oldest.index);
      this.forget(oldest);
    }
    return block;
  }

  private forget(block: Block): void {
    if (this.lru.delete(block)) this.blockBytes -= block.bytes.length;
  }

  private lend(entry: Entry): LocalMediaFile {
    entry.readers++;
    let released = false;
    return {
      fd: entry.fd,
      info: entry.info,
      readSync: (start, end) => this.read(entry, start, end, true),
      read: (start, end) => this.read(entry, start, end, false),
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

/** The length block `index` of `entry`'s file has (the last one may be short). */
function blockLength(entry: Entry, index: number): number {
  return Math.min(BLOCK_BYTES, entry.size - index * BLOCK_BYTES);
}

function readBlockSync(entry: Entry, index: number): Buffer {
  const length = blockLength(entry, index);
  const bytes = Buffer.allocUnsafeSlow(length);
  if (fs.readSync(entry.fd, bytes, 0, length, index * BLOCK_BYTES) !== length) throw shorter(entry);
  return bytes;
}

function readBlock(entry: Entry, index: number): Promise<Buffer> {
  const length = blockLength(entry, index);
  const bytes = Buffer.allocUnsafeSlow(length);
  return new Promise((resolve, reject) =>
    fs.read(entry.fd, bytes, 0, length, index * BLOCK_BYTES, (err, read) => (err ? reject(err) : read !== length ? reject(shorter(entry)) : resolve(bytes))),
  );
}

function shorter(entry: Entry): Error {
  return new Error(`media object ${entry.info.key} is shorter than its announced length`);
}

/** `length` bytes from `offset` into the blocks, in order, as views of them (nothing copied). */
function join(blocks: readonly Block[], offset: number, length: number): Buffer[] {
  const parts: Buffer[] = [];
  let left = length;
  let from = offset;
  for (const { bytes } of blocks) {
    const to = Math.min(bytes.length, from + left);
    parts.push(bytes.subarray(from, to));
    left -= to - from;
    from = 0;
  }
  return parts;
}
