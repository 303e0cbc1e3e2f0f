import fs from 'node:fs';
import path from 'node:path';
import { isPathInsideDirectory } from './mediaStore.js';

/** What a node works on locally before its results go to the media store. */
export type ScratchKind =
  /** One folder per video under transcode: renditions, the cover and HLS, before they are stored. */
  | 'transcode'
  /** Cover sizes being made (spec 2.3 `?t=`). */
  | 'covers';

const SAFE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/;

/**
 * This node's own working space, `<dataDir>/scratch/<kind>/<name>`: ffmpeg needs paths, and media
 * may live in object storage (issue 11: "workers transcode in local scratch and upload the
 * results"). Nothing here is ever served or listed as media; a folder lives for one piece of work
 * and a crash's leftovers go when that work runs again (or at the next start, {@link clear}).
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

  /** Removes all of `kind` (at start, before any work: what is there was cut off). */
  async clear(kind: ScratchKind): Promise<void> {
    await fs.promises.rm(path.join(this.root, kind), { recursive: true, force: true });
  }
}
