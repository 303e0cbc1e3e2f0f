/**
 * The console's saved settings in the embedded mode: `<dataDir>/settings.json`, where embedded
 * users have always had them, so an existing data folder keeps its settings and a backup takes
 * the same file. A file rather than a table of the embedded database: it is read before the
 * server (and its database) opens, to merge the saved settings under the start flags
 * (bootstrap.ts), and people read and edit it by hand when the server is stopped.
 */
import fs from 'node:fs';
import path from 'node:path';
import { InTurn } from '../core/inTurn.js';
import { atomicOutput } from './atomicFile.js';
import type { SharedSettingsDocument, SharedSettingsStore } from './types.js';

/** The file's name in the data folder. */
export const SETTINGS_FILE = 'settings.json';

/** The settings file of a data folder. */
export function settingsFile(dataDir: string): string {
  return path.join(dataDir, SETTINGS_FILE);
}

/** The settings file's object as it is ({} when there is none); throws if it is not a JSON object. */
export function readSettingsFile(dataDir: string): Record<string, unknown> {
  let text: string;
  try {
    text = fs.readFileSync(settingsFile(dataDir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
  const parsed = JSON.parse(text) as unknown;
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`${settingsFile(dataDir)} is not a JSON object.`);
  return parsed as Record<string, unknown>;
}

/** Writes the settings file: a temporary file, fsynced, renamed over the old one (readable by its owner only). */
export async function writeSettingsFile(dataDir: string, settings: Record<string, unknown>): Promise<void> {
  const out = atomicOutput(settingsFile(dataDir));
  try {
    await fs.promises.writeFile(out.tmpPath, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
    await out.commit();
  } catch (err) {
    await out.abort();
    throw err;
  }
}

/**
 * {@link SharedSettingsStore} over the data folder's `settings.json`. The file keeps no version:
 * a file found at open is version 1 (none, 0), and each save made through this store adds one.
 * Saves run one at a time in this process; the data folder's lock (dataDirLock.ts) keeps any other
 * server from writing the file meanwhile.
 */
export class FileSharedSettings implements SharedSettingsStore {
  readonly where: string;
  /** The version of the file found at open (1, or 0 without one); read at first use. */
  private base: number | undefined;
  private saves = 0;
  /** Saves, one after another: the next waits for the one in progress. */
  private readonly turns = new InTurn();

  constructor(private readonly dataDir: string) {
    this.where = settingsFile(dataDir);
  }

  async read(): Promise<SharedSettingsDocument> {
    const settings = readSettingsFile(this.dataDir);
    const updatedAt = this.modifiedAt();
    const version = this.version(updatedAt);
    return { settings, version, updatedAt: version === 0 ? 0 : (updatedAt ?? 0) };
  }

  update(change: (current: Record<string, unknown>) => Record<string, unknown>, _now: number): Promise<SharedSettingsDocument> {
    return this.turns.run(async () => {
      // The version before this save counts from the file as found at open (before it is written).
      this.version(this.modifiedAt());
      await writeSettingsFile(this.dataDir, change(readSettingsFile(this.dataDir)));
      this.saves++;
      return this.read();
    });
  }

  importOnce(settings: Record<string, unknown>, _now: number): Promise<boolean> {
    return this.turns.run(async () => {
      if (this.version(this.modifiedAt()) !== 0) return false;
      await writeSettingsFile(this.dataDir, settings);
      this.saves++;
      return true;
    });
  }

  /**
   * Never calls `onDocument`: nobody but this process saves the file while it runs (the data
   * folder's lock), and this process's saves take effect through the save itself (the console's).
   * Hearing the file at start would also undo a start flag given over a saved setting.
   */
  watch(_onDocument: (doc: SharedSettingsDocument) => void, _log: (line: string) => void): () => Promise<void> {
    return async () => undefined;
  }

  /** The version now: the file's at open (1, or 0 without one: `modifiedAt` at the first call) plus this process's saves. */
  private version(modifiedAt: number | undefined): number {
    this.base ??= modifiedAt === undefined ? 0 : 1;
    return this.base + this.saves;
  }

  /** The file's modification time (Unix ms), undefined without a file. */
  private modifiedAt(): number | undefined {
    try {
      return Math.floor(fs.statSync(this.where).mtimeMs);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

}
