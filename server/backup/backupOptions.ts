/**
 * Options of the scheduled backups (docs/backup.md, "Scheduled backups and the console"): where
 * they go, and when the small daily ones (database and settings) and the full ones (media too)
 * are made and how many are kept. Defaults here, checked by {@link resolveBackupOptions} with an
 * error that names the bad option.
 */

/** How often a full backup (with media) is made: never, every day, once a week. */
export type FullBackupEvery = 'off' | 'daily' | 'weekly';
export const FULL_BACKUP_EVERY: readonly FullBackupEvery[] = ['off', 'daily', 'weekly'];

/** Days of the week as the options name them, in `Date.getDay()` order (Sunday is 0). */
export const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface BackupOptions {
  /** The backup folder, where the console's and the schedule's backups are written. Absent: `<dataDir>/backups`. */
  dir?: string;
  /**
   * A file holding the seal key (backupSeal.ts): every backup this server makes then carries a
   * keyed seal, which `vop verify --seal-key-file` checks. Absent: plain seals.
   */
  sealKeyFile?: string;
  /** The daily backup of the database and the settings (no media: small). */
  daily: {
    /** Whether it is made. */
    enabled: boolean;
    /** When, `HH:MM` in the server's time zone (the `timeZone` option, else the machine's). */
    at: string;
    /** How many of these backups the folder keeps; older ones are removed after a new one verified. */
    keep: number;
  };
  /** The full backup: the database, the settings and the media. */
  full: {
    /** `off`, `daily` or `weekly`. */
    every: FullBackupEvery;
    /** When, `HH:MM` in the server's time zone. */
    at: string;
    /** The day of a weekly one, `sunday` to `saturday`. */
    weekday: Weekday;
    /** How many full backups the folder keeps. */
    keep: number;
  };
}

export type BackupOptionsInput = Partial<Omit<BackupOptions, 'daily' | 'full'>> & { daily?: Partial<BackupOptions['daily']>; full?: Partial<BackupOptions['full']> };

export const DEFAULT_BACKUP_OPTIONS: BackupOptions = {
  daily: { enabled: true, at: '02:00', keep: 14 },
  full: { every: 'off', at: '03:00', weekday: 'sunday', keep: 4 },
};

/** `HH:MM`, 00:00 to 23:59. */
const TIME_OF_DAY = /^([01]\d|2[0-3]):[0-5]\d$/;

/** The defaults under `input` (each group merged field by field), checked. */
export function resolveBackupOptions(input: BackupOptionsInput = {}): BackupOptions {
  const o: BackupOptions = {
    ...(input.dir !== undefined ? { dir: input.dir } : {}),
    ...(input.sealKeyFile !== undefined ? { sealKeyFile: input.sealKeyFile } : {}),
    daily: { ...DEFAULT_BACKUP_OPTIONS.daily, ...input.daily },
    full: { ...DEFAULT_BACKUP_OPTIONS.full, ...input.full },
  };
  const check = (key: string, ok: boolean, rule: string) => {
    if (!ok) throw new Error(`Option backups.${key} must be ${rule}.`);
  };
  check('dir', o.dir === undefined || (typeof o.dir === 'string' && o.dir !== ''), 'a folder path');
  check('sealKeyFile', o.sealKeyFile === undefined || (typeof o.sealKeyFile === 'string' && o.sealKeyFile !== ''), 'a file path');
  check('daily.enabled', typeof o.daily.enabled === 'boolean', 'true or false');
  for (const kind of ['daily', 'full'] as const) {
    const at = o[kind].at;
    check(`${kind}.at`, typeof at === 'string' && TIME_OF_DAY.test(at), `a time of day as HH:MM, 00:00 to 23:59 (got ${JSON.stringify(at)})`);
    const keep = o[kind].keep;
    check(`${kind}.keep`, Number.isSafeInteger(keep) && keep >= 1 && keep <= 1000, 'a whole number from 1 to 1000');
  }
  check('full.every', FULL_BACKUP_EVERY.includes(o.full.every), `one of ${FULL_BACKUP_EVERY.join(', ')} (got ${JSON.stringify(o.full.every)})`);
  check('full.weekday', (WEEKDAYS as readonly string[]).includes(o.full.weekday), `a day of the week in English, ${WEEKDAYS.join(', ')} (got ${JSON.stringify(o.full.weekday)})`);
  return o;
}
