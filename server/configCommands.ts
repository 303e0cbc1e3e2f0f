/**
 * `npm run vop -- config check FILE` and `npm run vop -- config print [--config FILE] [flags]`:
 * the configuration as `npm start` would read it, without starting anything. `check` says "ok"
 * or lists every problem; `print` shows the effective value of every option and where it came
 * from (a flag, a variable, the file, the console's saved settings, the default), secrets masked.
 */
import path from 'node:path';
import { resolveOptions } from './config.js';
import { ConfigError, describeSource, valueAt, withSourceNamed } from './configuration/configLayers.js';
import { optionCatalogue, type OptionSpec } from './configuration/optionCatalogue.js';
import { loadSavedSettings, savedSettingsAsOptions, settingsFile } from './settings/consoleSettings.js';
import { parseStartArgs, withSavedSettings, type StartConfig } from './startArgs.js';

export const CONFIG_USAGE = `config check <file.json>      check a configuration file as npm start would read it (with the VOP_* variables set here)
  config print [--config <file.json>] [start flags]
                                the effective value of every option and where it came from (secrets masked)`;

/** What a command prints and its exit code. */
export interface ConfigCommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `config <subcommand> …`. */
export function runConfigCommand(argv: string[], env: NodeJS.ProcessEnv): ConfigCommandResult {
  const [sub, ...rest] = argv;
  if (sub === 'check') {
    if (rest.length !== 1) return { code: 2, stdout: '', stderr: `Usage: npm run vop -- ${CONFIG_USAGE}\n` };
    const problems = checkConfig(['--config', rest[0]!], env);
    return problems.length === 0 ? { code: 0, stdout: 'ok\n', stderr: '' } : { code: 1, stdout: '', stderr: `${problems.join('\n')}\n` };
  }
  if (sub === 'print') {
    let config: StartConfig;
    try {
      config = parseStartArgs(rest, env);
    } catch (err) {
      return { code: 1, stdout: '', stderr: `${(err as Error).message}\n` };
    }
    try {
      return { code: 0, stdout: printConfig(config), stderr: '' };
    } catch (err) {
      return { code: 1, stdout: '', stderr: `${(err as Error).message}\n` };
    }
  }
  return { code: 2, stdout: '', stderr: `Usage: npm run vop -- ${CONFIG_USAGE}\n` };
}

/** Every problem of the configuration that `argv` and `env` give (the file's, then the options' own checks); none: it would start. */
export function checkConfig(argv: string[], env: NodeJS.ProcessEnv): string[] {
  let config: StartConfig;
  try {
    config = parseStartArgs(argv, env);
  } catch (err) {
    return err instanceof ConfigError ? err.problems : [(err as Error).message];
  }
  try {
    resolveOptions(config.options);
  } catch (err) {
    return [withSourceNamed(err, config.sources ?? {}).message];
  }
  return [];
}

/**
 * The effective options, one a line: `path  value  source`. The console's saved settings are
 * read from the data folder's settings.json (in cluster mode they live in the database, which
 * this does not open: a line says so).
 */
export function printConfig(given: StartConfig): string {
  const dataDir = path.resolve(given.options.dataDir);
  const clustered = given.options.databaseUrl !== undefined;
  const config = clustered ? given : withSavedSettings(given, savedSettingsAsOptions(loadSavedSettings(dataDir)), settingsFile(dataDir));
  const sources = config.sources ?? {};
  let resolved: ReturnType<typeof resolveOptions>;
  try {
    resolved = resolveOptions(config.options);
  } catch (err) {
    throw withSourceNamed(err, sources);
  }
  const rows: Array<[string, string, string]> = [];
  for (const spec of optionCatalogue().options.values()) {
    const value = spec.path === 'port' ? config.port : spec.path === 'host' ? config.host : valueAt(resolved, spec.path);
    let shown = value === undefined ? '(not set)' : masked(spec, value);
    if (spec.path === 'adminToken' && value === undefined) shown = `(in ${path.join(resolved.dataDir, 'admin-token')})`;
    rows.push([spec.path, shown, describeSource(sources[spec.path])]);
  }
  const width = (i: number) => Math.min(48, Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map(([p, v, s]) => `${p.padEnd(width(0))}  ${v.padEnd(width(1))}  ${s}`);
  const head = [`# vop's effective configuration${config.configFile ? `, with ${config.configFile}` : ''}`];
  if (clustered) head.push("# cluster mode: the console's saved settings are in the shared database and are not shown here");
  return `${[...head, ...lines].join('\n')}\n`;
}

/** A value as printed: JSON, a secret as ****, a database address with its password as ****. */
function masked(spec: OptionSpec, value: unknown): string {
  if (spec.secret === 'value') return '****';
  if (spec.secret === 'urlPassword' && typeof value === 'string') {
    try {
      const url = new URL(value);
      if (url.password) url.password = '****';
      return url.toString();
    } catch {
      return '****';
    }
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}
