import fs from 'node:fs';
import path from 'node:path';

/**
 * The file `vop restore` writes into a data folder before anything else and removes only once the
 * whole backup is in place and on disk. A folder that still has it holds half a restore: no server
 * starts on it (DurableDatabase.open asks), and a second restore into it clears it and starts over.
 */
export const RESTORE_MARKER = 'vop.restoring';

export interface RestoreMarker {
  /** The backup file being restored. */
  from: string;
  startedAt: string;
}

/** The unfinished restore a folder holds, if any. */
export function unfinishedRestore(dir: string): RestoreMarker | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, RESTORE_MARKER), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return JSON.parse(text) as RestoreMarker;
  } catch {
    return { from: '(unreadable)', startedAt: '(unknown)' }; // cut off while it was written: still unfinished
  }
}

/** Refuses a folder that holds an unfinished restore, saying what to do. */
export function assertNoUnfinishedRestore(dir: string): void {
  const marker = unfinishedRestore(dir);
  if (!marker) return;
  throw new Error(
    `The data folder ${path.resolve(dir)} holds a restore that did not finish (of ${marker.from}, started ${marker.startedAt}): ` +
      `vop does not start on half a backup. Run the restore again (npm run vop -- restore --in <file> --data-dir ${dir}); it starts over.`,
  );
}

/** Marks `dir` as being restored, on disk before anything of the backup is written. */
export function markRestoreStarted(dir: string, marker: RestoreMarker): void {
  const file = path.join(dir, RESTORE_MARKER);
  const fd = fs.openSync(file, 'w', 0o600);
  try {
    fs.writeSync(fd, JSON.stringify(marker));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  syncDir(dir);
}

/** Removes the mark once every file of the restore is on disk. */
export function markRestoreFinished(dir: string): void {
  fs.rmSync(path.join(dir, RESTORE_MARKER), { force: true });
  syncDir(dir);
}

function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // Some platforms cannot open a directory.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
