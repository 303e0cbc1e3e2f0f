import os from 'node:os';
import { parseArgs } from 'node:util';
import path from 'node:path';
import { NODE_ROLES, type NodeRole, type ServerOptionsInput } from './config.js';
import {
  ConfigError,
  describeSource,
  mergeLayer,
  parseOptionText,
  readConfigFile,
  readEnvLayer,
  setAt,
  valueAt,
  withSourceNamed,
  type OptionSources,
  type OptionTree,
} from './configuration/configLayers.js';
import { optionCatalogue } from './configuration/optionCatalogue.js';
import { isLoopback } from './http/clientAddress.js';
import { validateS3Options, type S3MediaStoreOptions } from './storage/media/s3Options.js';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './logging/logger.js';

/** How `npm start` was asked to run: flags first, then VOP_* environment variables, then the configuration file, then defaults. */
export interface StartConfig {
  port: number;
  /** Whether a flag, a variable or the configuration file chose the port (otherwise a port saved from the console may). */
  portGiven: boolean;
  host: string;
  options: ServerOptionsInput;
  /** The admin token came from --admin-token, where every local user can read it (issue 12, item 3). */
  adminTokenFromFlag?: boolean;
  /** Where each option given came from (a flag, a variable, the file, the console's saved settings); absent ones are defaults. */
  sources?: OptionSources;
  /** The configuration file read (`--config`, `VOP_CONFIG`), as an absolute path. */
  configFile?: string;
  /** The operator's log: --log-format, --log-level, --log-requests (absent: readable lines at info, no request lines). */
  logging?: StartLogging;
}

/** How `npm start` writes its log (logging/logger.ts). */
export interface StartLogging {
  format: LogFormat;
  level: LogLevel;
  /** A line per HTTP request too. */
  requests: boolean;
}

export const START_USAGE = `Usage: npm start -- [--config <file.json>] [--port <p>] [--host <addr>] [--data-dir <dir>] [--public-url <url>]
                    [--admin-remote] [--time-zone <IANA zone>] [--pull-allow <cidr,…>] [--database-url <postgres://…>]
                    [--trusted-proxies <cidr,…>] [--shared-media] [--role all|api|worker] [--metrics-port <p>]
                    [--log-format text|json] [--log-level debug|info|warn|error] [--log-requests]
Environment: VOP_CONFIG (the configuration file), and every option as a VOP_* variable named after its path
             (ingest.pull.connectTimeoutMs: VOP_INGEST_PULL_CONNECT_TIMEOUT_MS), among them VOP_PORT, VOP_HOST,
             VOP_DATA_DIR, VOP_ADMIN_TOKEN, VOP_PUBLIC_URL, VOP_ADMIN_REMOTE=1, VOP_PULL_ALLOW, VOP_DATABASE_URL;
             VOP_S3_ENDPOINT, VOP_S3_BUCKET, VOP_S3_REGION, VOP_S3_ACCESS_KEY_ID, VOP_S3_SECRET_ACCESS_KEY.
Precedence: a flag, then a variable, then the configuration file, then the console's saved settings, then the default.
Log: VOP_LOG_FORMAT, VOP_LOG_LEVEL, VOP_LOG_REQUESTS=1. Metrics: VOP_METRICS_PORT, VOP_METRICS_ENABLED=false.
Defaults: port 8080, host 0.0.0.0 (every interface), data dir ./data, the admin token in <data dir>/admin-token.
See the options and their effective values: npm run vop -- config print [--config <file>].
(--admin-token <t> still works, but every local user can read a command line: use VOP_ADMIN_TOKEN or the file.)`;

