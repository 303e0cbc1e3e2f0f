import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { atomicOutput, removePartialOutputs } from '../atomicFile.js';
import { fsyncDir, fsyncFile } from '../fsync.js';
import type { LocalMediaRoot } from './localMediaRoot.js';
import { DEFAULT_OPEN_FILE_CACHE, OpenFileCache, type OpenFileCacheOptions } from './openFileCache.js';
import {
  assertRange,
  MediaObjectChangedError,
  MediaObjectNotFoundError,
  isMediaKey,
  splitMediaKey,
  type ByteRange,
  type LocalMediaFile,
  type MediaObjectInfo,
  type MediaSource,
  type MediaStore,
  UnsafeMediaKeyError,
} from './mediaStore.js';

/**
 * {@link MediaStore} on local disk, over the media root of a {@link LocalMediaRoot}: a key
 * `<area>/<a>/<b>` is the file `<dataDir>/media/<area>/<a>/<b>`, built by LocalMediaRoot.path and
 * its containment check. A put writes a hidden temporary file beside the target, fsyncs it and
 * renames it into place (server/storage/atomicFile.ts), so readers see the old object or the whole
 * new one; hidden names are not keys, so list never shows a put in progress.
 */
export class LocalObjectMediaStore implements MediaStore {
  readonly kind = 'local' as const;
  /** Descriptors kept for delivery's next request of the same file (openLocalFileSync). */
  readonly openFiles: OpenFileCache;

  constructor(
    readonly local: LocalMediaRoot,
    openFiles: OpenFileCacheOptions = DEFAULT_OPEN_FILE_CACHE,
  ) {
    this.openFiles = new OpenFileCache(openFiles);
  }

  /** The file of an object key (at least one segment below the area). */
  private file(key: string): string {
    const { area, segments } = splitMediaKey(key);
    if (segments.length === 0) throw new UnsafeMediaKeyError(key);
    return this.local.path(area, ...segments);
  }

  /** The folder of a prefix (an area alone is allowed). */
  private folder(prefix: string): string {
    const { area, segments } = splitMediaKey(prefix);
    return this.local.path(area, ...segments);
  }

  async put(key: string, source: MediaSource): Promise<MediaObjectInfo> {
    if ('file' in source && source.move && (await this.moveInto(key, source.file))) return (await this.stat(key))!;
    const out = atomicOutput(this.file(key));
    try {
      const from = 'file' in source ? fs.createReadStream(source.file) : source.stream;
      await pipeline(from, fs.createWriteStream(out.tmpPath, { flags: 'wx' }));
      await out.commit();
    } catch (err) {
      await out.abort();
      throw err;
    } finally {
      // The old object's descriptor is not used again (the cache's check would see the new file anyway).
      this.openFiles.drop(key);
    }
    if ('file' in source && source.move) await fs.promises.rm(source.file, { force: true });
    return (await this.stat(key))!;
  }

  /**
   * A handed-over file renamed into place: fsynced first, as a put's temporary file is, so a
   * power cut after the rename cannot leave an empty object. False when the file is on another
   * file system (EXDEV): the caller copies instead.
   */
  private async moveInto(key: string, file: string): Promise<boolean> {
    const dest = this.file(key);
    await fsyncFile(file);
    await fs.promises.mkdir(path.dirname(dest), { recursive: true });
    try {
      await fs.promises.rename(file, dest);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EXDEV') return false;
      throw err;
    } finally {
      this.openFiles.drop(key);
    }
    await fsyncDir(path.dirname(dest));
    return true;
  }

  async stat(key: string): Promise<MediaObjectInfo | undefined> {
    const st = await fs.promises.stat(this.file(key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
      throw err;
    });
    return st?.isFile() ? info(key, st) : undefined;
  }

