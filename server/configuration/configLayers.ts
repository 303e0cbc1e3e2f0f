/**
 * The layers an option's value can come from, highest first: a flag, a `VOP_*` variable, the
 * configuration file (`--config FILE`, `VOP_CONFIG`), the console's saved settings, the default.
 * Each layer is a partial options tree; {@link mergeLayer} lays one under another and keeps, for
 * every option, where its value came from, so that `config print` can say it and a bad value
 * can be traced to the line someone has to change.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OTHER_VARIABLES, editDistance, envNameOf, nearestName, optionCatalogue, type OptionSpec, type OptionType } from './optionCatalogue.js';

/** Where one option's value came from. */
export type OptionSource =
  | { kind: 'flag'; name: string }
  | { kind: 'env'; name: string }
  | { kind: 'file'; name: string }
  | { kind: 'console'; name: string };

/** Each option given by some layer, by path, and where the value that won came from. */
export type OptionSources = Record<string, OptionSource>;

/** A partial options tree. */
export type OptionTree = Record<string, unknown>;

/** "flag --pull-allow", "env VOP_PULL_ALLOW", "file /etc/vop.json", "console /data/settings.json". */
export function describeSource(s: OptionSource | undefined): string {
  return s === undefined ? 'default' : `${s.kind} ${s.name}`;
}

/** A configuration that stops the start: every problem found, each naming the option and where it was given. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.length === 1 ? problems[0]! : `The configuration has ${problems.length} problems:\n  ${problems.join('\n  ')}`);
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  // Only an object written as a literal (or parsed from JSON) is a group of options: anything with
  // a class of its own (the logger main.ts hands over, a function's state) is a value, kept whole.
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Whether `value` fits `type` (a file's JSON values, or a variable's once parsed). */
function fits(type: OptionType, value: unknown): boolean {
  switch (type) {
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'string':
      return typeof value === 'string';
    case 'list':
      return Array.isArray(value) && value.every((v) => typeof v === 'string');
    case 'json':
      return value !== undefined;
  }
}

const TYPE_WORDS: Record<OptionType, string> = {
  number: 'a number',
  boolean: 'true or false',
  string: 'a string',
  list: 'a list of strings',
  json: 'a JSON value',
};

/**
 * Checks a tree against the catalogue: every key a known option or group, every value of its
 * option's type. Problems are pushed, each naming the path, `where` and (for an unknown key) the
 * nearest known one; the tree's leaves are recorded in `sources` as coming from `source`.
 */
export function checkTree(tree: unknown, prefix: string, where: string, problems: string[]): void {
  const { options, groups } = optionCatalogue();
  if (!isPlainObject(tree)) {
    problems.push(`${prefix || 'The configuration'} (${where}) must be a JSON object.`);
    return;
  }
  for (const [key, value] of Object.entries(tree)) {
    const at = prefix ? `${prefix}.${key}` : key;
    const spec = options.get(at);
    if (spec) {
      if (value === null) continue;
      if (!fits(spec.type, value)) problems.push(`Option ${at} (${where}) must be ${TYPE_WORDS[spec.type]}, not ${JSON.stringify(value)}.`);
    } else if (groups.has(at)) {
      checkTree(value, at, where, problems);
    } else {
      const near = nearestName(at, [...options.keys(), ...groups]);
      problems.push(`Unknown option ${at} (${where})${near ? `: did you mean ${near}?` : '.'}`);
    }
  }
}

/** The leaves of a tree (values that are not plain objects), by path. */
export function leavesOf(tree: OptionTree, prefix = ''): Array<[string, unknown]> {
  return Object.entries(tree).flatMap(([k, v]) => {
    const at = prefix ? `${prefix}.${k}` : k;
    return isPlainObject(v) && !optionCatalogue().options.has(at) ? leavesOf(v, at) : [[at, v] as [string, unknown]];
  });
}

/** The value at `path` in a tree, or undefined. */
export function valueAt(tree: unknown, path: string): unknown {
  let v = tree;
  for (const part of path.split('.')) v = isPlainObject(v) ? v[part] : undefined;
  return v;
}

/** Sets `path` in a tree, making the groups on the way. */
export function setAt(tree: OptionTree, path: string, value: unknown): void {
  const parts = path.split('.');
  let t = tree;
  for (const part of parts.slice(0, -1)) {
    if (!isPlainObject(t[part])) t[part] = {};
    t = t[part] as OptionTree;
  }
  t[parts.at(-1)!] = value;
}

/**
 * Lays `lower` under `upper`: a fresh tree where groups merge key by key and an option's value
 * from `upper` wins whole (a list replaces a list). `sources` gains `lowerSource` (or what it
 * says for the path) for each option that only `lower` gave.
 */
export function mergeLayer(upper: OptionTree, lower: OptionTree, sources: OptionSources, lowerSource: OptionSource | ((path: string) => OptionSource | undefined)): OptionTree {
  const out = cloneTree(upper);
  for (const [at, value] of leavesOf(lower)) {
    if (value === undefined || valueAt(out, at) !== undefined) continue;
    setAt(out, at, value);
    const source = typeof lowerSource === 'function' ? lowerSource(at) : lowerSource;
    if (source) sources[at] ??= source;
  }
  return out;
}

/** A copy of a tree's groups (plain objects), sharing its values (a function, such as a log, included). */
function cloneTree(tree: OptionTree): OptionTree {
  return Object.fromEntries(Object.entries(tree).map(([k, v]) => [k, isPlainObject(v) ? cloneTree(v) : v]));
}

