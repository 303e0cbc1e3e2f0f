/**
 * The settings the console edits (issue 5: the rendition ladder, size limits, the pull policy,
 * the public URL, the script address, the port), kept in `<dataDir>/settings.json`.
 *
 * Two kinds: a few apply at once (how many transcodes and downloads run at once); the rest are
 * read when the server starts, so a change is saved and reported as "after a restart". The
 * process that starts the server merges the file under its own flags with
 * {@link savedSettingsAsOptions}. The data folder is shown but not edited here: the file lives in
 * it (the desktop shell's settings or `--data-dir` choose it).
 */
import fs from 'node:fs';
import path from 'node:path';
import { resolveOptions, type ServerOptions, type ServerOptionsInput } from '../config.js';
import { ApiError } from '../errors.js';
import type { ConsoleSettings, SettingKey } from '../http/adminApiTypes.js';
import { atomicOutput } from '../media/atomicFile.js';
import type { LadderRung } from '../media/ladder.js';

export type { ConsoleSettings, SettingKey } from '../http/adminApiTypes.js';

/** Settings that take effect at once (and are saved for the next start too). */
export const LIVE_SETTINGS: readonly SettingKey[] = ['transcodeConcurrency', 'downloadConcurrency'];

const KEYS: readonly SettingKey[] = [
  'publicUrl',
  'scriptBaseUrl',
  'port',
  'ladderRungs',
  'audioBitrateKbps',
  'maxUploadBytesFlash',
  'maxUploadBytesSilverlight',
  'multipartMaxBytes',
  'pullMaxBytes',
  'pullAllow',
  'pullDeny',
  'registrationsPerMinute',
  'maxVideosPerApp',
  'transcodeConcurrency',
  'downloadConcurrency',
];

/** The file's name in the data folder. */
export const SETTINGS_FILE = 'settings.json';

export function settingsFile(dataDir: string): string {
  return path.join(dataDir, SETTINGS_FILE);
}

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
    transcodeConcurrency: live.transcodeConcurrency,
    downloadConcurrency: live.downloadConcurrency,
  };
}

/** What `<dataDir>/settings.json` holds (only the settings changed from the console); {} if none. */
export function loadSavedSettings(dataDir: string): Partial<ConsoleSettings> {
  let text: string;
  try {
    text = fs.readFileSync(settingsFile(dataDir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
  const parsed = JSON.parse(text) as unknown;
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`${settingsFile(dataDir)} is not a JSON object.`);
  return Object.fromEntries(Object.entries(parsed).filter(([k]) => (KEYS as readonly string[]).includes(k))) as Partial<ConsoleSettings>;
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
  return { options, port: typeof saved.port === 'number' ? saved.port : undefined };
}

/**
 * Checks a change from the console and returns the settings to save (the saved ones with the
 * change applied; a null publicUrl, scriptBaseUrl or port removes the saved value). The result
 * goes through the server's own option checks, so a bad value is refused with the message
 * `npm start` would give.
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

/** The checks resolveOptions does not make (it trusts its caller's types). */
function checkShapes(s: Partial<ConsoleSettings>): void {
  const wholeAtLeast = (key: SettingKey, min: number, max = Number.MAX_SAFE_INTEGER) => {
    const v = s[key];
    if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max)) {
      throw new ApiError('INVALID_PARAMETER', `${key} must be a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}`);
    }
  };
  for (const key of ['maxUploadBytesFlash', 'maxUploadBytesSilverlight', 'multipartMaxBytes', 'pullMaxBytes'] as const) wholeAtLeast(key, 1);
  wholeAtLeast('transcodeConcurrency', 1, 64);
  wholeAtLeast('downloadConcurrency', 1, 64);
  wholeAtLeast('port', 0, 65535);
  wholeAtLeast('registrationsPerMinute', 0);
  wholeAtLeast('maxVideosPerApp', 0);
  if (s.audioBitrateKbps !== undefined && !(typeof s.audioBitrateKbps === 'number' && s.audioBitrateKbps > 0)) throw new ApiError('INVALID_PARAMETER', 'audioBitrateKbps must be a number greater than 0');
  for (const key of ['publicUrl', 'scriptBaseUrl'] as const) {
    if (s[key] !== undefined && typeof s[key] !== 'string') throw new ApiError('INVALID_PARAMETER', `${key} must be an address, or null for the default`);
  }
  for (const key of ['pullAllow', 'pullDeny'] as const) {
    const v = s[key];
    if (v !== undefined && !(Array.isArray(v) && v.every((c) => typeof c === 'string'))) throw new ApiError('INVALID_PARAMETER', `${key} must be a list of CIDRs`);
  }
  const rungs = s.ladderRungs;
  if (rungs !== undefined) {
    if (!Array.isArray(rungs) || rungs.length === 0 || rungs.length > 12) throw new ApiError('INVALID_PARAMETER', 'ladderRungs must list 1 to 12 rungs');
    for (const [i, r] of rungs.entries()) {
      if (!r || typeof r !== 'object' || typeof r.label !== 'string' || typeof r.shortSide !== 'number' || typeof r.videoBitrateKbps !== 'number') {
        throw new ApiError('INVALID_PARAMETER', `ladderRungs[${i}] must be {label, shortSide, videoBitrateKbps}`);
      }
    }
    // Sorted as the ladder sorts them (largest first), so saved and running compare equal.
    s.ladderRungs = rungs.map((r) => ({ label: r.label, shortSide: r.shortSide, videoBitrateKbps: r.videoBitrateKbps })).sort((a, b) => b.shortSide - a.shortSide);
  }
}

/** Writes the settings file: a temporary file, fsynced, renamed over the old one. */
export async function saveSettings(dataDir: string, settings: Partial<ConsoleSettings>): Promise<void> {
  const out = atomicOutput(settingsFile(dataDir));
  try {
    await fs.promises.writeFile(out.tmpPath, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
    await out.commit();
  } catch (err) {
    await out.abort();
    throw err;
  }
}
