/**
 * Where the console's saved settings live, and how a running node follows them (issue 11).
 *
 * Both through Stores.sharedSettings. Embedded (one process): `<dataDir>/settings.json`
 * (storage/fileSharedSettings.ts), exactly as before; nothing else writes it, so there is nothing
 * to follow. Cluster mode
 * (`databaseUrl`): one document in the shared database (Stores.sharedSettings, PostgreSQL's
 * `console_settings`), because each node has a data folder of its own: every node starts from it
 * (bootstrap.ts, through {@link readClusterSettings}) and follows every save made through any node
 * ({@link followSharedSettings}): the settings that apply at once on the node that saved them
 * (LIVE_SETTINGS: limits, the pull policy, the jobs at once) apply at once on all; the others wait for
 * a restart everywhere, as the console says.
 */
import path from 'node:path';
import type { RetryConfig } from '../core/retry.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { SharedSettingsStore } from '../storage/types.js';
import type { ServerOptions } from '../config.js';
import { LIVE_SETTINGS, loadSavedSettings, pickSettings, runningSettings, settingsFile, type ConsoleSettings, type SettingKey } from './consoleSettings.js';

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

/**
 * The saved settings in Stores.sharedSettings: the document every node shares in cluster mode,
 * the data folder's `settings.json` in the embedded mode (storage/fileSharedSettings.ts).
 */
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
  transcodeConcurrency: 'transcode',
  downloadConcurrency: 'download',
};

/**
 * Where each live setting that is an option lives in the running options: the services read
 * these objects at each use (the pull policy, the upload limits, the registration limits, the
 * expiry sweep), so writing them applies the setting to the next request.
 */
const LIVE_OPTIONS: Partial<Record<SettingKey, (o: ServerOptions, v: never) => void>> = {
  maxUploadBytesFlash: (o, v: number) => (o.ingest.maxUploadBytes.flash = v),
  maxUploadBytesSilverlight: (o, v: number) => (o.ingest.maxUploadBytes.silverlight = v),
  multipartMaxBytes: (o, v: number) => (o.ingest.multipartMaxBytes = v),
  pullMaxBytes: (o, v: number) => (o.ingest.pull.maxBytes = v),
  pullAllow: (o, v: string[]) => (o.ingest.pull.allow = [...v]),
  pullDeny: (o, v: string[]) => (o.ingest.pull.deny = [...v]),
  registrationsPerMinute: (o, v: number) => (o.videos.registrationsPerMinute = v),
  maxVideosPerApp: (o, v: number) => (o.videos.maxVideosPerApp = v),
  expireUnuploadedDays: (o, v: number) => (o.housekeeping.expireUnuploadedDays = v),
};

/** What a live setting is applied to: the node's queue and its running options. */
export interface LiveTarget {
  jobs: JobQueue;
  options: ServerOptions;
}

/**
 * Applies the live settings among `keys` that `settings` holds to this node (its queue's
 * concurrency, its running options), the one way a save takes effect without a restart (the
 * console's save and a save heard from another node alike). Returns the keys applied.
 */
export function applyLiveSettings(target: LiveTarget, settings: Partial<ConsoleSettings>, keys: readonly SettingKey[]): SettingKey[] {
  const applied: SettingKey[] = [];
  for (const key of LIVE_SETTINGS) {
    const value = settings[key];
    if (value === undefined || value === null || !keys.includes(key)) continue;
    const type = LIVE_JOB_TYPES[key];
    if (type && typeof value === 'number') target.jobs.setConcurrency(type, value);
    else if (LIVE_OPTIONS[key]) LIVE_OPTIONS[key](target.options, value as never);
    else continue;
    applied.push(key);
  }
  return applied;
}

/** The running value of a live setting on this node, to compare with what is saved. */
function runningValue(target: LiveTarget, key: SettingKey): unknown {
  const type = LIVE_JOB_TYPES[key];
  if (type) return target.jobs.concurrency(type);
  return runningSettings(target.options, { port: null, transcodeConcurrency: 0, downloadConcurrency: 0 })[key];
}

/**
 * Cluster mode: keeps this node's live settings at what is saved, whichever node saved it. Each
 * time the store hands over the document (once listening, after each save, after a reconnection)
 * the live settings whose saved value differs from what this node runs are applied through
 * {@link applyLiveSettings}; the node's own saves are already applied, so hearing them changes
 * nothing. Returns the function that stops following.
 */
export function followSharedSettings(store: SharedSettingsStore, target: LiveTarget, log: (line: string) => void): () => Promise<void> {
  return store.watch((doc) => {
    const saved = pickSettings(doc.settings);
    const differs = LIVE_SETTINGS.filter((k) => saved[k] !== undefined && JSON.stringify(saved[k]) !== JSON.stringify(runningValue(target, k)));
    if (differs.length === 0) return;
    try {
      const applied = applyLiveSettings(target, saved, differs);
      log(`Shared settings (version ${doc.version}) applied here: ${applied.map((k) => `${k} ${JSON.stringify(saved[k])}`).join(', ')}.`);
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
