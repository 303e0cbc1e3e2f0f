import path from 'node:path';
import { DEFAULT_CALLBACK_OPTIONS, resolveCallbackOptions, type CallbackOptions } from './callbacks/options.js';
import { assertTrustedProxies } from './http/clientAddress.js';
import { DEFAULT_INGEST_OPTIONS, resolveIngestOptions, type IngestOptions, type IngestOptionsInput } from './ingest/ingestOptions.js';
import { DEFAULT_PROCESSING_OPTIONS, resolveProcessingOptions, type ProcessingOptions, type ProcessingOptionsInput } from './processing/processingOptions.js';
import { DEFAULT_AUTH_OPTIONS, type AuthOptions } from './auth/authService.js';
import { DEFAULT_HOUSEKEEPING_OPTIONS, resolveHousekeepingOptions, type HousekeepingOptions } from './services/housekeepingOptions.js';
import { DEFAULT_BACKUP_OPTIONS, resolveBackupOptions, type BackupOptions, type BackupOptionsInput } from './backup/backupOptions.js';
import { assertRetryConfig, type RetryConfig } from './core/retry.js';
import { assertTimeZone } from './core/localTime.js';
import { validateS3Options, type S3MediaStoreOptions } from './storage/media/s3Options.js';
import { DEFAULT_VIDEO_OPTIONS, type VideoServiceOptions } from './services/videoService.js';
import type { VopLogger } from './logging/logger.js';