/** Reads the configuration file: JSON, every key a known option of the right type; throws a {@link ConfigError} naming each problem. */
export function readConfigFile(file: string): OptionTree {
  const where = path.resolve(file);
  let text: string;
  try {
    text = fs.readFileSync(where, 'utf8');
  } catch (err) {
    throw new ConfigError([`The configuration file ${where} cannot be read: ${(err as Error).message}`]);
  }
  let tree: unknown;
  try {
    tree = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`The configuration file ${where} is not JSON: ${(err as Error).message}`]);
  }
  const problems: string[] = [];
  checkTree(tree, '', `file ${where}`, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return dropNulls(tree as OptionTree);
}

/** A file's `null` leaves as absent (the default), as the console's saved nulls are. */
function dropNulls(tree: OptionTree): OptionTree {
  return Object.fromEntries(
    Object.entries(tree)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [k, isPlainObject(v) ? dropNulls(v) : v]),
  );
}

/**
 * A variable's or a flag's text as a value of `type`: a number, a boolean (1, true, yes, on / 0,
 * false, no, off), a string, a list (commas between, or a JSON array), or JSON. Throws with
 * `where` and the option named.
 */
export function parseOptionText(spec: Pick<OptionSpec, 'path' | 'type'>, text: string, where: string): unknown {
  const bad = (what: string): never => {
    throw new ConfigError([`${where} "${text}" is not ${what} (option ${spec.path}).`]);
  };
  switch (spec.type) {
    case 'number': {
      const n = Number(text.trim());
      return text.trim() !== '' && Number.isFinite(n) ? n : bad('a number');
    }
    case 'boolean': {
      const t = text.trim().toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(t)) return true;
      if (['0', 'false', 'no', 'off'].includes(t)) return false;
      return bad('a boolean (1 or 0, true or false)');
    }
    case 'string':
      return text;
    case 'list': {
      if (text.trim().startsWith('[')) {
        const v = parseJson(text, bad);
        return fits('list', v) ? v : bad('a list of strings');
      }
      return text.split(',').map((s) => s.trim()).filter(Boolean);
    }
    case 'json':
      return parseJson(text, bad);
  }
}

function parseJson(text: string, bad: (what: string) => never): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return bad('JSON');
  }
}

/**
 * The environment's layer: every `VOP_*` variable that names an option (its derived name or an
 * alias, ENV_ALIASES in optionCatalogue.ts) or a group (a JSON object). An empty variable counts as unset. A
 * variable that looks like an option and is none (its name starts like an option group's, as
 * `VOP_INGEST_PULL_ALOW`, or is a couple of letters from an option's) stops the start with the
 * nearest name; any other `VOP_*` variable is left alone (scripts and tools have their own).
 */
export function readEnvLayer(env: NodeJS.ProcessEnv, sources: OptionSources): OptionTree {
  const { options, groups, byEnv } = optionCatalogue();
  const layer: OptionTree = {};
  const problems: string[] = [];
  const groupPrefixes = [...groups].map((g) => `${envNameOf(g)}_`).concat(['VOP_S3_']);
  for (const [name, text] of Object.entries(env)) {
    if (!name.startsWith('VOP_') || text === undefined || text === '' || OTHER_VARIABLES.has(name)) continue;
    const at = byEnv.get(name);
    if (at === undefined) {
      const near = nearestName(name, byEnv.keys());
      const looksLikeOne = groupPrefixes.some((p) => name.startsWith(p)) || (near !== undefined && name.length > 8 && editDistance(name, near) <= 2);
      if (looksLikeOne) problems.push(`Unknown variable ${name}: no option has that name${near ? `; did you mean ${near}?` : '.'}`);
      continue;
    }
    try {
      const spec = options.get(at);
      if (spec) {
        setAt(layer, at, parseOptionText(spec, text, name));
        sources[at] = { kind: 'env', name };
      } else {
        const value = parseOptionText({ path: at, type: 'json' }, text, name);
        const before = problems.length;
        checkTree(value, at, `env ${name}`, problems);
        if (problems.length > before) continue;
        setAt(layer, at, value);
        for (const [leaf] of leavesOf(value as OptionTree, at)) sources[leaf] = { kind: 'env', name };
      }
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return layer;
}

/**
 * An error from the options' own checks (resolveOptions: "Option ingest.pull.maxBytes must be …"),
 * with where the option named in it was given, so that someone knows which file, variable or
 * flag to change. Left as it is when the message names no option given by a layer.
 */
export function withSourceNamed(err: unknown, sources: OptionSources): Error {
  const message = err instanceof Error ? err.message : String(err);
  const given = Object.keys(sources)
    .filter((p) => mentions(message, p))
    .sort((a, b) => b.length - a.length);
  if (given.length === 0) return err instanceof Error ? err : new Error(message);
  const named = given.slice(0, 3).map((p) => `${p} from ${describeSource(sources[p])}`);
  return new ConfigError([`${message} (${named.join('; ')})`]);
}

/**
 * Whether the message names `path` or a group that holds it (`callbacks.retry`): a path with a
 * dot anywhere, a top-level one only after "Option" (so "host" in a sentence is not the option).
 */
function mentions(message: string, path: string): boolean {
  const parts = path.split('.');
  for (let i = parts.length; i >= 1; i--) {
    const name = parts.slice(0, i).join('.').replace(/\./g, '\\.');
    const before = i >= 2 ? '(^|[^\\w.])' : 'Options? ';
    if (i === 1 && parts.length > 1) break;
    if (new RegExp(`${before}${name}(?!\\w|\\.\\w)`).test(message)) return true;
  }
  return false;
}
