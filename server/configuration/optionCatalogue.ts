/**
 * Every option a person running `npm start` can set, by its documented path
 * (`ingest.pull.connectTimeoutMs`), with its type, whether it is a secret, and its `VOP_*`
 * variable. Derived from the defaults the server runs with (config.ts), so an option added there
 * is settable from a configuration file and the environment without a list to keep in step; the
 * few options without a default are named here.
 */
import { resolveOptions } from '../config.js';
import { DEFAULT_S3_OPTIONS } from '../storage/media/s3Options.js';

/** How a value is written in a variable or a flag: `list` is comma-separated (or a JSON array), `json` is JSON. */
export type OptionType = 'number' | 'boolean' | 'string' | 'list' | 'json';

/** One option: a leaf of the options tree. */
export interface OptionSpec {
  /** Its documented path, `ingest.pull.allow`. */
  path: string;
  type: OptionType;
  /** Its `VOP_*` variable, derived from the path ({@link envNameOf}). */
  env: string;
  /** The default, when there is one (the machine's for computed ones). */
  default?: unknown;
  /** Shown masked by `config print`: the whole value, or the password of an address. */
  secret?: 'value' | 'urlPassword';
}

/** The options of `npm start` that are not createServer's: where it listens. */
const START_OPTIONS: Array<Omit<OptionSpec, 'env'>> = [
  { path: 'port', type: 'number', default: 8080 },
  { path: 'host', type: 'string', default: '0.0.0.0' },
];

/** Options without a default (absent means "not used" or "worked out at start"), by type. */
const WITHOUT_DEFAULT: Array<Omit<OptionSpec, 'env'>> = [
  { path: 'adminToken', type: 'string', secret: 'value' },
  { path: 'publicUrl', type: 'string' },
  { path: 'scriptBaseUrl', type: 'string' },
  { path: 'timeZone', type: 'string' },
  { path: 'databaseUrl', type: 'string', secret: 'urlPassword' },
  { path: 'processing.ffmpegPath', type: 'string' },
  { path: 'processing.ffprobePath', type: 'string' },
  { path: 'metrics.port', type: 'number' },
  { path: 'backups.dir', type: 'string' },
  { path: 'backups.sealKeyFile', type: 'string' },
  { path: 'objectStorage.endpoint', type: 'string' },
  { path: 'objectStorage.bucket', type: 'string' },
  { path: 'objectStorage.accessKeyId', type: 'string', secret: 'value' },
  { path: 'objectStorage.secretAccessKey', type: 'string', secret: 'value' },
];

/** Option paths that are not for people: a function, or one the server sets itself. */
const NOT_SETTABLE = new Set(['log']);

/**
 * Variables kept from before the names were derived, each naming an option. Both names work;
 * the object storage ones keep their short `VOP_S3_` prefix (deploy files and docs use it).
 */
export const ENV_ALIASES: Readonly<Record<string, string>> = {
  VOP_PULL_ALLOW: 'ingest.pull.allow',
  VOP_S3_ENDPOINT: 'objectStorage.endpoint',
  VOP_S3_BUCKET: 'objectStorage.bucket',
  VOP_S3_REGION: 'objectStorage.region',
  VOP_S3_ACCESS_KEY_ID: 'objectStorage.accessKeyId',
  VOP_S3_SECRET_ACCESS_KEY: 'objectStorage.secretAccessKey',
  VOP_S3_FORCE_PATH_STYLE: 'objectStorage.forcePathStyle',
};

/**
 * `VOP_*` variables that are no option of the server: the configuration file's name, the CLI's
 * server, the ffmpeg binaries' fallbacks, the log's format and level. Never taken for a misspelt option.
 */
export const OTHER_VARIABLES: ReadonlySet<string> = new Set(['VOP_CONFIG', 'VOP_SERVER', 'VOP_FFMPEG_PATH', 'VOP_FFPROBE_PATH', 'VOP_LOG_FORMAT', 'VOP_LOG_LEVEL']);

/** `ingest.pull.connectTimeoutMs` → `VOP_INGEST_PULL_CONNECT_TIMEOUT_MS`: each part in upper snake case, joined by `_`. */
export function envNameOf(path: string): string {
  return `VOP_${path
    .split('.')
    .map((part) => part.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase())
    .join('_')}`;
}

function typeOf(value: unknown): OptionType | 'group' | undefined {
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string') return 'string';
  if (Array.isArray(value)) return value.every((v) => typeof v === 'string') ? 'list' : 'json';
  if (value !== null && typeof value === 'object') return 'group';
  return undefined;
}

/** The catalogue: every option, in the order of the defaults. */
export interface OptionCatalogue {
  /** By path. */
  options: ReadonlyMap<string, OptionSpec>;
  /** The paths that hold options (`ingest`, `ingest.pull`, `callbacks.retry`): a file nests them, a variable takes them as a JSON object. */
  groups: ReadonlySet<string>;
  /** Each variable's option or group, aliases included. */
  byEnv: ReadonlyMap<string, string>;
}

let built: OptionCatalogue | undefined;

/** The catalogue (built once, from the defaults). */
export function optionCatalogue(): OptionCatalogue {
  if (built) return built;
  const options = new Map<string, OptionSpec>();
  const groups = new Set<string>();
  const add = (spec: Omit<OptionSpec, 'env'>) => {
    options.set(spec.path, { ...spec, env: envNameOf(spec.path) });
    const parts = spec.path.split('.');
    for (let i = 1; i < parts.length; i++) groups.add(parts.slice(0, i).join('.'));
  };
  for (const spec of START_OPTIONS) add(spec);
  const walk = (value: unknown, path: string) => {
    if (NOT_SETTABLE.has(path)) return;
    const type = typeOf(value);
    if (type === 'group') {
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) walk(v, path ? `${path}.${k}` : k);
    } else if (type !== undefined) add({ path, type, default: value });
  };
  // The server's own defaults; dataDir's is npm start's.
  walk({ ...resolveOptions({ dataDir: '.' }), dataDir: './data' }, '');
  for (const spec of WITHOUT_DEFAULT) add(spec);
  for (const [k, v] of Object.entries(DEFAULT_S3_OPTIONS)) {
    const type = typeOf(v);
    if (type && type !== 'group') add({ path: `objectStorage.${k}`, type, default: v });
  }
  const byEnv = new Map<string, string>();
  for (const path of [...options.keys(), ...groups]) byEnv.set(envNameOf(path), path);
  for (const [name, path] of Object.entries(ENV_ALIASES)) byEnv.set(name, path);
  built = { options, groups, byEnv };
  return built;
}

/** Edit distance (Levenshtein) between two names: what it takes to turn one into the other. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * The known name nearest to `name`: one that ends with it (`pull.allow` → `ingest.pull.allow`,
 * the group left out), else the fewest edits, compared without case (`VOP_` names are upper case).
 */
export function nearestName(name: string, known: Iterable<string>): string | undefined {
  const all = [...known];
  const suffixed = all.filter((k) => k.toLowerCase().endsWith(`.${name.toLowerCase()}`) || k.toLowerCase().endsWith(`_${name.toLowerCase()}`));
  if (suffixed.length > 0) return suffixed.sort((a, b) => a.length - b.length)[0];
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of all) {
    const d = editDistance(name.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) (best = k), (bestDistance = d);
  }
  return best;
}