/** Options of {@link createServer}; every field but `dataDir` has a default (see {@link resolveOptions}). */
export interface ServerOptions {
  /** Where the database (`vop.db`, `journal/`), the admin token and media live. */
  dataDir: string;
  /**
   * PostgreSQL's address, `postgres://user:password@host:port/database`: cluster mode, the
   * metadata (applications, videos, jobs, callbacks) in that database, shared by every node that
   * names it. Absent: the embedded sql.js database in `dataDir` (nothing else to run).
   */
  databaseUrl?: string;
  /**
   * S3-compatible object storage for media (issue 11; from VOP_S3_* by `npm start`): sources,
   * renditions, covers and HLS live in its bucket, and this node's disk holds only scratch.
   * Absent: media on local disk under `dataDir/media`.
   */
  objectStorage?: Partial<S3MediaStoreOptions> & { endpoint: string };
  /**
   * With a database shared by several nodes and no object storage, media on local disk are only
   * right if every node mounts the same media folder: say so with this (VOP_SHARED_MEDIA=1), or
   * start-up refuses, rather than letting each node serve only what it transcoded.
   */
  sharedMedia: boolean;
  /**
   * What this node does (issue 11; `--role`, VOP_ROLE). `all`, the default: everything. `api`: the
   * spec API, widgets, uploads, the admin API, the console and media; it runs the jobs that need
   * no ffmpeg (callbacks) and never transcodes or pulls. `worker`: transcodes and pulls (and
   * callbacks) from the shared queue, and answers only /healthz. `api` and `worker` need cluster mode.
   */
  role: NodeRole;
  /**
   * Cluster mode: how long a node holds a job without renewing its lease (jobs/bullmqTurns.ts). A
   * node that dies or stops answering loses its jobs after this, and another node starts them
   * again within about a third more. Renewed every quarter of it while the job runs.
   */
  jobLeaseMs: number;
  /** How long start-up waits for that database to answer (nodes start in any order); tries, then gives up. */
  databaseConnectRetry: RetryConfig;
  /**
   * Cluster mode: connections to the database this node's API and jobs share at most (its tus
   * locks and its event relay have their own few). A spec read is one short statement, so a few
   * connections keep the database busy; more only queue on its cores. Every node's count adds
   * up against PostgreSQL's `max_connections` (100 by default).
   */
  databaseMaxConnections: number;
  /** Bearer token of the admin API. Absent: read from `<dataDir>/admin-token`, generated on first start. */
  adminToken?: string;
  /** Absolute base URL that clients should see (media, cover and widget addresses); absent: the Host the caller used. */
  publicUrl?: string;
  /**
   * Public address of the upload widget scripts (spec {script_url}), ending in `/`, as shown to
   * applications; absent: `<publicUrl or the Host used>/widget/`. The server serves them at
   * `/widget/` either way (a proxy may map another address there).
   */
  scriptBaseUrl?: string;
  /** Answer the admin API from any address, not only loopback. */
  adminRemote: boolean;
  /** IANA zone for CreateDate; absent: the server's local zone. */
  timeZone?: string;
  /** Largest request body of the form endpoints and the admin API, in bytes. */
  maxBodyBytes: number;
  /**
   * How long a media answer may wait for the client to take its next chunk before it is given up
   * (nginx's send_timeout): a client that stops reading pins the answer's buffers (2 MiB) for as
   * long as its connection lives. A paused player reconnects with a Range when it resumes.
   */
  sendTimeoutMs: number;
  /**
   * Connections one client address may hold open at once; more are closed as they arrive. Browsers
   * open 6 per server; a proxy in front counts as one address (raise this for it).
   */
  maxConnectionsPerAddress: number;
  /**
   * CIDRs of the reverse proxies in front of vop (`10.0.0.5/32`): from a peer in them, the client's
   * address is the right-most `X-Forwarded-For` entry that is not itself one of them, and
   * `X-Forwarded-Proto: https` says the client came over TLS (the console's cookie is then
   * Secure) (http/clientAddress.ts); from any other peer these headers are ignored. Empty: trust
   * no one.
   */
  trustedProxies: string[];
  /** Spec section 5 checks and failed-authentication limits. */
  auth: AuthOptions;
  /** Paging of the list calls. */
  videos: VideoServiceOptions;
  /** The status callback: retry schedule, timeout, log excerpt size (defaults in callbacks/options.ts). */
  callbacks: CallbackOptions;
  /** Uploads (tus, multipart) and pulls from a URL: sizes, expiry, pull policy (defaults in ingest/ingestOptions.ts). */
  ingest: IngestOptions;
  /** Transcoding and delivery: ladder, preset, concurrency, HLS, ffmpeg paths (defaults in processing/processingOptions.ts). */
  processing: ProcessingOptions;
  /** The console's housekeeping: registrations never uploaded expire, stalled uploads, storage figures (defaults in services/housekeepingOptions.ts). */
  housekeeping: HousekeepingOptions;
  /** `GET /metrics` in Prometheus's text format (docs/deployment.md, "Metrics"). */
  metrics: MetricsOptions;
  /** The backup folder and the schedule of backups (defaults in backup/backupOptions.ts; docs/backup.md). */
  backups: BackupOptions;
  /** Where log lines go; defaults to stderr. */
  log: (line: string) => void;
  /**
   * The operator's log (logging/activityLog.ts): a structured line per upload, pull, transcode and
   * callback, naming the application and the video; with `requests`, a line per HTTP request too.
   * `npm start` sets it (--log-format, --log-level, --log-requests). Absent: only `log`'s lines.
   */
  operatorLog?: { logger: VopLogger; requests: boolean };
}

/** Options of the metrics (metrics/vopMetrics.ts). */
export interface MetricsOptions {
  /** Whether requests are timed and `GET /metrics` answers (to the admin token); false: neither, and nothing is counted. */
  enabled: boolean;
  /**
   * A loopback port (127.0.0.1) that answers `GET /metrics` without the admin token, for a
   * scraper on this machine; 0 picks a free one. Absent: none (the main port's /metrics only).
   */
  port?: number;
}

export const DEFAULT_METRICS_OPTIONS: MetricsOptions = { enabled: true };

/** What a node does: see ServerOptions.role. */
export type NodeRole = 'all' | 'api' | 'worker';
export const NODE_ROLES: readonly NodeRole[] = ['all', 'api', 'worker'];