  async openRange(key: string, range?: ByteRange, options: { ifMatch?: string } = {}): Promise<Readable> {
    const file = this.file(key);
    // Open first, then stat the handle: the stream reads the very file that was checked, even if
    // a put renames a new one into place meanwhile.
    const fh = await fs.promises.open(file, 'r').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR' || err.code === 'EISDIR') throw new MediaObjectNotFoundError(key);
      throw err;
    });
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new MediaObjectNotFoundError(key);
      if (options.ifMatch !== undefined && info(key, st).etag !== options.ifMatch) throw new MediaObjectChangedError(key);
      if (range) assertRange(key, range, st.size);
      return fh.createReadStream(range ? { start: range.start, end: range.end } : {});
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  openLocalFileSync(key: string): LocalMediaFile | undefined {
    // A key is in the cache only once this.file accepted it: a hit skips no check.
    return this.openFiles.acquire(key, () => {
      const file = this.file(key);
      let fd: number;
      try {
        fd = fs.openSync(file, 'r');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return undefined;
        throw err;
      }
      try {
        // The open file's own stat: the info belongs to the bytes this fd reads.
        const st = fs.fstatSync(fd);
        if (st.isFile()) return { file, fd, st, info: info(key, st) };
      } catch (err) {
        fs.closeSync(fd);
        throw err;
      }
      fs.closeSync(fd); // a folder under an object's name is no object
      return undefined;
    });
  }

  async delete(key: string): Promise<void> {
    const file = this.file(key);
    this.openFiles.drop(key); // closed on delete: the space is freed now, not at the next sweep
    await fs.promises.rm(file, { force: true });
  }

  async deletePrefix(prefix: string): Promise<number> {
    const objects = await this.list(prefix);
    const { segments } = splitMediaKey(prefix);
    this.openFiles.dropPrefix(prefix);
    if (segments.length === 0) {
      // An area itself stays (LocalMediaRoot made it); its contents go.
      for (const name of await fs.promises.readdir(this.folder(prefix))) {
        await fs.promises.rm(path.join(this.folder(prefix), name), { recursive: true, force: true });
      }
    } else {
      await fs.promises.rm(this.folder(prefix), { recursive: true, force: true });
    }
    return objects.length;
  }

  async list(prefix: string): Promise<MediaObjectInfo[]> {
    const found: MediaObjectInfo[] = [];
    const walk = async (dir: string, keyPrefix: string) => {
      const entries = await fs.promises.readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
        throw err;
      });
      for (const e of entries) {
        const key = `${keyPrefix}/${e.name}`;
        // Hidden names (puts in progress, partial outputs) and anything else that is not a key.
        if (!isMediaKey(key)) continue;
        if (e.isDirectory()) await walk(path.join(dir, e.name), key);
        else if (e.isFile()) {
          const st = await fs.promises.stat(path.join(dir, e.name)).catch(() => undefined);
          if (st?.isFile()) found.push(info(key, st));
        }
      }
    };
    await walk(this.folder(prefix), prefix);
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async removeIncomplete(prefix: string, startingWith = ''): Promise<string[]> {
    // A put's temporary name is `.<final name>.partial-…` (atomicFile.ts).
    return removePartialOutputs(this.folder(prefix), (name) => name.startsWith(`.${startingWith}`));
  }

  async listNames(prefix: string): Promise<string[]> {
    const entries = await fs.promises.readdir(this.folder(prefix), { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
      throw err;
    });
    // Hidden names (puts in progress) are not keys; nor is an empty folder a name (S3 has none).
    const names: string[] = [];
    for (const e of entries) {
      if (!isMediaKey(`${prefix}/${e.name}`)) continue;
      if (e.isFile() || (e.isDirectory() && (await this.holdsObject(path.join(this.folder(prefix), e.name), `${prefix}/${e.name}`)))) names.push(e.name);
    }
    return names.sort();
  }

  /** Whether a folder holds an object at any depth: stops at the first (a video's HLS has thousands). */
  private async holdsObject(dir: string, keyPrefix: string): Promise<boolean> {
    const entries = await fs.promises.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isFile() && isMediaKey(`${keyPrefix}/${e.name}`)) return true;
    for (const e of entries) if (e.isDirectory() && isMediaKey(`${keyPrefix}/${e.name}`) && (await this.holdsObject(path.join(dir, e.name), `${keyPrefix}/${e.name}`))) return true;
    return false;
  }

  async withLocalCopy<T>(key: string, fn: (file: string) => Promise<T>, o: { signal?: AbortSignal } = {}): Promise<T> {
    o.signal?.throwIfAborted();
    const file = this.file(key);
    if (!(await this.stat(key))) throw new MediaObjectNotFoundError(key);
    return fn(file);
  }

  async makeAvailable<T>(keys: readonly string[], fn: (files: string[]) => Promise<T>, o: { signal?: AbortSignal } = {}): Promise<T> {
    o.signal?.throwIfAborted();
    const files: string[] = [];
    for (const key of keys) {
      if (!(await this.stat(key))) throw new MediaObjectNotFoundError(key);
      files.push(this.file(key));
    }
    return fn(files);
  }

  async presignedUrl(key: string): Promise<undefined> {
    this.file(key);
    return undefined;
  }

  async prepareMove(file: string): Promise<void> {
    await fsyncFile(file).catch(() => undefined);
  }

  async freeBytes(): Promise<number> {
    return this.local.freeBytes();
  }
}

function info(key: string, st: fs.Stats): MediaObjectInfo {
  // Weak validator material like express.static's: size and mtime, hashed so it says nothing else.
  const etag = crypto.createHash('sha1').update(`${st.size}:${st.mtimeMs}:${st.ino}`).digest('hex').slice(0, 27);
  return { key, size: st.size, modifiedAt: Math.floor(st.mtimeMs), etag };
}
