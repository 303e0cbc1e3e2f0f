/**
 * The settings the console edits (issue 5: the rendition ladder, size limits, the pull policy,
 * the public URL, the script address, the port), kept in `<dataDir>/settings.json`.
 *
 * Two kinds: most apply at once (LIVE_SETTINGS: limits, the pull policy, how many jobs run at
 * once); the rest are read when the server starts, so a change is saved and reported as "after a
 * restart". The
 * process that starts the server merges the file under its own flags with
 * {@link savedSettingsAsOptions}. The data folder is shown but not edited here: the file lives in
 * it (the desktop shell's settings or `--data-dir` choose it). In cluster mode the same settings
 * live in the shared database instead, so that every node follows them (savedSettings.ts).
 */
import ipaddr from 'ipaddr.js';
import { resolveOptions, type ServerOptions, type ServerOptionsInput } from '../config.js';
import { ApiError } from '../core/errors.js';
import type { ConsoleSettings, SettingKey } from '../http/adminApiTypes.js';
import { readSettingsFile, SETTINGS_FILE, settingsFile } from '../storage/fileSharedSettings.js';
import type { LadderRung } from '../media/ladder.js';
import { LABEL_RE } from '../processing/mediaNames.js';
import { settingProblemText, type SettingProblem } from './settingProblem.js';

export type { ConsoleSettings, SettingKey } from '../http/adminApiTypes.js';

/**
 * Settings that take effect at once (and are saved for the next start too): the pull policy, the
 * size limits, the registration limits, the expiry of registrations and how many jobs run at
 * once. The rest (addresses, the port, the ladder) are read when the server starts.
 */
export const LIVE_SETTINGS: readonly SettingKey[] = [
  'maxUploadBytesFlash',
  'maxUploadBytesSilverlight',
  'multipartMaxBytes',
  'pullMaxBytes',
  'pullAllow',
  'pullDeny',
  'registrationsPerMinute',
  'maxVideosPerApp',
  'expireUnuploadedDays',
  'transcodeConcurrency',
  'downloadConcurrency',
];

/** Every setting, in the order the console shows them: those read at start, then the live ones. */
const KEYS: readonly SettingKey[] = ['publicUrl', 'scriptBaseUrl', 'port', 'ladderRungs', 'audioBitrateKbps', ...LIVE_SETTINGS];

/** Most rungs a ladder may have: each is one more encode of every source. */
const MAX_RUNGS = 12;

// The file, its format and its atomic write are the storage's (storage/fileSharedSettings.ts).
export { SETTINGS_FILE, settingsFile };

/** The running values, read from the server's resolved options. */
export function runningSettings(o: ServerOptions, live: { port: number | null; transcodeConcurrency: number; downloadConcurrency: number }): ConsoleSettings {
  return {
    publicUrl: o.publicUrl ?? null,
    scriptBaseUrl: o.scriptBaseUrl ?? null,
    port: live.port,
    ladderRungs: o.processing.ladder.rungs,
    audioBitrateKbps: o.processing.ladder.audioBitrateKbps,
    maxUploadBytesFlash: o.ingest.maxUploadBytes.flash,
    maxUploadBytesSilverlight: o.ingest.maxUploadBytes.silverlight,
    multipartMaxBytes: o.ingest.multipartMaxBytes,
    pullMaxBytes: o.ingest.pull.maxBytes,
    pullAllow: o.ingest.pull.allow,
    pullDeny: o.ingest.pull.deny,
    registrationsPerMinute: o.videos.registrationsPerMinute,
    maxVideosPerApp: o.videos.maxVideosPerApp,
    expireUnuploadedDays: o.housekeeping.expireUnuploadedDays,
    transcodeConcurrency: live.transcodeConcurrency,
    downloadConcurrency: live.downloadConcurrency,
  };
}

/** What `<dataDir>/settings.json` holds (only the settings changed from the console); {} if none. */
export function loadSavedSettings(dataDir: string): Partial<ConsoleSettings> {
  return pickSettings(readSettingsFile(dataDir));
}

/** The settings among a saved object's keys (any other key is dropped). */
export function pickSettings(saved: Record<string, unknown>): Partial<ConsoleSettings> {
  return Object.fromEntries(Object.entries(saved).filter(([k]) => (KEYS as readonly string[]).includes(k))) as Partial<ConsoleSettings>;
}

