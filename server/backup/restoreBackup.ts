/**
 * `vop restore` into a data folder (the embedded mode): only into a folder that is new, empty, or
 * holds an unfinished restore; only from a backup that verifies whole, checked before anything is
 * written. The folder is marked (storage/restoreMarker.ts) before the first file and unmarked
 * after the last is on disk, so a restore cut off leaves a folder no server starts on, and the
 * next restore into it starts over.
 *
 * The database is not written as the backup holds it: its rows are read into a new database made
 * by vop's migrations (storage/sqljs/imageRebuild.ts), so no trigger, view or other object of the
 * file comes along; a backup whose database holds any is refused, naming them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { DataDirLock } from '../storage/dataDirLock.js';
import { fsyncDir, fsyncFile, writeFileSynced } from '../storage/fsync.js';
import { splitMediaKey } from '../storage/media/mediaStore.js';
import { LocalMediaRoot } from '../storage/media/localMediaRoot.js';
import { markRestoreFinished, markRestoreStarted, unfinishedRestore } from '../storage/restoreMarker.js';
import { rebuildSqliteImage } from '../storage/sqljs/imageRebuild.js';
import { SQLITE_BACKUP_PART } from '../storage/sqljs/openSqlJsStores.js';
import { verifyBackup } from './verifyBackup.js';
import { DATA_DIR_FILES, MEDIA_LIST_PART, MEDIA_PREFIX, mediaPartsOutsideAreas, SETTINGS_PREFIX, type BackupManifest } from './writeBackup.js';

/** A restore refused before it changed anything: the folder, or the backup, is not fit. */
export class RestoreRefusedError extends Error {}

export interface RestoreResult {
  manifest: BackupManifest;
  /** Files written into the folder. */
  files: number;
  bytes: number;
  /** The folder held an unfinished restore, which was cleared first. */
  clearedUnfinished: boolean;
}

/** Options of a restore. */
export interface RestoreOptions {
  /** Told of each step. */
  progress?: (line: string) => void;
  /** The seal key: the backup must carry a keyed seal made with it (backup/backupSeal.ts). */
  sealKey?: Buffer;
}

