/**
 * The one start-up path of the server: `npm start` (server/main.ts) and the desktop shell
 * (main/main.ts) both build their server here, so settings saved from the console's Settings page
 * (`<dataDir>/settings.json`) apply to both, under what each was told at start.
 */
import path from 'node:path';
import { createServer, type VopServer } from './app.js';
import { loadSavedSettings, savedSettingsAsOptions } from './services/consoleSettings.js';
import { withSavedSettings, type StartConfig } from './startArgs.js';

/** A server built from a start configuration, and where it is to listen. */
export interface BootstrappedServer {
  vop: VopServer;
  /** The configuration the server was built from: the given one with the saved settings under it. */
  config: StartConfig;
}

/**
 * Reads the settings saved in the data folder `config.options.dataDir` names, applies them under
 * `config` (what was given at start wins: a flag, a VOP_* variable, the desktop's own port; see
 * {@link withSavedSettings}) and builds the server. It does not listen: the caller does, on
 * `config.port` and `config.host` of the result, once it is ready to handle signals or windows.
 */
export async function bootstrapServer(config: StartConfig): Promise<BootstrappedServer> {
  const saved = savedSettingsAsOptions(loadSavedSettings(path.resolve(config.options.dataDir)));
  const merged = withSavedSettings(config, saved);
  const vop = await createServer(merged.options);
  return { vop, config: merged };
}
