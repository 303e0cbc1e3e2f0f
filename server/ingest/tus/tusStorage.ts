import fs from 'node:fs';
import path from 'node:path';
import type { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FileStore } from '@tus/file-store';
import { ERRORS, type DataStore, type Upload } from '@tus/server';
import type { LocalMediaRoot } from '../../storage/media/localMediaRoot.js';

/** tus upload ids as @tus/server names them (16 random bytes, hex). */
export const UPLOAD_ID_RE = /^[0-9a-f]{32}$/;

/** Whether an upload is complete: its size known and every byte of it received. */
export function isComplete(upload: Upload): boolean {
  return upload.size !== undefined && upload.offset === upload.size;
}

/**
 * When an upload expires (Unix ms): `expiryMs` after its creation, as @tus/server's stores count
 * it; undefined when its creation date is unknown (such an upload never expires).
 */
export function expiresAt(upload: Upload, expiryMs: number): number | undefined {
  const created = Date.parse(upload.creation_date ?? '');
  return Number.isFinite(created) ? created + expiryMs : undefined;
}

/** The embedded mode's folder of uploads under way, under the media store's root. */
export const TUS_FOLDER = ['incoming', 'tus'] as const;

/**
 * The ids of the uploads in a folder of @tus/file-store's (those with a metadata file), checked
 * against @tus/server's id format: a path built from one stays inside the folder. Rejects if the
 * folder cannot be read.
 */
export async function listUploadIdsIn(directory: string): Promise<string[]> {
  const names = await fs.promises.readdir(directory);
  return names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5)).filter((id) => UPLOAD_ID_RE.test(id));
}

/** What a store's writes report to TusUploads. */
export interface StoreHooks {
  /** The meter the bytes of a write pass through (reservation, free-space checks). */
  meter(id: string, offset: number): Transform;
  /** A write starts (+1) or ends (-1). */
  receiving(id: string, delta: 1 | -1): void;
  /** Wraps the store's creation of an upload (after onUploadCreate allowed it); absent: none. */
  aroundCreate?(upload: Upload, create: () => Promise<Upload>): Promise<Upload>;
}

/**
 * Where tus uploads under way are kept, and what TusUploads needs of that place beyond
 * @tus/server's DataStore: the embedded mode's folder ({@link FileTusStorage}), or the bucket in
 * cluster mode (tusS3Storage.ts), where an upload begun on one node resumes on another.
 */
export interface TusStorage {
  readonly kind: 'file' | 's3';
  /** The DataStore @tus/server writes through. */
  readonly store: DataStore;
  /** The ids of the uploads held, checked against @tus/server's id format. Rejects if they cannot be listed. */
  listUploadIds(): Promise<string[]>;
  /** The upload's stored description (metadata and size, not its offset); undefined when there is none. */
  info(id: string): Promise<Upload | undefined>;
  /** When the upload's bytes were last written (Unix ms); undefined when there are none. */
  lastWriteMs(id: string): Promise<number | undefined>;
  /**
   * Runs `use` with the complete upload's bytes as a file on this node's disk, on the media
   * root's file system (intake claims it by a hard link); `use` may move it away.
   */
  withLocalFile<T>(id: string, use: (file: string) => Promise<T>): Promise<T>;
  /** Drops the upload's bytes (if still there) and its description, so that its URL answers 404. */
  forget(id: string): Promise<void>;
  /**
   * Removes what interrupted creations and finishes left (bytes without a description and the
   * reverse), then the unfinished uploads past their expiry; resolves with how many went.
   */
  removeStale(): Promise<number>;
}

/**
 * Bytes the write stream of a PATCH buffers. FileStore's own stream keeps Node's default (16 KiB),
 * below the 64 KiB a socket read delivers: every chunk then waited for the previous one to reach
 * the file, one pwrite each. With room for several, the chunks that arrive during a write go to
 * the file together in one writev.
 */
const WRITE_HIGH_WATER_MARK = 1024 * 1024;