/**
 * The saved settings as options of createServer, and the port, for the process that starts the
 * server: merge its own flags over these (`{...options, ...flags}`, `ingest` and `processing`
 * merged a level deeper), so a flag given at start wins over the file.
 */
export function savedSettingsAsOptions(saved: Partial<ConsoleSettings>): { options: Partial<ServerOptionsInput>; port?: number } {
  const options: Partial<ServerOptionsInput> = {};
  if (saved.publicUrl !== undefined && saved.publicUrl !== null) options.publicUrl = saved.publicUrl;
  if (saved.scriptBaseUrl !== undefined && saved.scriptBaseUrl !== null) options.scriptBaseUrl = saved.scriptBaseUrl;
  const ingest: NonNullable<ServerOptionsInput['ingest']> = {};
  const maxUploadBytes: { flash?: number; silverlight?: number } = {};
  if (saved.maxUploadBytesFlash !== undefined) maxUploadBytes.flash = saved.maxUploadBytesFlash;
  if (saved.maxUploadBytesSilverlight !== undefined) maxUploadBytes.silverlight = saved.maxUploadBytesSilverlight;
  if (Object.keys(maxUploadBytes).length > 0) ingest.maxUploadBytes = maxUploadBytes;
  if (saved.multipartMaxBytes !== undefined) ingest.multipartMaxBytes = saved.multipartMaxBytes;
  const pull: NonNullable<NonNullable<ServerOptionsInput['ingest']>['pull']> = {};
  if (saved.pullMaxBytes !== undefined) pull.maxBytes = saved.pullMaxBytes;
  if (saved.pullAllow !== undefined) pull.allow = saved.pullAllow;
  if (saved.pullDeny !== undefined) pull.deny = saved.pullDeny;
  if (saved.downloadConcurrency !== undefined) pull.concurrency = saved.downloadConcurrency;
  if (Object.keys(pull).length > 0) ingest.pull = pull;
  if (Object.keys(ingest).length > 0) options.ingest = ingest;
  const processing: NonNullable<ServerOptionsInput['processing']> = {};
  const ladder: { rungs?: LadderRung[]; audioBitrateKbps?: number } = {};
  if (saved.ladderRungs !== undefined) ladder.rungs = saved.ladderRungs;
  if (saved.audioBitrateKbps !== undefined) ladder.audioBitrateKbps = saved.audioBitrateKbps;
  if (Object.keys(ladder).length > 0) processing.ladder = ladder;
  if (saved.transcodeConcurrency !== undefined) processing.concurrency = saved.transcodeConcurrency;
  if (Object.keys(processing).length > 0) options.processing = processing;
  const videos: Partial<ServerOptions['videos']> = {};
  if (saved.registrationsPerMinute !== undefined) videos.registrationsPerMinute = saved.registrationsPerMinute;
  if (saved.maxVideosPerApp !== undefined) videos.maxVideosPerApp = saved.maxVideosPerApp;
  if (Object.keys(videos).length > 0) options.videos = videos as ServerOptions['videos'];
  if (saved.expireUnuploadedDays !== undefined) options.housekeeping = { expireUnuploadedDays: saved.expireUnuploadedDays };
  return { options, port: typeof saved.port === 'number' ? saved.port : undefined };
}

/** A refused setting: the catalogue's 201, plus which field and rule ({@link SettingProblem}). */
export class SettingError extends ApiError {
  constructor(readonly problem: SettingProblem) {
    super('INVALID_PARAMETER', settingProblemText(problem));
  }
}

/**
 * Checks a change from the console and returns the settings to save (the saved ones with the
 * change applied; a null publicUrl, scriptBaseUrl or port removes the saved value). Every rule the
 * server's own option checks make on these settings is checked here first, field by field, so a
 * bad value is refused with a {@link SettingError} that names the field as the console shows it;
 * the result then goes through those option checks too, as `npm start` would.
 */
export function mergeSettingsChange(dataDir: string, saved: Partial<ConsoleSettings>, change: unknown): Partial<ConsoleSettings> {
  if (!change || typeof change !== 'object' || Array.isArray(change)) throw new ApiError('INVALID_PARAMETER', 'send the settings to change as a JSON object');
  const next: Record<string, unknown> = { ...saved };
  for (const [key, value] of Object.entries(change)) {
    if (!(KEYS as readonly string[]).includes(key)) throw new ApiError('INVALID_PARAMETER', `${key} is not a setting (settings: ${KEYS.join(', ')})`);
    if (value === null && (key === 'publicUrl' || key === 'scriptBaseUrl' || key === 'port')) delete next[key];
    else next[key] = value;
  }
  const merged = next as Partial<ConsoleSettings>;
  checkShapes(merged);
  try {
    resolveOptions({ dataDir, ...savedSettingsAsOptions(merged).options });
  } catch (err) {
    throw new ApiError('INVALID_PARAMETER', (err as Error).message);
  }
  return merged;
}

