import os from 'node:os';
import { parseArgs } from 'node:util';
import { NODE_ROLES, type NodeRole, type ServerOptionsInput } from './config.js';
import { isLoopback } from './http/clientAddress.js';
import { s3OptionsFromEnv } from './storage/media/s3Options.js';

/** How `npm start` was asked to run: flags first, then VOP_* environment variables, then defaults. */
export interface StartConfig {
  port: number;
  /** Whether --port or VOP_PORT chose the port (otherwise a port saved from the console may). */
  portGiven: boolean;
  host: string;
  options: ServerOptionsInput;
  /** The admin token came from --admin-token, where every local user can read it (issue 12, item 3). */
  adminTokenFromFlag?: boolean;
}

export const START_USAGE = `Usage: npm start -- [--port <p>] [--host <addr>] [--data-dir <dir>] [--public-url <url>]
                    [--admin-remote] [--time-zone <IANA zone>] [--pull-allow <cidr,…>] [--database-url <postgres://…>]
                    [--trusted-proxies <cidr,…>] [--shared-media] [--role all|api|worker] [--metrics-port <p>]
Environment: VOP_PORT, VOP_HOST, VOP_DATA_DIR, VOP_ADMIN_TOKEN, VOP_PUBLIC_URL, VOP_ADMIN_REMOTE=1, VOP_TIME_ZONE,
             VOP_PULL_ALLOW, VOP_DATABASE_URL, VOP_ROLE, VOP_JOB_LEASE_MS, VOP_TRUSTED_PROXIES,
             VOP_SHARED_MEDIA, VOP_METRICS_PORT, VOP_METRICS_ENABLED=0; VOP_S3_ENDPOINT, VOP_S3_BUCKET, VOP_S3_REGION,
             VOP_S3_ACCESS_KEY_ID, VOP_S3_SECRET_ACCESS_KEY, VOP_S3_FORCE_PATH_STYLE.
Defaults: port 8080, host 0.0.0.0 (every interface), data dir ./data, the admin token in <data dir>/admin-token.
(--admin-token <t> still works, but every local user can read a command line: use VOP_ADMIN_TOKEN or the file.)`;

/** Parses the start flags; throws an Error with a readable message on a bad one. */
export function parseStartArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): StartConfig {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
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
      'metrics-port': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) throw new HelpRequested();
  const portGiven = values.port !== undefined || (env.VOP_PORT ?? '') !== '';
  const portText = values.port ?? (env.VOP_PORT || '8080');
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) throw new Error(`--port "${portText}" is not a port number (0 to 65535).`);
  const pullAllow = values['pull-allow'] ?? (env.VOP_PULL_ALLOW || undefined);
  const trustedProxies = values['trusted-proxies'] ?? (env.VOP_TRUSTED_PROXIES || undefined);
  const role = values.role ?? (env.VOP_ROLE || undefined);
  if (role !== undefined && !NODE_ROLES.includes(role as NodeRole)) throw new Error(`--role "${role}" is not one of ${NODE_ROLES.join(', ')}.`);
  // A loopback port answering GET /metrics without the admin token (metrics/metricsPort.ts).
  const metricsPortText = values['metrics-port'] ?? (env.VOP_METRICS_PORT || undefined);
  if (metricsPortText !== undefined && !(/^\d+$/.test(metricsPortText) && Number(metricsPortText) <= 65535)) {
    throw new Error(`--metrics-port "${metricsPortText}" is not a port number (0 to 65535).`);
  }
  // The metrics off (no request timed, no /metrics): the bench compares the API with them on and off.
  const metricsOff = ['0', 'false', 'no', 'off'].includes((env.VOP_METRICS_ENABLED ?? '').toLowerCase());
  if (metricsOff && metricsPortText !== undefined) throw new Error('--metrics-port (VOP_METRICS_PORT) needs the metrics on: leave VOP_METRICS_ENABLED out.');
  const leaseText = env.VOP_JOB_LEASE_MS || undefined;
  if (leaseText !== undefined && !/^\d+$/.test(leaseText)) throw new Error(`VOP_JOB_LEASE_MS "${leaseText}" is not a whole number of milliseconds.`);
  return {
    port,
    portGiven,
    adminTokenFromFlag: values['admin-token'] !== undefined,
    host: values.host ?? env.VOP_HOST ?? '0.0.0.0',
    options: {
      dataDir: values['data-dir'] ?? env.VOP_DATA_DIR ?? './data',
      adminToken: values['admin-token'] ?? (env.VOP_ADMIN_TOKEN || undefined),
      publicUrl: values['public-url'] ?? (env.VOP_PUBLIC_URL || undefined),
      adminRemote: values['admin-remote'] ?? ['1', 'true', 'yes'].includes((env.VOP_ADMIN_REMOTE ?? '').toLowerCase()),
      timeZone: values['time-zone'] ?? (env.VOP_TIME_ZONE || undefined),
      databaseUrl: values['database-url'] ?? (env.VOP_DATABASE_URL || undefined),
      // Object storage for media when VOP_S3_ENDPOINT is set (the keys stay out of the command line).
      objectStorage: s3OptionsFromEnv(env),
      role: role as NodeRole | undefined,
      // Cluster mode: how soon another node takes over the jobs of a node that stopped answering.
      jobLeaseMs: leaseText === undefined ? undefined : Number(leaseText),
      metrics: metricsOff ? { enabled: false } : metricsPortText === undefined ? undefined : { port: Number(metricsPortText) },
      sharedMedia: values['shared-media'] ?? (['1', 'true', 'yes'].includes((env.VOP_SHARED_MEDIA ?? '').toLowerCase()) || undefined),
      // Comma-separated CIDRs of the proxies whose X-Forwarded-For names the client.
      trustedProxies: trustedProxies?.split(',').map((c) => c.trim()).filter(Boolean),
      // Comma-separated CIDRs that pulls may reach although loopback or link-local (127.0.0.0/8).
      ingest: pullAllow === undefined ? undefined : { pull: { allow: pullAllow.split(',').map((c) => c.trim()).filter(Boolean) } },
    },
  };
}

export class HelpRequested extends Error {}

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
 * and a port) under the ones given on the command line or in the environment: a flag always
 * wins; `ingest` and `processing` merge one level deeper so a flag for one field keeps the rest.
 */
export function withSavedSettings(config: StartConfig, saved: { options: Partial<ServerOptionsInput>; port?: number }): StartConfig {
  const given = Object.fromEntries(Object.entries(config.options).filter(([, v]) => v !== undefined)) as ServerOptionsInput;
  const options: ServerOptionsInput = { ...saved.options, ...given };
  if (saved.options.ingest || given.ingest) {
    options.ingest = { ...saved.options.ingest, ...given.ingest };
    // --pull-allow replaces the saved allow list and keeps the rest of the saved pull settings.
    if (saved.options.ingest?.pull || given.ingest?.pull) options.ingest.pull = { ...saved.options.ingest?.pull, ...given.ingest?.pull };
  }
  if (saved.options.processing || given.processing) options.processing = { ...saved.options.processing, ...given.processing };
  const port = config.portGiven || saved.port === undefined ? config.port : saved.port;
  return { ...config, port, options };
}
