/**
 * The desktop shell's own settings (kept with electron-store in the OS's user-data folder).
 * Plain data and pure functions, so they are tested without Electron.
 */
export interface ShellSettings {
  /** TCP port of the embedded server. */
  port: number;
  /** Data folder (database, media); empty means `<userData>/data`. */
  dataDir: string;
  /** Start the app when the user logs in. */
  startAtLogin: boolean;
  /** Serve the LAN (bind every interface) or this machine only (loopback). */
  serveLan: boolean;
  /** Set once the first-run window (API address, first application) has been shown. */
  firstRunDone: boolean;
}

export const DEFAULT_SHELL_SETTINGS: ShellSettings = {
  port: 8080,
  dataDir: '',
  startAtLogin: false,
  serveLan: true,
  firstRunDone: false,
};

/** Merges stored values over the defaults, dropping any that are malformed (a hand-edited file). */
export function normalizeShellSettings(stored: Partial<Record<keyof ShellSettings, unknown>>): ShellSettings {
  const s = { ...DEFAULT_SHELL_SETTINGS };
  if (Number.isInteger(stored.port) && (stored.port as number) >= 1 && (stored.port as number) <= 65535) s.port = stored.port as number;
  if (typeof stored.dataDir === 'string') s.dataDir = stored.dataDir;
  if (typeof stored.startAtLogin === 'boolean') s.startAtLogin = stored.startAtLogin;
  if (typeof stored.serveLan === 'boolean') s.serveLan = stored.serveLan;
  if (typeof stored.firstRunDone === 'boolean') s.firstRunDone = stored.firstRunDone;
  return s;
}

/** A change the settings page asked for that the shell refuses; the message names the setting. */
export class ShellSettingError extends Error {
  constructor(
    /** The setting that was refused. */
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'ShellSettingError';
  }
}

/**
 * Applies a change from the settings page over the current settings, refusing a bad value with a
 * ShellSettingError. Unlike normalizeShellSettings, which repairs a hand-edited file by falling
 * back to the defaults, a bad value here must not be swapped for the default: an emptied port would
 * be saved as 8080 while the page said Saved.
 */
export function applySettingsPatch(current: ShellSettings, patch: unknown): ShellSettings {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw new ShellSettingError('settings', 'The settings change must be an object.');
  const next = { ...current };
  for (const [field, value] of Object.entries(patch)) {
    switch (field) {
      case 'port':
        if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 65535) {
          throw new ShellSettingError(field, 'The port must be a whole number from 1 to 65535.');
        }
        next.port = value as number;
        break;
      case 'dataDir':
        if (typeof value !== 'string') throw new ShellSettingError(field, 'The data folder must be text (empty for the default).');
        next.dataDir = value;
        break;
      case 'startAtLogin':
      case 'serveLan':
      case 'firstRunDone':
        if (typeof value !== 'boolean') throw new ShellSettingError(field, `The setting ${field} must be true or false.`);
        next[field] = value;
        break;
      default:
        throw new ShellSettingError(field, `There is no desktop setting named ${field}.`);
    }
  }
  return next;
}

/** Where the server binds for the LAN choice. */
export function bindHost(settings: Pick<ShellSettings, 'serveLan'>): string {
  return settings.serveLan ? '0.0.0.0' : '127.0.0.1';
}

/** The data folder: the setting, or `data` under the OS's user-data folder. */
export function resolveDataDir(settings: Pick<ShellSettings, 'dataDir'>, userDataPath: string, join: (...p: string[]) => string): string {
  return settings.dataDir.trim() !== '' ? settings.dataDir : join(userDataPath, 'data');
}

/** The console's address on this machine. */
export function consoleUrl(port: number): string {
  return `http://127.0.0.1:${port}/console`;
}

/** The Video Open Platform API's address on this machine, as the first run and the tray give it. */
export function apiAddress(port: number): string {
  return `http://127.0.0.1:${port}/Api/Video`;
}

/** Only these schemes leave the console for the system browser; anything else is dropped. */
export function isExternalLinkAllowed(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' || u.protocol === 'mailto:';
  } catch {
    return false;
  }
}

/** True if `url` is the console itself (navigation inside the window stays there). */
export function isConsoleUrl(url: string, port: number): boolean {
  try {
    const u = new URL(url);
    return u.origin === `http://127.0.0.1:${port}` && (u.pathname === '/console' || u.pathname.startsWith('/console/'));
  } catch {
    return false;
  }
}

/**
 * Hands the first run's welcome over once: the secret must not be readable again later by
 * anything running in the console window.
 */
export class OneTimeValue<T> {
  private value: T | null;
  constructor(value: T | null = null) {
    this.value = value;
  }
  set(value: T): void {
    this.value = value;
  }
  take(): T | null {
    const v = this.value;
    this.value = null;
    return v;
  }
}