/** Whether `text` is an absolute http(s) address (as resolveOptions requires of the two URLs). */
function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** The checks of resolveOptions on these settings, made first with the field named, and the shapes it trusts its caller for. */
function checkShapes(s: Partial<ConsoleSettings>): void {
  const refuse = (problem: SettingProblem): never => {
    throw new SettingError(problem);
  };
  const whole = (key: SettingKey, min: number, max?: number) => {
    const v = s[key];
    if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= (max ?? Number.MAX_SAFE_INTEGER))) refuse({ field: key, rule: 'whole', min, max });
  };
  for (const key of ['maxUploadBytesFlash', 'maxUploadBytesSilverlight', 'multipartMaxBytes', 'pullMaxBytes'] as const) {
    const v = s[key];
    // Sizes are typed in MB on the page: "greater than 0" is what the admin can act on.
    if (v !== undefined && !(Number.isSafeInteger(v) && v >= 1)) refuse({ field: key, rule: 'positive' });
  }
  whole('transcodeConcurrency', 1, 64);
  whole('downloadConcurrency', 1, 64);
  whole('port', 0, 65535);
  whole('registrationsPerMinute', 0);
  whole('maxVideosPerApp', 0);
  // Days as the console sets them: whole (createServer's option also takes fractions).
  whole('expireUnuploadedDays', 0, 36_500);
  if (s.audioBitrateKbps !== undefined && !(typeof s.audioBitrateKbps === 'number' && s.audioBitrateKbps > 0)) refuse({ field: 'audioBitrateKbps', rule: 'positive' });
  for (const key of ['publicUrl', 'scriptBaseUrl'] as const) {
    const v = s[key];
    if (v !== undefined && v !== null && !(typeof v === 'string' && isHttpUrl(v))) refuse({ field: key, rule: 'url' });
  }
  for (const key of ['pullAllow', 'pullDeny'] as const) {
    const v = s[key] as unknown;
    if (v === undefined) continue;
    if (!Array.isArray(v)) refuse({ field: key, rule: 'cidr', value: String(v) });
    for (const c of v as unknown[]) if (typeof c !== 'string' || !ipaddr.isValidCIDR(c)) refuse({ field: key, rule: 'cidr', value: String(c) });
  }
  const rungs = s.ladderRungs as unknown;
  if (rungs !== undefined) {
    if (!Array.isArray(rungs) || rungs.length === 0 || rungs.length > MAX_RUNGS) refuse({ field: 'ladderRungs', rule: 'rungCount', min: 1, max: MAX_RUNGS });
    const labels = new Set<string>();
    const sides = new Set<number>();
    // In the order sent (the page's rows), before sorting: the field's index is the row's.
    for (const [i, r] of (rungs as Array<Partial<Record<keyof LadderRung, unknown>> | null>).entries()) {
      const at = (part: keyof LadderRung) => `ladderRungs[${i}].${part}`;
      const label = r?.label;
      if (typeof label !== 'string' || !LABEL_RE.test(label)) refuse({ field: at('label'), rule: 'label', value: String(label ?? '') });
      if (labels.has(label as string)) refuse({ field: at('label'), rule: 'twice', value: label as string });
      labels.add(label as string);
      const side = r?.shortSide;
      if (!(typeof side === 'number' && Number.isInteger(side) && side >= 2 && side % 2 === 0)) refuse({ field: at('shortSide'), rule: 'even' });
      if (sides.has(side as number)) refuse({ field: at('shortSide'), rule: 'twice', value: String(side) });
      sides.add(side as number);
      if (!(typeof r?.videoBitrateKbps === 'number' && r.videoBitrateKbps > 0)) refuse({ field: at('videoBitrateKbps'), rule: 'positive' });
    }
    // Sorted as the ladder sorts them (largest first), so saved and running compare equal.
    s.ladderRungs = (rungs as LadderRung[]).map((r) => ({ label: r.label, shortSide: r.shortSide, videoBitrateKbps: r.videoBitrateKbps })).sort((a, b) => b.shortSide - a.shortSide);
  }
}
