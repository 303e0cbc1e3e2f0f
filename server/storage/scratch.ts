import fs from 'node:fs';
import path from 'node:path';
import { isPathInsideDirectory } from './media/localMediaRoot.js';

/** What a node works on locally before its results go to the media store. */
export type ScratchKind =
  /** One folder per transcode attempt (`<videoId>.<token>`): renditions, covers and HLS, before they are stored. */
  | 'transcode'
  /** Cover sizes being made (spec 2.3 `?t=`). */
  | 'covers'
  /** A storyboard's sprites being made (processing/storyboardJob.ts), one folder per attempt. */
  | 'storyboard'
  /** Local copies of objects in S3 (MediaStore.withLocalCopy), for ffmpeg. */
  | 's3'
  /** A cluster database's tables, written out for a backup (postgres/postgresExport.ts) until they are sent. */
  | 'backup';

const SAFE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/;

/**
 * This node's own working space, `<dataDir>/scratch/<kind>/<name>`: ffmpeg needs paths, and media
 * may live in object storage (issue 11: "workers transcode in local scratch and upload the
 * results"). Nothing here is ever served or listed as media; a folder lives for one piece of work
 * and a crash's leftovers go at the next start ({@link clearAll}: nothing runs yet then, and the
 * data-directory lock keeps other processes out).
 * Being under the data directory, it sits on the media root's file system in the embedded mode,
 * so handing a finished file to the local store is a rename.
 */
export class Scratch {
  readonly root: string;

  constructor(dataDir: string) {
    this.root = path.join(path.resolve(dataDir), 'scratch');
  }

  /** The folder for `name`, after the containment check; not created. */
  path(kind: ScratchKind, name: string): string {
    if (!SAFE_NAME.test(name)) throw new Error(`Unsafe scratch name: ${JSON.stringify(name)}`);
    const base = path.join(this.root, kind);
    const full = path.join(base, name);
    if (!isPathInsideDirectory(base, full)) throw new Error(`Scratch path escapes ${kind}: ${JSON.stringify(name)}`);
    return full;
  }

  /** An empty folder for `name`: whatever an earlier, cut-off run left there is removed first. */
  async fresh(kind: ScratchKind, name: string): Promise<string> {
    const dir = this.path(kind, name);
    await fs.promises.rm(dir, { recursive: true, force: true });
    await fs.promises.mkdir(dir, { recursive: true });
    return dir;
  }

  /** Removes the folder for `name` and everything in it. */
  async remove(kind: ScratchKind, name: string): Promise<void> {
    await fs.promises.rm(this.path(kind, name), { recursive: true, force: true });
  }

  /** The folder of `kind` itself (the S3 store makes its copies in it). */
  kindPath(kind: ScratchKind): string {
    return path.join(this.root, kind);
  }

  /** Removes every folder of `kind` whose name starts with `prefix` (every attempt of a video). */
  async removeStartingWith(kind: ScratchKind, prefix: string): Promise<void> {
    const names = await fs.promises.readdir(this.kindPath(kind)).catch(() => [] as string[]);
    for (const name of names) if (name.startsWith(prefix)) await this.remove(kind, name);
  }

  /**
   * Removes everything, at start before any work: what is there was cut off by a crash (a
   * transcode's outputs, a multi-GB local copy of a source), and nothing else would ever remove it.
   */
  clearAll(): void {
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}
