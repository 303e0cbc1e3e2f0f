/**
 * Where the console's saved settings live, and how a running node follows them (issue 11).
 *
 * Embedded (one process): `<dataDir>/settings.json`, exactly as before. Cluster mode
 * (`databaseUrl`): one document in the shared database (Stores.sharedSettings, PostgreSQL's
 * `console_settings`), because each node has a data folder of its own: every node starts from it
 * (bootstrap.ts, through {@link readClusterSettings}) and follows every save made through any node
 * ({@link followSharedSettings}): the settings that apply at once on the node that saved them
 * (LIVE_SETTINGS, the transcodes and downloads at once) apply at once on all; the others wait for
 * a restart everywhere, as the console says.
 */
import path from 'node:path';
import type { RetryConfig } from '../core/retry.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import { DOWNLOAD_JOB } from '../ingest/downloadJob.js';
import { TRANSCODE_JOB } from '../processing/transcodeJob.js';
import type { SharedSettingsStore } from '../storage/types.js';
import { LIVE_SETTINGS, loadSavedSettings, pickSettings, saveSettings, settingsFile, type ConsoleSettings, type SettingKey } from './consoleSettings.js';

/** The saved settings, wherever this node keeps them. */
export interface SavedSettings {
  /** Where they are kept, as the console shows it: the file's path, or the database and table. */
  readonly where: string;
  load(): Promise<Partial<ConsoleSettings>>;
  /**
   * Saves what `change` makes of the saved settings and returns it; a throw from `change` saves
   * nothing. The caller runs one change at a time on this node; in cluster mode the database
   * also orders changes made through different nodes.
   */
  change(change: (before: Partial<ConsoleSettings>) => Partial<ConsoleSettings>): Promise<Partial<ConsoleSettings>>;
}

/** The embedded mode's `<dataDir>/settings.json` (written to a temporary file, fsynced, renamed). */
export function fileSettings(dataDir: string): SavedSettings {
  return {
    where: settingsFile(dataDir),
    load: async () => loadSavedSettings(dataDir),
    async change(change) {
      const next = change(loadSavedSettings(dataDir));
      await saveSettings(dataDir, next);
      return next;
    },
  };
}

/** Cluster mode: the document every node shares. */
export function sharedSettings(store: SharedSettingsStore, now: () => number = Date.now): SavedSettings {
  return {
    where: store.where,
    load: async () => pickSettings((await store.read()).settings),
    async change(change) {
      const doc = await store.update((current) => change(pickSettings(current)) as Record<string, unknown>, now());
      return pickSettings(doc.settings);
    },
  };
}

/** The job type each live setting sets the concurrency of. */
const LIVE_JOB_TYPES: Partial<Record<SettingKey, string>> = {
  transcodeConcurrency: TRANSCODE_JOB,
  downloadConcurrency: DOWNLOAD_JOB,
};

/**
 * Applies the live settings among `keys` that `settings` holds to this node's running queue, the
 * one way a save takes effect without a restart (the console's save and a save heard from another
 * node alike). Returns the keys applied.
 */
export function applyLiveSettings(jobs: JobQueue, settings: Partial<ConsoleSettings>, keys: readonly SettingKey[]): SettingKey[] {
  const applied: SettingKey[] = [];
  for (const key of LIVE_SETTINGS) {
    const type = LIVE_JOB_TYPES[key];
    const value = settings[key];
    if (!type || typeof value !== 'number' || !keys.includes(key)) continue;
    jobs.setConcurrency(type, value);
    applied.push(key);
  }
  return applied;
}

/**
 * Cluster mode: keeps this node's live settings at what is saved, whichever node saved it. Each
 * time the store hands over the document (once listening, after each save, after a reconnection)
 * the live settings whose saved value differs from what this node runs are applied through
 * {@link applyLiveSettings}; the node's own saves are already applied, so hearing them changes
 * nothing. Returns the function that stops following.
 */
export function followSharedSettings(store: SharedSettingsStore, jobs: JobQueue, log: (line: string) => void): () => Promise<void> {
  return store.watch((doc) => {
    const saved = pickSettings(doc.settings);
    const differs = LIVE_SETTINGS.filter((k) => {
      const type = LIVE_JOB_TYPES[k];
      return type !== undefined && saved[k] !== undefined && saved[k] !== jobs.concurrency(type);
    });
    if (differs.length === 0) return;
    try {
      const applied = applyLiveSettings(jobs, saved, differs);
      log(`Shared settings (version ${doc.version}) applied here: ${applied.map((k) => `${k} ${String(saved[k])}`).join(', ')}.`);
    } catch (err) {
      log(`Shared settings (version ${doc.version}) could not be applied here: ${(err as Error).message}`);
    }
  }, log);
}

/** Options of {@link readClusterSettings}. */
export interface ClusterSettingsStart {
  databaseUrl: string;
  connectRetry: RetryConfig;
  /** This node's data folder: a `settings.json` there is imported if the cluster has none yet. */
  dataDir: string;
  log: (line: string) => void;
  now?: () => number;
}

/**
 * The settings a cluster node starts from (bootstrap.ts): the shared document. While nothing was
 * ever saved to it, the first node to start with a `settings.json` in its data folder imports that
 * file as the first version (once: later files are not read; the file itself is left as it is,
 * should the node go back to the embedded mode). Opens the database for this alone (waiting for
 * it and migrating it as createServer would) and closes it again.
 */
export async function readClusterSettings(start: ClusterSettingsStart): Promise<Partial<ConsoleSettings>> {
  const { PostgresDatabase } = await import('../storage/postgres/postgresDatabase.js');
  const { PostgresSharedSettings } = await import('../storage/postgres/postgresSharedSettings.js');
  const db = await PostgresDatabase.open({ url: start.databaseUrl, connectRetry: start.connectRetry, maxConnections: 1, log: start.log });
  try {
    const store = new PostgresSharedSettings(db, start.databaseUrl);
    const file = settingsFile(path.resolve(start.dataDir));
    const local = loadSavedSettings(path.resolve(start.dataDir));
    let doc = await store.read();
    if (doc.version === 0 && Object.keys(local).length > 0) {
      if (await store.importOnce(local, (start.now ?? Date.now)())) start.log(`Imported the console's settings from ${file} into ${store.where}: every node now follows them there; the file is no longer read.`);
      doc = await store.read();
    } else if (Object.keys(local).length > 0) {
      start.log(`${file} is not read in cluster mode: the console's settings are kept in ${store.where}.`);
    }
    return pickSettings(doc.settings);
  } finally {
    await db.close();
  }
}