/**
 * @tus/file-store's FileStore with a write stream that buffers {@link WRITE_HIGH_WATER_MARK}
 * bytes, whose path goes through the media store's containment check, and whose bytes pass
 * through the upload's meter (a disk that fills up meanwhile stops the write with 507, the bytes
 * before it kept). Otherwise as FileStore.write: the stream's bytes at `offset`, resolving with
 * the new offset.
 */
class BufferedFileStore extends FileStore {
  constructor(
    options: ConstructorParameters<typeof FileStore>[0],
    private readonly fileOf: (id: string) => string,
    private readonly hooks: StoreHooks,
  ) {
    super(options);
  }

  override async write(readable: Readable, id: string, offset: number): Promise<number> {
    const out = fs.createWriteStream(this.fileOf(id), { flags: 'r+', start: offset, highWaterMark: WRITE_HIGH_WATER_MARK });
    this.hooks.receiving(id, 1);
    try {
      await pipeline(readable, this.hooks.meter(id, offset), out);
    } catch (err) {
      // A refusal from the meter (the disk filled up): the bytes before it are on disk, and the
      // upload's offset (its file's size) keeps them.
      if (typeof (err as { status_code?: unknown }).status_code === 'number') throw err;
      throw ERRORS.FILE_WRITE_ERROR;
    } finally {
      this.hooks.receiving(id, -1);
    }
    return offset + out.bytesWritten;
  }
}

/**
 * The embedded mode's tus storage: @tus/file-store under the media store's `incoming/tus`, an
 * upload's bytes in a file named by its id and its description in `<id>.json` beside it.
 */
export class FileTusStorage implements TusStorage {
  readonly kind = 'file' as const;
  readonly store: FileStore;
  readonly directory: string;

  constructor(
    private readonly media: LocalMediaRoot,
    private readonly expiryMs: number,
    hooks: StoreHooks,
  ) {
    this.directory = media.path(...TUS_FOLDER);
    fs.mkdirSync(this.directory, { recursive: true });
    this.store = new BufferedFileStore({ directory: this.directory, expirationPeriodInMilliseconds: expiryMs }, (id) => this.fileOf(id), hooks);
  }

  /** The upload's data file, through the media store's containment check. */
  fileOf(id: string): string {
    return this.media.path(...TUS_FOLDER, id);
  }

  listUploadIds(): Promise<string[]> {
    return listUploadIdsIn(this.directory);
  }

  async info(id: string): Promise<Upload | undefined> {
    return this.store.configstore.get(id);
  }

  async lastWriteMs(id: string): Promise<number | undefined> {
    const stat = await fs.promises.stat(this.fileOf(id)).catch(() => undefined);
    return stat?.mtimeMs;
  }

  withLocalFile<T>(id: string, use: (file: string) => Promise<T>): Promise<T> {
    return use(this.fileOf(id));
  }

  async forget(id: string): Promise<void> {
    await fs.promises.rm(this.fileOf(id), { force: true });
    await this.store.configstore.delete(id).catch(() => undefined);
  }

  async removeStale(): Promise<number> {
    return (await this.removeOrphans()) + (await this.store.deleteExpired());
  }

  /** A metadata file without its data goes at once; data without metadata once it is older than the expiry. */
  private async removeOrphans(): Promise<number> {
    const names = new Set(await fs.promises.readdir(this.directory));
    const cutoff = Date.now() - this.expiryMs;
    let n = 0;
    for (const name of names) {
      const id = name.endsWith('.json') ? name.slice(0, -5) : name;
      if (!UPLOAD_ID_RE.test(id)) continue;
      const file = path.join(this.directory, name);
      if (name.endsWith('.json') && !names.has(id)) {
        await fs.promises.rm(file, { force: true });
        n++;
      } else if (!name.endsWith('.json') && !names.has(`${id}.json`)) {
        const stat = await fs.promises.stat(file).catch(() => undefined);
        if (stat && stat.mtimeMs < cutoff) {
          await fs.promises.rm(file, { force: true });
          n++;
        }
      }
    }
    return n;
  }
}
