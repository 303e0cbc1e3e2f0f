import type { AddressInfo } from 'node:net';
import express, { type Router } from 'express';
import type { ServerOptions } from '../config.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import { LIVE_SETTINGS, mergeSettingsChange, runningSettings, SettingError, type ConsoleSettings, type SettingKey } from '../settings/consoleSettings.js';
import { applyLiveSettings, type SavedSettings } from '../settings/savedSettings.js';

export interface AdminSettingsDeps {
  options: ServerOptions;
  jobs: JobQueue;
  /** Where the settings are saved: the data folder's file, or the cluster's shared document. */
  saved: SavedSettings;
  boundAddress: () => AddressInfo | undefined;
}

/**
 * Admin API: the console's settings (settings/consoleSettings.ts). Mounted at `/admin/api` behind
 * requireAdmin and a JSON parser.
 *
 *   GET /settings   {running, saved, live, pendingRestart, dataDir, settingsFile}; settingsFile
 *                   says where they are saved (in cluster mode, the database and its table)
 *   PUT /settings   {<setting>: value, ...} → the same, plus {applied, afterRestart}: which of the
 *                   changed settings took effect now, which will after a restart; a refused
 *                   value answers 400 {error: {code, message, field, rule, min?, max?, value?}}:
 *                   the usual error plus which field and rule (settings/settingProblem.ts)
 */
export function adminSettingsRouter(deps: AdminSettingsDeps): Router {
  const { options, jobs, saved: store } = deps;
  const dataDir = options.dataDir;
  const running = (): ConsoleSettings =>
    runningSettings(options, {
      port: deps.boundAddress()?.port ?? null,
      transcodeConcurrency: jobs.concurrency('transcode') ?? options.processing.concurrency,
      downloadConcurrency: jobs.concurrency('download') ?? options.ingest.pull.concurrency,
    });
  const view = (saved: Partial<ConsoleSettings>) => {
    const now = running();
    const pendingRestart = (Object.keys(saved) as SettingKey[]).filter((k) => JSON.stringify(saved[k]) !== JSON.stringify(now[k]));
    return { running: now, saved, live: LIVE_SETTINGS, pendingRestart, dataDir, settingsFile: store.where };
  };
  // One change at a time: two PUTs racing would each save the file without the other's change.
  let writing: Promise<unknown> = Promise.resolve();

  const r = express.Router();
  r.get('/settings', async (_req, res) => {
    res.json(view(await store.load()));
  });
  r.put('/settings', async (req, res) => {
    const result = writing.then(async () => {
      const next = await store.change((before) => mergeSettingsChange(dataDir, before, req.body));
      const changed = Object.keys((req.body ?? {}) as object) as SettingKey[];
      // In cluster mode every other node applies the same through settings/savedSettings.ts.
      const applied = applyLiveSettings({ jobs, options }, next, changed);
      const v = view(next);
      return { ...v, applied, afterRestart: changed.filter((k) => !applied.includes(k) && v.pendingRestart.includes(k)) };
    });
    writing = result.catch(() => undefined);
    try {
      res.json(await result);
    } catch (err) {
      // The error middleware sends {code, message}; a refused setting also says where, for the console.
      if (!(err instanceof SettingError)) throw err;
      res.status(err.def.httpStatus).json({ error: { code: err.code, message: err.message, ...(err.detail ? { detail: err.detail } : {}), ...err.problem } });
    }
  });
  return r;
}
