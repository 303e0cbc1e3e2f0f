/**
 * The one start-up path of the server: `npm start` (server/main.ts) and the desktop shell
 * (main/main.ts) both build their server here, so settings saved from the console's Settings page
 * (`<dataDir>/settings.json`; in cluster mode the shared database's copy) apply to both, under
 * what each was told at start.
 */
import path from 'node:path';
import { createServer, type VopServer } from './app.js';
import { resolveOptions } from './config.js';
import { withSourceNamed } from './configuration/configLayers.js';
import { loadSavedSettings, savedSettingsAsOptions, settingsFile } from './settings/consoleSettings.js';
import { readClusterSettings } from './settings/savedSettings.js';
import { withSavedSettings, type StartConfig } from './startArgs.js';

/** A server built from a start configuration, and where it is to listen. */
export interface BootstrappedServer {
  vop: VopServer;
  /** The configuration the server was built from: the given one with the saved settings under it. */
  config: StartConfig;
}

/**
 * Reads the settings saved in the data folder `config.options.dataDir` names (in cluster mode,
 * `databaseUrl` given: the ones every node shares, see settings/savedSettings.ts), applies them under
 * `config` (what was given at start wins: a flag, a VOP_* variable, the desktop's own port; see
 * {@link withSavedSettings}) and builds the server. It does not listen: the caller does, on
 * `config.port` and `config.host` of the result, once it is ready to handle signals or windows.
 */
export async function bootstrapServer(config: StartConfig): Promise<BootstrappedServer> {
  const dataDir = path.resolve(config.options.dataDir);
  const shared = config.options.databaseUrl !== undefined;
  const saved = savedSettingsAsOptions(shared ? await readSharedSettings(config) : loadSavedSettings(dataDir));
  const merged = withSavedSettings(config, saved, shared ? 'the shared database' : settingsFile(dataDir));
  // The options' own checks first, so that a bad value is reported with where it was given.
  try {
    resolveOptions(merged.options);
  } catch (err) {
    throw withSourceNamed(err, merged.sources ?? {});
  }
  const vop = await createServer(merged.options);
  return { vop, config: merged };
}

/** Cluster mode: the settings every node shares (a settings.json here is imported once, if the cluster has none yet). */
async function readSharedSettings(config: StartConfig) {
  // The options as given, checked and with their defaults, for the database's address, how long
  // to wait for it and where to log (createServer checks the merged ones again).
  let given;
  try {
    given = resolveOptions(Object.fromEntries(Object.entries(config.options).filter(([, v]) => v !== undefined)) as StartConfig['options']);
  } catch (err) {
    throw withSourceNamed(err, config.sources ?? {});
  }
  return readClusterSettings({ databaseUrl: given.databaseUrl!, connectRetry: given.databaseConnectRetry, dataDir: given.dataDir, log: given.log });
}