/** Restores the embedded backup `file` into the data folder `dataDir`. */
export async function restoreIntoDataDir(file: string, dataDir: string, options: RestoreOptions = {}): Promise<RestoreResult> {
  const { progress, sealKey } = options;
  const dir = path.resolve(dataDir);
  // 1. The folder, read only.
  const present = await fs.promises.readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as string[];
    if (err.code === 'ENOTDIR') throw new RestoreRefusedError(`${dir} is a file, not a folder: nothing was changed.`);
    throw err;
  });
  const unfinished = present.length > 0 ? unfinishedRestore(dir) : undefined;
  if (present.length > 0 && !unfinished) {
    const shown = present.slice(0, 5).join(', ') + (present.length > 5 ? `, and ${present.length - 5} more` : '');
    throw new RestoreRefusedError(`${dir} holds files (${shown}). vop restores only into a new or empty folder; nothing was changed there.`);
  }
  // 2. The whole backup, before anything is written.
  progress?.(`Checking ${file} ...`);
  const checked = await verifyBackup(file, { sealKey });
  if (checked.problems.length > 0) {
    throw new RestoreRefusedError(`${file} is not a sound backup, so nothing was restored:\n  ${checked.problems.join('\n  ')}`);
  }
  const manifest = checked.manifest as BackupManifest;
  if (manifest.database.engine !== 'sqlite') {
    throw new RestoreRefusedError(`${file} is a backup of a cluster (its metadata is PostgreSQL's): restore it with --database-url into an empty database; nothing was changed.`);
  }
  const keyOf = new Map(manifest.parts.filter((p) => p.key !== undefined).map((p) => [p.name, p.key!]));
  const outside = mediaPartsOutsideAreas(manifest.parts);
  if (outside.length > 0) {
    throw new RestoreRefusedError(`${file} holds media outside the areas a backup holds (${outside.slice(0, 5).map((n) => JSON.stringify(n)).join(', ')}), so nothing was restored.`);
  }
  // Every media part must land inside the media folder: checked before anything is written.
  for (const part of manifest.parts.filter((p) => p.name.startsWith(MEDIA_PREFIX))) {
    try {
      splitMediaKey(keyOf.get(part.name) ?? part.name.slice(MEDIA_PREFIX.length));
    } catch {
      throw new RestoreRefusedError(`${file} holds a media part that is not a media file of vop's (${JSON.stringify(part.name)}), so nothing was restored.`);
    }
  }

  // 3. Write, under the folder's lock and its restore mark.
  await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
  const lock = DataDirLock.acquire(dir);
  try {
    if (unfinished) {
      progress?.(`${dir} holds an unfinished restore (of ${unfinished.from}); clearing it.`);
      for (const name of await fs.promises.readdir(dir)) {
        if (name !== 'vop.lock') await fs.promises.rm(path.join(dir, name), { recursive: true, force: true });
      }
    }
    markRestoreStarted(dir, { from: path.resolve(file), startedAt: new Date().toISOString() });
    const media = new LocalMediaRoot(dir);
    let files = 0;
    let bytes = 0;
    const written = (size: number) => {
      files++;
      bytes += size;
    };
    progress?.(`Restoring into ${dir} ...`);
    // The database's integrity was checked in the first pass; its SHA-256 (checked again here)
    // says these are the same bytes, and the folder stays marked unfinished if they are not. Its
    // rows go into a new database (the rebuild checks its schema again, and keeps nothing else).
    const again = await verifyBackup(file, {
      skipDatabaseCheck: true,
      sealKey,
      onDatabasePart: async (name, image) => {
        if (name !== SQLITE_BACKUP_PART) return;
        const rebuilt = await rebuildSqliteImage(image);
        await writeFileSynced(path.join(dir, 'vop.db'), rebuilt.image);
        written(rebuilt.image.length);
      },
      onPart: async (part, stream) => {
        let target: string | undefined;
        if (part.name.startsWith(SETTINGS_PREFIX)) {
          const name = part.name.slice(SETTINGS_PREFIX.length);
          if ((DATA_DIR_FILES as readonly string[]).includes(name)) target = path.join(dir, name);
        } else if (part.name.startsWith(MEDIA_PREFIX)) {
          const key = keyOf.get(part.name) ?? part.name.slice(MEDIA_PREFIX.length);
          const { area, segments } = splitMediaKey(key); // throws on a key that is not one of ours
          target = media.path(area, ...segments);
        }
        if (!target) {
          for await (const _ of stream); // the media list, or a part this vop does not restore
          return;
        }
        await fs.promises.mkdir(path.dirname(target), { recursive: true });
        written(await writeStreamSynced(target, stream));
      },
    });
    if (again.problems.length > 0) {
      throw new Error(`${file} changed while it was restored (${again.problems[0]}); ${dir} is marked unfinished: restore again from a sound copy.`);
    }
    await syncTree(dir);
    markRestoreFinished(dir);
    return { manifest, files, bytes, clearedUnfinished: unfinished !== undefined };
  } finally {
    lock.release();
  }
}

async function writeStreamSynced(file: string, stream: Readable): Promise<number> {
  let n = 0;
  await pipeline(stream, async function* (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) {
      n += chunk.length;
      yield chunk;
    }
  }, fs.createWriteStream(file, { mode: 0o600 }));
  await fsyncFile(file);
  return n;
}

/** fsyncs every folder under `dir` (the files were synced as they were written). */
async function syncTree(dir: string): Promise<void> {
  for (const e of await fs.promises.readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) await syncTree(path.join(dir, e.name));
  }
  await fsyncDir(dir);
}