/** Each start flag's option. */
const FLAG_OPTIONS: Record<string, string> = {
  port: 'port',
  host: 'host',
  'data-dir': 'dataDir',
  'admin-token': 'adminToken',
  'public-url': 'publicUrl',
  'admin-remote': 'adminRemote',
  'time-zone': 'timeZone',
  'pull-allow': 'ingest.pull.allow',
  'database-url': 'databaseUrl',
  'trusted-proxies': 'trustedProxies',
  'shared-media': 'sharedMedia',
  role: 'role',
  'metrics-port': 'metrics.port',
};

/**
 * Parses the start flags, reads the `VOP_*` variables and the configuration file (`--config`,
 * else `VOP_CONFIG`), and lays them over each other (a flag over a variable over the file);
 * throws an Error with a readable message on a bad flag, an unknown option or a value of the
 * wrong type, naming where it was given.
 */
export function parseStartArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): StartConfig {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      config: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'admin-token': { type: 'string' },
      'public-url': { type: 'string' },
      'admin-remote': { type: 'boolean' },
      'time-zone': { type: 'string' },
      'pull-allow': { type: 'string' },
      'database-url': { type: 'string' },
      'trusted-proxies': { type: 'string' },
      'shared-media': { type: 'boolean' },
      role: { type: 'string' },
      'log-format': { type: 'string' },
      'log-level': { type: 'string' },
      'log-requests': { type: 'boolean' },
      'metrics-port': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) throw new HelpRequested();
  const sources: OptionSources = {};
  const flagLayer: OptionTree = {};
  const { options: catalogue } = optionCatalogue();
  for (const [flag, at] of Object.entries(FLAG_OPTIONS)) {
    const given = values[flag as keyof typeof values];
    if (given === undefined) continue;
    if (flag === 'port') checkPort(String(given), '--port');
    setAt(flagLayer, at, typeof given === 'boolean' ? given : parseOptionText(catalogue.get(at)!, given, `--${flag}`));
    sources[at] = { kind: 'flag', name: `--${flag}` };
  }
  if (env.VOP_PORT) checkPort(env.VOP_PORT, 'VOP_PORT');
  const envSources: OptionSources = {};
  const envLayer = readEnvLayer(env, envSources);
  const configText = values.config ?? (env.VOP_CONFIG || undefined);
  const configFile = configText === undefined ? undefined : path.resolve(configText);
  let tree = mergeLayer(flagLayer, envLayer, sources, (at) => envSources[at]);
  if (configFile !== undefined) tree = mergeLayer(tree, readConfigFile(configFile), sources, { kind: 'file', name: configFile });
  const port = valueAt(tree, 'port');
  if (port !== undefined) checkPort(String(port), describeSource(sources.port));
  const role = valueAt(tree, 'role');
  if (role !== undefined && !NODE_ROLES.includes(role as NodeRole)) throw new ConfigError([`Option role "${String(role)}" (${describeSource(sources.role)}) is not one of ${NODE_ROLES.join(', ')}.`]);
  const { port: _port, host, ...options } = tree;
  // Object storage with its defaults filled in and checked, as soon as it is named.
  const s3 = options.objectStorage as Partial<S3MediaStoreOptions> | undefined;
  if (s3 !== undefined) {
    try {
      options.objectStorage = validateS3Options(s3);
    } catch (err) {
      throw withSourceNamed(new Error((err as Error).message.replace(/option (\w+)/, 'option objectStorage.$1')), sources);
    }
  }
  return {
    port: port === undefined ? 8080 : (port as number),
    portGiven: port !== undefined,
    logging: startLogging(values, env),
    adminTokenFromFlag: values['admin-token'] !== undefined,
    host: (host as string | undefined) ?? '0.0.0.0',
    options: { ...options, dataDir: (options.dataDir as string | undefined) ?? './data', adminRemote: (options.adminRemote as boolean | undefined) ?? false } as ServerOptionsInput,
    sources,
    configFile,
  };
}

/** A port is a whole number from 0 to 65535, written plainly (no sign, spaces or hex). */
function checkPort(text: string, where: string): void {
  if (!/^\d+$/.test(text) || Number(text) > 65535) throw new ConfigError([`${where} "${text}" is not a port number (0 to 65535).`]);
}

