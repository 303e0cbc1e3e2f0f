/**
 * Outputs written under a temporary name and renamed into place when complete, so that nothing
 * half-written is ever served (issue 4, item 2) and a crash leaves only names we can recognise
 * and sweep ({@link removePartialOutputs}).
 *
 * The temporary name sits in the same directory as the final one, because rename is atomic only
 * within one file system. It keeps the final extension, so tools that look at extensions (and
 * people reading a directory listing) still see what the file is.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { fsyncDir, fsyncFile } from './fsync.js';

/** Marks temporary names: `.<final name>.partial-<random>.<ext>`. */
const PARTIAL_MARK = '.partial-';

/** Options of {@link atomicOutput}. */
export interface AtomicOutputOptions {
  /** The output is a directory (an HLS rendition with its segments) rather than one file. */
  directory: boolean;
  /** fsync the file and its directory on commit, so a power cut after commit cannot lose it. */
  fsync: boolean;
}

const DEFAULT_ATOMIC_OUTPUT_OPTIONS = { directory: false, fsync: true } satisfies AtomicOutputOptions;

/** A pending output: write to `tmpPath`, then `commit()` or `abort()`. */
export interface AtomicOutput {
  /** Where to write (a file, or a directory already created when `directory` is set). */
  readonly tmpPath: string;
  /** The path the output will have once committed. */
  readonly finalPath: string;
  /** Renames the temporary output to its final path, replacing any previous one. */
  commit(): Promise<void>;
  /** Removes the temporary output; safe to call after a failed write, or twice. */
  abort(): Promise<void>;
}

/** Prepares a temporary name beside `finalPath` (creating its directory). */
export function atomicOutput(finalPath: string, input: Partial<AtomicOutputOptions> = {}): AtomicOutput {
  const o = { ...DEFAULT_ATOMIC_OUTPUT_OPTIONS, ...input };
  const dir = path.dirname(finalPath);
  const base = path.basename(finalPath);
  const ext = o.directory ? '' : path.extname(base);
  const tmpPath = path.join(dir, `.${base}${PARTIAL_MARK}${randomBytes(6).toString('hex')}${ext}`);
  fs.mkdirSync(dir, { recursive: true });
  if (o.directory) fs.mkdirSync(tmpPath);
  let state: 'pending' | 'committed' | 'aborted' = 'pending';

  return {
    tmpPath,
    finalPath,
    async commit() {
      if (state !== 'pending') throw new Error(`Output ${finalPath} was already ${state}.`);
      if (o.directory) {
        // rename(2) will not replace a non-empty directory: move the old one aside first.
        await fsp.rm(finalPath, { recursive: true, force: true });
      } else if (o.fsync) {
        await fsyncFile(tmpPath);
      }
      await fsp.rename(tmpPath, finalPath);
      if (o.fsync) await fsyncDir(dir);
      state = 'committed';
    },
    async abort() {
      if (state === 'committed') return;
      state = 'aborted';
      await fsp.rm(tmpPath, { recursive: true, force: true });
    },
  };
}

/** Whether a directory entry is the temporary name of an output (from a run that did not finish). */
export function isPartialOutputName(name: string): boolean {
  return name.startsWith('.') && name.includes(PARTIAL_MARK);
}

/** Deletes the leftovers of interrupted outputs in `dir` (not recursive), those `which` accepts. Returns the names removed. */
export async function removePartialOutputs(dir: string, which: (name: string) => boolean = () => true): Promise<string[]> {
  const partial = (await readdirOrEmpty(dir)).filter((n) => isPartialOutputName(n) && which(n));
  await Promise.all(partial.map((n) => fsp.rm(path.join(dir, n), { recursive: true, force: true })));
  return partial;
}

/** The entries of `dir`; none if it does not exist (nothing was ever written there). */
export async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
