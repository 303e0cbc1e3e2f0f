/**
 * What the preload exposes to the console as `window.vopDesktop`: one typed function per
 * action, never a generic send(channel) nor ipcRenderer itself. The channel names live here so
 * main and preload cannot drift apart.
 */
export interface VopDesktopApi {
  /** The admin token, so the console logs in without asking on the desktop. */
  adminToken(): Promise<string>;
  /** Copies text to the clipboard. */
  copyText(text: string): Promise<void>;
  /**
   * The shell settings, and a way to change them (some take effect after a restart). A refused
   * value rejects setSettings with a message that names the setting.
   */
  getSettings(): Promise<import('./shellSettings.js').ShellSettings>;
  setSettings(patch: Partial<import('./shellSettings.js').ShellSettings>): Promise<import('./shellSettings.js').ShellSettings>;
  /**
   * The first run's welcome: the API address and the first application with its secret. Given
   * once (the secret is shown once, as when an application is created in the console); null after.
   */
  takeFirstRun(): Promise<FirstRunInfo | null>;
}

export interface FirstRunInfo {
  apiAddress: string;
  appId: string;
  appSecret: string;
  appName: string;
}

export const IPC = {
  adminToken: 'vop:admin-token',
  copyText: 'vop:copy-text',
  getSettings: 'vop:get-settings',
  setSettings: 'vop:set-settings',
  takeFirstRun: 'vop:take-first-run',
} as const satisfies Record<keyof VopDesktopApi, string>;

/**
 * The message of an error thrown by a main-process handler, as the console should show it.
 * Electron rejects ipcRenderer.invoke with "Error invoking remote method '<channel>': <Name>: <message>",
 * which reads as noise on the settings page.
 */
export function remoteErrorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/^Error invoking remote method '[^']*': (?:[A-Za-z]*Error: )?/, '');
}