export class HelpRequested extends Error {}

/** The log's flags, then their VOP_* variables, then readable lines at info without request lines. */
function startLogging(values: { 'log-format'?: string; 'log-level'?: string; 'log-requests'?: boolean }, env: NodeJS.ProcessEnv): StartLogging {
  const format = values['log-format'] ?? (env.VOP_LOG_FORMAT || 'text');
  if (!LOG_FORMATS.includes(format as LogFormat)) throw new Error(`--log-format "${format}" is not one of ${LOG_FORMATS.join(', ')}.`);
  const level = values['log-level'] ?? (env.VOP_LOG_LEVEL || 'info');
  if (!LOG_LEVELS.includes(level as LogLevel)) throw new Error(`--log-level "${level}" is not one of ${LOG_LEVELS.join(', ')}.`);
  const requests = values['log-requests'] ?? ['1', 'true', 'yes'].includes((env.VOP_LOG_REQUESTS ?? '').toLowerCase());
  return { format: format as LogFormat, level: level as LogLevel, requests };
}

/** An address the console and the start-up banner show for the server. */
export interface ReachableUrl {
  /** "This machine", "LAN (eth0)", "Bound address". */
  label: string;
  /** e.g. http://192.168.1.20:8080, no trailing slash. */
  url: string;
  /** False for an address of this machine the server does not listen on (it is bound elsewhere). */
  served: boolean;
}

/**
 * The addresses of a server bound to `host`:`port`: this machine (loopback) first, then each LAN
 * IPv4 address, each marked served or not; a specific `host` that is neither (a host name, an
 * IPv6 address) is added as served. `interfaces` is for tests.
 */
export function servedAddresses(host: string, port: number, interfaces = os.networkInterfaces()): ReachableUrl[] {
  const wildcard = host === '0.0.0.0' || host === '::' || host === '';
  const urlOf = (h: string) => `http://${h.includes(':') ? `[${h}]` : h}:${port}`;
  const loopback = !wildcard && isLoopback(host);
  // Bound to one loopback address, only that one answers (::1 does not answer on 127.0.0.1).
  const out: ReachableUrl[] = [{ label: 'This machine', url: urlOf(loopback ? host : '127.0.0.1'), served: wildcard || loopback }];
  let boundListed = wildcard || loopback;
  for (const [name, infos] of Object.entries(interfaces)) {
    for (const info of infos ?? []) {
      if (info.family !== 'IPv4' || info.internal) continue;
      out.push({ label: `LAN (${name})`, url: urlOf(info.address), served: wildcard || host === info.address });
      if (host === info.address) boundListed = true;
    }
  }
  if (!boundListed) out.splice(1, 0, { label: 'Bound address', url: urlOf(host), served: true });
  return out;
}

/**
 * Applies the settings saved from the console (`<dataDir>/settings.json`, as createServer options
 * and a port) under the ones given by a flag, a variable or the configuration file: what was
 * given always wins, option by option (`--pull-allow` replaces the saved allow list and keeps the
 * rest of the saved pull settings). `where` names the saved settings in the sources.
 */
export function withSavedSettings(config: StartConfig, saved: { options: Partial<ServerOptionsInput>; port?: number }, where = 'settings.json'): StartConfig {
  const sources: OptionSources = { ...config.sources };
  const given = Object.fromEntries(Object.entries(config.options).filter(([, v]) => v !== undefined)) as OptionTree;
  const options = mergeLayer(given, saved.options as OptionTree, sources, { kind: 'console', name: where }) as unknown as ServerOptionsInput;
  const port = config.portGiven || saved.port === undefined ? config.port : saved.port;
  if (!config.portGiven && saved.port !== undefined) sources.port = { kind: 'console', name: where };
  return { ...config, port, options, sources };
}