export type ServerOptionsInput = Partial<Omit<ServerOptions, 'ingest' | 'processing' | 'housekeeping' | 'auth' | 'databaseConnectRetry' | 'metrics' | 'backups'>> & {
  dataDir: string;
  auth?: Partial<Omit<AuthOptions, 'perAddress' | 'perApp'>> & { perAddress?: Partial<AuthOptions['perAddress']>; perApp?: Partial<AuthOptions['perApp']> };
  databaseConnectRetry?: Partial<RetryConfig>;
  metrics?: Partial<MetricsOptions>;
  housekeeping?: Partial<HousekeepingOptions>;
  backups?: BackupOptionsInput;
  ingest?: IngestOptionsInput;
  processing?: ProcessingOptionsInput;
};

const DEFAULTS = {
  adminRemote: false,
  sharedMedia: false,
  role: 'all',
  jobLeaseMs: 15_000,
  // About two minutes of tries for a database that does not answer yet, then start-up fails.
  databaseConnectRetry: { maxRetries: 30, baseDelayMs: 250, maxDelayMs: 5_000, jitter: false },
  databaseMaxConnections: 10,
  maxBodyBytes: 64 * 1024,
  sendTimeoutMs: 60_000,
  maxConnectionsPerAddress: 256,
  trustedProxies: [],
  auth: DEFAULT_AUTH_OPTIONS,
  videos: DEFAULT_VIDEO_OPTIONS,
  callbacks: DEFAULT_CALLBACK_OPTIONS,
  ingest: DEFAULT_INGEST_OPTIONS,
  processing: DEFAULT_PROCESSING_OPTIONS,
  housekeeping: DEFAULT_HOUSEKEEPING_OPTIONS,
  metrics: DEFAULT_METRICS_OPTIONS,
  backups: DEFAULT_BACKUP_OPTIONS,
  log: (line: string) => process.stderr.write(`${line}\n`),
} satisfies Partial<ServerOptions>;

