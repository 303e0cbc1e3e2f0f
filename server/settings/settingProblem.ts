/**
 * What is wrong with a setting the console sent (issue 13, item 1): which field, by a path the
 * console can point at (`pullAllow`, `ladderRungs[1].shortSide`, counted from zero as in the JSON
 * sent), which rule it broke, and an English sentence in the words the Settings page uses
 * ("Rendition ladder, rung 2: …", not `processing.ladder.rungs[1]`).
 *
 * The admin API answers such a refusal as `400 {error: {code: '201', message, field, rule, …}}`:
 * the usual envelope plus what the console needs to show the error next to the field, in its
 * chosen language. Imports nothing from Node: the console imports these types.
 */

/** The rules a setting can break; the console words each in its own language. */
export type SettingRule =
  /** Not one of the settings. */
  | 'unknown'
  /** An absolute http:// or https:// address. */
  | 'url'
  /** A whole number from `min` (to `max` when given). */
  | 'whole'
  /** A number greater than 0. */
  | 'positive'
  /** Each entry a network in CIDR form (`value` is the first that is not). */
  | 'cidr'
  /** From `min` to `max` rungs. */
  | 'rungCount'
  /** A rung's label: letters, digits, _ or -, up to 32, starting with a letter or digit (it names files). */
  | 'label'
  /** Two rungs with the same label or the same shorter side (`value`). */
  | 'twice'
  /** An even whole number of at least 2 (libx264 needs even sizes). */
  | 'even';

/** A refused setting: where, which rule, and the figures the rule names. */
export interface SettingProblem {
  /** `<setting>` or `ladderRungs[<i>].<label|shortSide|videoBitrateKbps>`, `i` from 0 in the order sent. */
  field: string;
  rule: SettingRule;
  min?: number;
  max?: number;
  /** The offending entry, where the rule is about one (a CIDR, a label). */
  value?: string;
}

/**
 * The Settings page's names of the settings, in English: the server's message uses them, and the
 * console's English catalogue takes them from here (renderer/src/messages/en.ts).
 */
export const SETTING_LABELS = {
  publicUrl: 'Public URL',
  scriptBaseUrl: 'Script address',
  port: 'Port',
  ladderRungs: 'Rendition ladder',
  audioBitrateKbps: 'Audio bitrate',
  // The widget's two upload types in plain words: the spec's names for them (uploadType `flash`
  // and `silverlight`) are values an integrator passes, not what an admin knows them by.
  maxUploadBytesFlash: 'Largest widget upload, standard',
  maxUploadBytesSilverlight: 'Largest widget upload, large files',
  multipartMaxBytes: 'Largest server-side upload',
  pullMaxBytes: 'Largest pulled file',
  pullAllow: 'Pull: allowed networks',
  pullDeny: 'Pull: denied networks',
  registrationsPerMinute: 'Registrations per minute',
  maxVideosPerApp: 'Videos per application',
  expireUnuploadedDays: 'Registrations never uploaded expire after (days)',
  transcodeConcurrency: 'Transcodes at once',
  downloadConcurrency: 'Downloads at once',
} satisfies Record<string, string>;

/** {@link SETTING_LABELS} by any key (a field the admin API names). */
const LABELS: Readonly<Record<string, string>> = SETTING_LABELS;

const RUNG_PARTS: Record<string, string> = { label: 'label', shortSide: 'shorter side', videoBitrateKbps: 'video bitrate' };

/** `ladderRungs[1].shortSide` → {setting: 'ladderRungs', rung: 1, part: 'shortSide'}. */
export function parseSettingField(field: string): { setting: string; rung?: number; part?: string } {
  const m = /^(\w+)\[(\d+)\](?:\.(\w+))?$/.exec(field);
  if (!m) return { setting: field };
  return { setting: m[1]!, rung: Number(m[2]), part: m[3] };
}

/** The problem in English, as an admin reads it on the Settings page. */
export function settingProblemText(p: SettingProblem): string {
  const f = parseSettingField(p.field);
  const where =
    f.rung === undefined ? (LABELS[f.setting] ?? f.setting) : `${LABELS[f.setting] ?? f.setting}, rung ${f.rung + 1}${f.part ? ` (${RUNG_PARTS[f.part] ?? f.part})` : ''}`;
  const what = (() => {
    switch (p.rule) {
      case 'unknown':
        return 'is not a setting';
      case 'url':
        return 'must be an absolute address starting with http:// or https://';
      case 'whole':
        return p.max !== undefined ? `must be a whole number from ${p.min ?? 0} to ${p.max}` : `must be a whole number, ${p.min ?? 0} or more`;
      case 'positive':
        return 'must be a number greater than 0';
      case 'cidr':
        return `“${p.value ?? ''}” is not a network: write one per line, like 127.0.0.0/8 or fd00::/8`;
      case 'rungCount':
        return `needs from ${p.min} to ${p.max} rungs`;
      case 'label':
        return `“${p.value ?? ''}” cannot name files: use letters, digits, _ or - (up to 32, starting with a letter or digit)`;
      case 'twice':
        return `“${p.value ?? ''}” is used by another rung too`;
      case 'even':
        return 'must be an even whole number of at least 2';
    }
  })();
  return `${where}: ${what}.`;
}
