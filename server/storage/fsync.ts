import fs from 'node:fs';

/**
 * fsync a file, so that its bytes are on disk and not only in the page cache. Opened for
 * writing: on Windows fsync is FlushFileBuffers, which a read-only handle may not call (EPERM).
 */
export async function fsyncFile(file: string): Promise<void> {
  const fh = await fs.promises.open(file, 'r+');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** fsync a directory so that a file created or renamed in it survives a power cut. */
export async function fsyncDir(dir: string): Promise<void> {
  let fh: fs.promises.FileHandle | undefined;
  try {
    fh = await fs.promises.open(dir, 'r');
    await fh.sync();
  } catch {
    // Some platforms (Windows) cannot open a directory; rename is still atomic there.
  } finally {
    await fh?.close();
  }
}

/** Writes `data` to a new `file` (owner-only) and fsyncs it before resolving. */
export async function writeFileSynced(file: string, data: Uint8Array): Promise<void> {
  const fh = await fs.promises.open(file, 'w', 0o600);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}