/** Fills defaults and validates; throws an Error that names the bad option. */
export function resolveOptions(input: ServerOptionsInput): ServerOptions {
  // Groups merge with their defaults field by field: a configuration file may give one field of a group.
  const auth = { ...DEFAULTS.auth, ...input.auth, perAddress: { ...DEFAULTS.auth.perAddress, ...input.auth?.perAddress }, perApp: { ...DEFAULTS.auth.perApp, ...input.auth?.perApp } };
  const databaseConnectRetry = { ...DEFAULTS.databaseConnectRetry, ...input.databaseConnectRetry };
  const o: ServerOptions = {
    ...DEFAULTS, ...input, ingest: DEFAULTS.ingest, processing: DEFAULTS.processing, housekeeping: DEFAULTS.housekeeping, backups: DEFAULTS.backups,
    metrics: { ...DEFAULTS.metrics, ...input.metrics }, auth, databaseConnectRetry, videos: { ...DEFAULTS.videos, ...input.videos },
  };
  if (typeof o.dataDir !== 'string' || o.dataDir === '') throw new Error('Option dataDir is required.');
  o.dataDir = path.resolve(o.dataDir);
  if (o.adminToken !== undefined && o.adminToken.length < 16) throw new Error('Option adminToken must be at least 16 characters.');
  if (o.publicUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(o.publicUrl);
    } catch {
      throw new Error(`Option publicUrl "${o.publicUrl}" is not an absolute URL.`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('Option publicUrl must be http or https.');
    o.publicUrl = url.toString().replace(/\/+$/, '');
  }
  if (o.scriptBaseUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(o.scriptBaseUrl);
    } catch {
      throw new Error(`Option scriptBaseUrl "${o.scriptBaseUrl}" is not an absolute URL.`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('Option scriptBaseUrl must be http or https.');
    o.scriptBaseUrl = url.toString().replace(/\/*$/, '/');
  }
  if (o.timeZone !== undefined) assertTimeZone(o.timeZone);
  if (o.databaseUrl !== undefined && !/^postgres(ql)?:\/\/./.test(o.databaseUrl)) {
    throw new Error('Option databaseUrl must be a postgres:// (or postgresql://) address.');
  }
  if (o.objectStorage !== undefined) validateS3Options(o.objectStorage);
  if (o.databaseUrl !== undefined && o.objectStorage === undefined && !o.sharedMedia) {
    throw new Error(
      'A shared database (databaseUrl, VOP_DATABASE_URL) needs media every node can read: set VOP_S3_ENDPOINT (and VOP_S3_BUCKET, the keys) for object storage, ' +
        'or, if every node mounts the same media folder (NFS, SMB), say so with VOP_SHARED_MEDIA=1 (--shared-media).',
    );
  }
  if (!NODE_ROLES.includes(o.role)) throw new Error(`Option role must be one of ${NODE_ROLES.join(', ')} (got "${String(o.role)}").`);
  if (o.role !== 'all' && o.databaseUrl === undefined) {
    throw new Error(`The role ${o.role} (--role, VOP_ROLE) is for cluster mode, where nodes share a database: set VOP_DATABASE_URL (--database-url) too, or leave the role at all.`);
  }
  if (!(Number.isInteger(o.jobLeaseMs) && o.jobLeaseMs >= 2_000)) throw new Error('Option jobLeaseMs must be a whole number of milliseconds, at least 2000.');
  assertRetryConfig('Option databaseConnectRetry', o.databaseConnectRetry);
  if (!(Number.isInteger(o.databaseMaxConnections) && o.databaseMaxConnections >= 1 && o.databaseMaxConnections <= 1_000)) {
    throw new Error('Option databaseMaxConnections must be a whole number from 1 to 1000.');
  }
  o.callbacks = resolveCallbackOptions(input.callbacks);
  o.ingest = resolveIngestOptions(input.ingest);
  o.processing = resolveProcessingOptions(input.processing);
  o.housekeeping = resolveHousekeepingOptions(input.housekeeping);
  o.backups = resolveBackupOptions(input.backups);
  // Relative to the working directory, as dataDir is.
  if (o.backups.dir !== undefined) o.backups.dir = path.resolve(o.backups.dir);
  if (o.backups.sealKeyFile !== undefined) o.backups.sealKeyFile = path.resolve(o.backups.sealKeyFile);
  if (!Number.isInteger(o.maxBodyBytes) || o.maxBodyBytes < 1024) throw new Error('Option maxBodyBytes must be a whole number of at least 1024.');
  if (!(Number.isInteger(o.sendTimeoutMs) && o.sendTimeoutMs >= 100)) throw new Error('Option sendTimeoutMs must be a whole number of at least 100.');
  if (!(Number.isInteger(o.maxConnectionsPerAddress) && o.maxConnectionsPerAddress >= 1)) throw new Error('Option maxConnectionsPerAddress must be a whole number of at least 1.');
  assertTrustedProxies('trustedProxies', o.trustedProxies);
  if (typeof o.metrics.enabled !== 'boolean') throw new Error('Option metrics.enabled must be true or false.');
  if (o.metrics.port !== undefined && !(Number.isInteger(o.metrics.port) && o.metrics.port >= 0 && o.metrics.port <= 65535)) {
    throw new Error('Option metrics.port must be a port number (0 to 65535; 0 picks a free one).');
  }
  if (o.metrics.port !== undefined && !o.metrics.enabled) throw new Error('Option metrics.port needs the metrics on (metrics.enabled).');
  if (!(o.auth.maxClockSkewSeconds >= 0)) throw new Error('Option auth.maxClockSkewSeconds must be 0 or more.');
  const v = o.videos;
  if (!(v.maxPageSize >= 1 && v.defaultListPageSize <= v.maxPageSize && v.defaultUserPageSize <= v.maxPageSize)) {
    throw new Error('Option videos.maxPageSize must be at least 1 and at least both default page sizes.');
  }
  for (const key of ['registrationsPerMinute', 'maxVideosPerApp'] as const) {
    if (!(Number.isSafeInteger(v[key]) && v[key] >= 0)) throw new Error(`Option videos.${key} must be a whole number, 0 (no limit) or more.`);
  }
  return o;
}
