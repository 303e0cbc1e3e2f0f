/**
 * What goes into a backup, in order: the metadata at one instant (the storage's own export), the
 * data folder's settings files, the list of media objects (key, size, ETag), and, when asked, the
 * media objects themselves; then the manifest and the seal (backupArchive.ts).
 *
 * The database is copied first: media are written before the metadata that names them, so every
 * object a copied record names was already there. An object deleted between the copy and its turn
 * (the video was deleted meanwhile) is counted in `mediaMissing` rather than failing the backup.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { MediaObjectChangedError, MediaObjectNotFoundError, type MediaObjectInfo, type MediaStore } from '../storage/media/mediaStore.js';
import type { DatabaseExport, Stores } from '../storage/types.js';
import { BackupWriter, entryName, type ManifestBase } from './backupArchive.js';
import type { BackupCounts, MediaChoice } from './backupViews.js';

/** Every {@link MediaChoice}, which a caller's choice is checked against. */
export const MEDIA_CHOICES: readonly MediaChoice[] = ['include', 'list', 'none'];

/** The media areas a backup holds: everything but uploads still under way (`incoming`). */
export const BACKED_UP_AREAS = ['sources', 'play', 'hls', 'covers', 'text'] as const;

/**
 * The media parts of a manifest that are not in an area a backup holds (`incoming`, written by
 * hand into a crafted archive): a restore refuses them, naming them, before it writes anything.
 * Keys that are no media key at all are the caller's to refuse (splitMediaKey).
 */
export function mediaPartsOutsideAreas(parts: ReadonlyArray<{ name: string; key?: string }>): string[] {
  return parts
    .filter((p) => p.name.startsWith(MEDIA_PREFIX))
    .filter((p) => !(BACKED_UP_AREAS as readonly string[]).includes((p.key ?? p.name.slice(MEDIA_PREFIX.length)).split('/')[0] ?? ''))
    .map((p) => p.name);
}

/** Files of the data folder a backup keeps (when present), under `settings/`. */
export const DATA_DIR_FILES = ['settings.json', 'admin-token', 'upload-credential.key'] as const;
export const SETTINGS_PREFIX = 'settings/';
export const MEDIA_PREFIX = 'media/';
export const MEDIA_LIST_PART = 'media-list.jsonl';

/** The manifest's own fields (the parts' records are added by the writer). */
export interface BackupManifestFields {
  vopVersion: string;
  createdAt: string;
  /** 'embedded' (sql.js and a data folder) or 'cluster' (PostgreSQL). */
  mode: 'embedded' | 'cluster';
  database: { engine: DatabaseExport['engine']; schemaVersion: number };
  media: MediaChoice;
  /** Where the media were: the data folder's disk, or object storage. */
  mediaStore: 'local' | 's3';
  counts: BackupCounts;
}
export type BackupManifest = BackupManifestFields & ManifestBase;

export interface BackupInputs {
  stores: Pick<Stores, 'exportDatabase'>;
  objects: MediaStore;
  /** The data folder whose settings files are kept. */
  dataDir: string;
  mode: 'embedded' | 'cluster';
  vopVersion: string;
}

export interface BackupRun {
  media: MediaChoice;
  /** Stops the backup (the archive is left without its seal). */
  signal?: AbortSignal;
  /**
   * The part of the thread the backup's hashing may take (0.1: a tenth), for a server that serves
   * meanwhile; undefined: as fast as it goes (the CLI on a folder no server holds).
   */
  threadShare?: number;
  /** Seal with a keyed seal under this key (backupSeal.ts), not a plain one. */
  sealKey?: Buffer;
  /** Told of progress: bytes written so far of the parts. */
  progress?: (p: { parts: number; bytes: number }) => void;
}

/** Writes one backup to `out` and resolves with its size and manifest; `out` is ended either way. */
export async function writeBackup(out: Writable, inputs: BackupInputs, run: BackupRun): Promise<{ bytes: number; manifest: BackupManifest }> {
  const writer = new BackupWriter(out, { threadShare: run.threadShare, sealKey: run.sealKey });
  const onAbort = () => writer.abort(new Error('The backup was stopped.'));
  run.signal?.addEventListener('abort', onAbort, { once: true });
  const createdAt = new Date().toISOString();
  let db: DatabaseExport | undefined;
  try {
    if (run.signal?.aborted) throw new Error('The backup was stopped.');
    db = await inputs.stores.exportDatabase();
    const { engine, schemaVersion, counts } = db;
    let bytes = 0;
    const added = (size: number) => {
      bytes += size;
      run.progress?.({ parts: writer.records().length, bytes });
    };
    for (const part of db.parts) {
      const r = 'data' in part ? await writer.add(part) : await writer.add({ name: part.name, size: part.size, stream: part.open() });
      added(r.size);
    }
    const release = db.release();
    db = undefined;
    await release;

    for (const name of DATA_DIR_FILES) {
      const data = await fs.promises.readFile(path.join(inputs.dataDir, name)).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined;
        throw err;
      });
      if (data) added((await writer.add({ name: `${SETTINGS_PREFIX}${name}`, data })).size);
    }

    let objects: MediaObjectInfo[] = [];
    if (run.media !== 'none') {
      for (const area of BACKED_UP_AREAS) objects.push(...(await inputs.objects.list(area)));
      objects.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      const list = objects.map((o) => JSON.stringify({ key: o.key, size: o.size, etag: o.etag })).join('\n');
      added((await writer.add({ name: MEDIA_LIST_PART, data: Buffer.from(list ? `${list}\n` : '') })).size);
    }
    let mediaBytes = 0;
    let missing = 0;
    if (run.media === 'include') {
      for (const o of objects) {
        const stream = await inputs.objects.openRange(o.key, undefined, { ifMatch: o.etag }).catch((err: unknown) => {
          // Gone or replaced since the list: a video deleted (or a cover remade) during the backup.
          if (err instanceof MediaObjectNotFoundError || err instanceof MediaObjectChangedError) return undefined;
          throw err;
        });
        if (!stream) {
          missing++;
          continue;
        }
        const r = await writer.add({ name: entryName(MEDIA_PREFIX, o.key), key: o.key, size: o.size, stream });
        mediaBytes += r.size;
        added(r.size);
      }
    } else {
      mediaBytes = objects.reduce((n, o) => n + o.size, 0);
    }
    const fields: BackupManifestFields = {
      vopVersion: inputs.vopVersion,
      createdAt,
      mode: inputs.mode,
      database: { engine, schemaVersion },
      media: run.media,
      mediaStore: inputs.objects.kind === 's3' ? 's3' : 'local',
      counts: { ...counts, mediaObjects: objects.length - missing, mediaBytes, mediaMissing: missing },
    };
    return await writer.finish(fields);
  } catch (err) {
    writer.abort(err as Error);
    throw err;
  } finally {
    run.signal?.removeEventListener('abort', onAbort);
    await db?.release().catch(() => undefined);
  }
}
