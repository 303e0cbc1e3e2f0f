import crypto from 'node:crypto';
import fs from 'node:fs';
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express, { type Express } from 'express';
import { resolveOptions, type ServerOptions, type ServerOptionsInput } from './config.js';
import { ApiError } from './core/errors.js';
import { VopEventBus } from './core/events.js';
import { assertAdminAddress, requireAdmin } from './routes/requireAdmin.js';
import { adminErrorHandler, envelopeErrorHandler } from './http/errorResponses.js';
import { clientAddress, noteClientAddress, TrustedProxies } from './http/clientAddress.js';
import { readCallPaths } from './routes/fastReadPath.js';
import { hotPaths, type HotHandler } from './http/hotPaths.js';
import { LADDER_JOB } from './processing/ladderJob.js';
import { STORYBOARD_JOB } from './processing/storyboardJob.js';
import { TRANSCODE_JOB } from './processing/transcodeJob.js';
import { DOWNLOAD_JOB, resumeDownloads } from './ingest/downloadJob.js';
import { CallbackService } from './callbacks/callbackService.js';
import { adminAppsRouter } from './routes/adminApps.js';
import { adminCallbacksRouter } from './routes/adminCallbacks.js';
import { adminJobsRouter } from './routes/adminJobs.js';
import { consoleRouter } from './routes/console.js';
import { hostCheck, ownHostPredicate } from './http/hostCheck.js';
import { noteExpressRoutes } from './http/routeTemplate.js';
import { createConsoleApi } from './routes/consoleApi.js';
import { createConsoleServices } from './console/consoleServices.js';
import { receiveMultipartUpload } from './ingest/multipartUpload.js';
import { healthCheck } from './routes/health.js';
import { mediaDelivery } from './routes/media.js';
import { uploadApiRouter } from './routes/uploadApi.js';
import { videoApiRouter, videoReadCalls, type RequestOrigin } from './routes/videoApi.js';
import { widgetAssets, widgetRouter } from './routes/widget.js';
import { metricsRouter } from './routes/metrics.js';
import { VopMetrics } from './metrics/vopMetrics.js';
import { listenMetricsPort } from './metrics/metricsPort.js';
import { AppService } from './services/appService.js';
import { AuthService } from './auth/authService.js';
import { makeLocalDateFormatter } from './core/localTime.js';
import { ADMIN_TOKEN_MIN_BITS, tokenStrengthBits } from './core/tokens.js';
import { MediaDeliveryService } from './services/mediaDelivery.js';
import { CaptionService } from './services/captionService.js';
import { MEDIA_TTL_RANGE } from './core/mediaTtl.js';
import { MediaAccess } from './services/mediaAccess.js';
import { SigningKeysService } from './services/signingKeys.js';
import { readSealKey } from './backup/backupSeal.js';
import { BackupService } from './services/backupService.js';
import { WatchService } from './services/watchService.js';
import { ViewCounter } from './services/viewCounter.js';
import { watchRouter } from './routes/watch.js';
import { ScheduledBackups } from './services/scheduledBackups.js';
import { VOP_VERSION } from './core/version.js';
import { ADDRESS_FILE, removeServerAddress, writeServerAddress } from './storage/serverAddress.js';
import { KeyRing } from './keys/keyRing.js';
import { MediaTokens } from './keys/mediaTokens.js';
import { UploadCredentials } from './ingest/uploadCredential.js';
import { VideoService } from './services/videoService.js';
import type { ViewContext } from './videos/videoView.js';
import { JobQueue } from './jobs/jobQueue.js';
import { createIngest } from './ingest/createIngest.js';
import type { IngestService } from './ingest/ingestService.js';
import type { TusUploads } from './ingest/tusUpload.js';
import { createProcessing, type Processing } from './processing/createProcessing.js';
import { FfmpegTools } from './media/ffmpegTools.js';
import { VideoLifecycle } from './videos/videoLifecycle.js';
import { LocalMediaStore } from './storage/mediaStore.js';
import { LocalObjectMediaStore } from './storage/media/localObjectMediaStore.js';
import type { MediaStore } from './storage/media/mediaStore.js';
import { VideoMedia } from './storage/media/videoMedia.js';
import { storageSummary } from './storage/storageSummary.js';
import { Scratch } from './storage/scratch.js';
import { addressLimitKey } from './core/addressLimitKey.js';
import { openStores } from './storage/openStores.js';
import { loadOrCreateSecret } from './storage/secretFile.js';
import type { Stores } from './storage/types.js';
import { listenActivity } from './logging/activityLog.js';
import { requestLogger } from './logging/requestLog.js';

/** A running vop: listen and close it; its services are there for jobs, the CLI and tests. */
export interface VopServer {
  app: Express;
  options: ServerOptions;
  adminToken: string;
  stores: Stores;
  events: VopEventBus;
  media: LocalMediaStore;
  /** Media as objects (issue 11): what every part reads and writes through, on local disk or S3. */
  objects: MediaStore;
  jobs: JobQueue;
  /** The tus endpoint (its expiry sweep, its uploads in progress). */
  tus: TusUploads;
  /** What `GET /metrics` answers; absent with the metrics off (metrics.enabled false). */
  metrics?: VopMetrics;
  /** Where the loopback metrics port (metrics.port) listens, once listening; absent without one. */
  metricsAddress(): AddressInfo | undefined;
  /** Backups: made, listed, downloaded (the service), and made on a schedule. */
  backups: { service: BackupService; schedule: ScheduledBackups };
  services: {
    apps: AppService; videos: VideoService; auth: AuthService; lifecycle: VideoLifecycle; callbacks: CallbackService; ingest: IngestService; processing: Processing;
    /** A video's media addresses as its application serves them (public, or signed). */
    mediaAccess: MediaAccess;
  };
  /** Starts answering; resolves with the bound address. */
  listen(port: number, host?: string): Promise<AddressInfo>;
  /** Stops answering, lets requests in flight finish (up to `graceMs`), flushes storage. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Builds the server on the embedded defaults (sql.js and local disk under `dataDir`), or with its
 * metadata in PostgreSQL when `databaseUrl` is given. Knows nothing of Electron: the desktop
 * shell and `npm start` both call this.
 */
export async function createServer(input: ServerOptionsInput): Promise<VopServer> {
  // What the build has opened, closed (last first) if a later step fails: a desktop shell that
  // retries in the same process finds the data directory's lock, the database and the sweeps let go.
  const opened: Array<() => unknown> = [];
  try {
    return await buildServer(input, opened);
  } catch (err) {
    for (const close of opened.reverse()) await Promise.resolve().then(close).catch(() => undefined);
    throw err;
  }
}

async function buildServer(input: ServerOptionsInput, opened: Array<() => unknown>): Promise<VopServer> {
  const options = resolveOptions(input);
  const log = options.log;
  // Read first, so that a missing or short key stops the start before anything is made.
  const backupSealKey = options.backups.sealKeyFile !== undefined ? readSealKey(options.backups.sealKeyFile) : undefined;
  // What was registered before this moment has no event of this process still to come (resumeDownloads).
  const builtAt = Date.now();
  fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const loose = looseDataDir(options.dataDir);
  if (loose) log(`WARNING: ${loose}`);
  const adminToken = options.adminToken ?? loadOrCreateAdminToken(options.dataDir);
  // Never the token itself: this line ends up in logs too.
  if (options.adminToken !== undefined && tokenStrengthBits(options.adminToken) < ADMIN_TOKEN_MIN_BITS) {
    log(
      `Warning: the admin token given holds about ${tokenStrengthBits(options.adminToken)} bits of guessing, fewer than ${ADMIN_TOKEN_MIN_BITS}: whoever guesses it ` +
        'runs the admin API. Give 22 or more random characters (openssl rand -base64 24), or leave it out and vop makes one.',
    );
  }
  const scratch = new Scratch(options.dataDir);
  // Media in object storage when it is configured (waiting, bounded and logged, for the endpoint,
  // and creating the bucket); on local disk under the data directory otherwise. Before
  // the database, so a failure here leaves nothing open.
  // Loaded only then, as PostgreSQL's client is: the embedded default never loads the S3 client.
  const s3 = options.objectStorage
    ? await (await import('./storage/media/s3MediaStore.js')).openS3MediaStore({ ...options.objectStorage, scratchDir: scratch.kindPath('s3'), log })
    : undefined;
  if (s3) opened.push(() => s3.close());
  const S3TusStorage = s3 ? (await import('./ingest/tusS3Storage.js')).S3TusStorage : undefined;
  const stores = await openStores({
    dataDir: options.dataDir,
    databaseUrl: options.databaseUrl,
    databaseConnectRetry: options.databaseConnectRetry,
    databaseMaxConnections: options.databaseMaxConnections,
    log,
  });
  opened.push(() => stores.close());
  // Cluster mode: jobs are leased to nodes through BullMQ's turns on the same database
  // (jobs/turnQueue.ts). Loaded only then: the embedded default never loads BullMQ.
  const turns = options.databaseUrl
    ? await (await import('./jobs/bullmqTurns.js')).openBullTurns({ databaseUrl: options.databaseUrl, leaseMs: options.jobLeaseMs, log })
    : undefined;
  if (turns) opened.push(() => turns.close());
  // What a crash left in this node's working space goes before anything works there again (the
  // embedded database's data-dir lock, taken just now, keeps a second process out; nodes of a
  // cluster each have their own data dir).
  scratch.clearAll();
  const events = new VopEventBus();
  // The operator's lines, from this node's own events (each node of a cluster logs what it did).
  if (options.operatorLog) {
    const stop = listenActivity({ events, logger: options.operatorLog.logger, appOf: async (videoId) => (await stores.videos.get(videoId))?.appId });
    opened.push(stop);
  }
  // Cluster mode: every node's events reach this one's console streams and caches (events.everywhere).
  const relay = options.databaseUrl ? new (await import('./storage/postgres/eventRelay.js')).PostgresEventRelay(options.databaseUrl, events, log) : undefined;
  if (relay) {
    opened.push(() => relay.close());
    await relay.start();
    // Applications are read on every API call: this node keeps copies, dropped as the relay hears of changes.
    stores.followChanges?.(relay);
  }
  // The keys that sign media addresses and upload credentials: random, kept with the metadata (the
  // same on every node), each node told of a rotation (keys/keyRing.ts). The embedded mode takes the
  // upload key it kept in a file before as its first, so upload pages already open keep working.
  const mediaKeys = await KeyRing.open({ store: stores.signingKeys, purpose: 'media', events, log });
  opened.push(() => mediaKeys.close());
  const uploadKeys = await KeyRing.open({
    store: stores.signingKeys,
    purpose: 'uploads',
    events,
    log,
    firstKey: options.databaseUrl ? undefined : () => UploadCredentials.legacyKey(options.dataDir),
  });
  opened.push(() => uploadKeys.close());
  // The console sessions' secrets are made with this one (console/consoleSessions.ts).
  const consoleKeys = await KeyRing.open({ store: stores.signingKeys, purpose: 'console', events, log });
  opened.push(() => consoleKeys.close());
  const keys = new SigningKeysService(
    { media: mediaKeys, uploads: uploadKeys, console: consoleKeys },
    // An old key checks until the longest-lived of what it signed is over: a media address's
    // lifetime (plus the step its expiry is rounded up by), an upload page's credential. The
    // console's sessions are made with the key that signs alone: a rotation ends them.
    { media: (MEDIA_TTL_RANGE.max + 60) * 1000, uploads: options.ingest.credentialTtlMs, console: 0 },
  );
  const mediaAccess = new MediaAccess({ apps: stores.apps, tokens: new MediaTokens(mediaKeys) });
  // In cluster mode the failure limits and the registration rate count in the shared database.
  const auth = new AuthService(stores.apps, options.auth, Date.now, stores.counters, stores.apiCallers);
  const apps = new AppService(stores.apps, Date.now, auth);
  const videos = new VideoService(stores.videos, stores.apps, events, options.videos, Date.now, stores.counters);
  const formatDate = makeLocalDateFormatter(options.timeZone);
  const media = new LocalMediaStore(options.dataDir);
  const objects: MediaStore = s3 ?? new LocalObjectMediaStore(media);
  if (s3) log(`Media in object storage: ${options.objectStorage!.endpoint}, bucket ${options.objectStorage!.bucket}.`);
  const videoMedia = new VideoMedia(objects, media);
  const lifecycle = new VideoLifecycle(stores.videos, events);
  // An API node runs no job that needs ffmpeg: workers transcode and pull (issue 11).
  const jobs = new JobQueue(stores.jobs, events, log, Date.now, turns && { turns, runs: (type) => options.role !== 'api' || !WORKER_JOB_TYPES.includes(type) });
  // Status callbacks (spec section 6): listens to video.status; catches up on what a crash cut off
  // (what is unscheduled is read now, before any status can change; the writes follow listen).
  const callbacks = new CallbackService({
    store: stores.callbacks,
    apps: stores.apps,
    jobs,
    jobStore: stores.jobs,
    events,
    options: options.callbacks,
    log,
  });
  await callbacks.reconcile();
  // Uploads (tus, multipart) and pulls from a URL (issue 3): registers the download job.
  // One choice of ffmpeg and ffprobe for intake and transcoding alike (media/ffmpegBinaries.ts).
  const tools = new FfmpegTools({ ffmpegPath: options.processing.ffmpegPath, ffprobePath: options.processing.ffprobePath });
  const database = options.databaseUrl ? { url: options.databaseUrl, connectRetry: options.databaseConnectRetry } : undefined;
  const ingest = createIngest({ options: options.ingest, dataDir: options.dataDir, leaseMs: options.jobLeaseMs, publicUrl: options.publicUrl, auth, stores, media, objects, S3TusStorage, database, uploadKeys, lifecycle, events, jobs, tools, log });
  opened.push(() => ingest.stop());
  await ingest.start();
  // Transcoding (issue 4): the transcode job on every move to 5; binaries, covers for delivery.
  const processing = createProcessing({ options: options.processing, dataDir: options.dataDir, timeZone: options.timeZone, stores, objects, lifecycle, events, jobs, tools, log });
  opened.push(() => processing.stop());

  const viewContext = (req: RequestOrigin): ViewContext => ({
    baseUrl: options.publicUrl ?? `${req.protocol}://${req.host}`,
    formatDate,
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false); // API answers change with every write; media sets its own validators
  app.set('query parser', 'simple');
  // Each matched route's template, for the request metrics (http/routeTemplate.ts).
  noteExpressRoutes(app.request);

  // /healthz's details go to the admin only, by the admin API's own checks (consoleApi is made
  // below; this runs per request, long after).
  const isOwnHost = ownHostPredicate({ publicUrl: options.publicUrl, scriptBaseUrl: options.scriptBaseUrl });
  const isAdmin = async (req: IncomingMessage): Promise<boolean> => {
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
    if (bearer === undefined || !isOwnHost(req.headers.host)) return false;
    try {
      assertAdminAddress(req as express.Request, options.adminRemote);
      await consoleApi.gate.check(bearer, clientAddress(req));
      return true;
    } catch {
      return false;
    }
  };
  const health = healthCheck({
    // backupSchedule is made below; this runs per request, long after.
    summary: async () => ({ videosByStatus: await stores.videos.countByStatus(), warnings: [...stores.warnings(), ...backupSchedule.warnings()] }),
    startedAt: Date.now(),
    isAdmin,
    extra: async () => ({ role: options.role, queue: jobs.describe(), storage: storageSummary(options), ffmpeg: await processing.tools.status() }),
  });
  // The console (issue 5): the built renderer at /console; it talks only to the admin API.
  // The console and the admin API answer only to this server's own names (DNS rebinding).
  const ownNames = hostCheck({ publicUrl: options.publicUrl, scriptBaseUrl: options.scriptBaseUrl });
  app.use('/console', ownNames);
  app.use(consoleRouter());
  // tus reads the request stream itself: mounted before any body parser.
  app.all('/upload/tus{/*rest}', ingest.tus.handler);
  app.use(uploadApiRouter({ receive: (req) => receiveMultipartUpload(req, { ingest: ingest.service, media, auth }), log }));
  // Spec 4.5: the widget scripts and the upload page they open (checked by the ingest service).
  app.use(
    widgetRouter({
      sessions: ingest.service,
      scriptBaseUrl: (req) => options.scriptBaseUrl ?? `${viewContext(req).baseUrl}/widget/`,
      log,
    }),
  );
  const captions = new CaptionService({ videos: stores.videos, objects, events });
  // The read calls (spec 4.1, 4.3, 4.4): the API's routes and the fast path in listen() share them.
  const reads = videoReadCalls({
    videos,
    playFiles: processing.playFiles,
    detailExtras: processing.detailExtras,
    mediaView: (app, ctx) => mediaAccess.view(app, ctx),
    ownerView: (appId, ctx) => mediaAccess.viewFor(appId, ctx),
  });
  app.use(
    videoApiRouter({
      auth,
      videos,
      captions,
      mediaView: (app, ctx) => mediaAccess.view(app, ctx),
      viewContext,
      reads,
      maxBodyBytes: options.maxBodyBytes,
      log,
    }),
  );
  // The watch page and its link previews (docs/watch.md).
  const views = new ViewCounter({ store: stores.views, videos: stores.videos, apps: stores.apps, tokens: mediaAccess.tokens, events, log });
  opened.push(() => views.close());
  app.use(watchRouter({ watch: new WatchService({ videos: stores.videos, apps: stores.apps, tokens: mediaAccess.tokens, hasHls: processing.hasHls }), views, viewContext }));

  // The hot paths (issue 14), answered ahead of Express by listen(): the read calls, /healthz, the
  // widget's files, and spec 2.3-2.5's renditions, downloads, covers and HLS of videos in status 1.
  const hot = hotPaths(
    {
      exact: {
        ...readCallPaths({ auth, reads, parseQuery: app.get('query parser fn'), viewContext, log }),
        '/healthz': health,
        ...widgetAssets({ log }),
      },
      prefixes: {
        '/media/': mediaDelivery({
          delivery: new MediaDeliveryService({ videos: stores.videos, apps: stores.apps, tokens: mediaAccess.tokens, objects, covers: processing.covers, events }),
          sendTimeoutMs: options.sendTimeoutMs,
          log,
        }),
      },
    },
    log,
  );

  // Routes reach services, never stores (issue 11, item 7): the console's are composed here.
  const consoleServices = createConsoleServices({ options, adminToken, consoleKeys, stores, jobs, media, videoMedia, objects, lifecycle, videos, processing, tus: ingest.tus, log });
  opened.push(() => consoleServices.close());
  // The metrics (GET /metrics): fed by this node's events; figures read at a scrape are the
  // cheap ones (metrics/vopMetrics.ts).
  const metrics = options.metrics.enabled
    ? new VopMetrics({
        events,
        jobCounts: (states) => stores.jobs.countByTypeAndState(states),
        jobTypes: () => jobs.describe().runs,
        uploadsActive: () => ingest.service.uploads.underWay(),
        storage: () => consoleServices.storage.get(),
        storageMaxAgeMs: options.housekeeping.storageCacheMs,
        statusHistory: (videoId) => stores.videos.statusHistory(videoId),
        log,
      })
    : undefined;
  if (metrics) opened.push(() => metrics.close());
  const metricsRoute = metrics && metricsRouter({ metrics, gate: consoleServices.gate, allowRemote: options.adminRemote, ownNames, log });
  if (metricsRoute) app.use(metricsRoute);
  // Backups (docs/backup.md): the database at one instant, the settings files, the media.
  const backups = new BackupService(
    { stores, objects, dataDir: options.dataDir, mode: options.databaseUrl ? 'cluster' : 'embedded', vopVersion: VOP_VERSION },
    options.backups.dir ?? path.join(options.dataDir, 'backups'),
    log,
    backupSealKey,
  );
  // The schedule runs on the nodes that serve the console (their folder is the one it lists); in
  // cluster mode each run is claimed once in the shared database, so one node of several makes it.
  const counters = stores.counters;
  const backupSchedule = new ScheduledBackups({
    backups,
    options: options.backups,
    timeZone: options.timeZone,
    fullMedia: 'include',
    runsHere: options.role !== 'worker',
    claim: counters && (async (slot, at) => (await counters.hit(`backup-schedule:${slot}`, SCHEDULE_CLAIM_WINDOW_MS, at)) === 1),
    log,
  });
  const consoleApi = createConsoleApi({
    options, services: consoleServices, apps, events, jobs, processing, viewContext, media: mediaAccess, keys, captions, views, backups, backupSchedule, log,
    boundAddress: () => server?.address() as AddressInfo | undefined,
  });
  const admin = express.Router();
  admin.use(ownNames);
  // The console's login comes before the check: it is how a browser gets its session cookie.
  admin.use('/session', consoleApi.session);
  admin.use(requireAdmin({ gate: consoleApi.gate, allowRemote: options.adminRemote, sessions: consoleApi.sessions, publicUrl: options.publicUrl }));
  admin.use(express.json({ limit: options.maxBodyBytes }));
  admin.use('/apps', adminAppsRouter(apps));
  admin.use(adminCallbacksRouter(callbacks));
  admin.use(adminJobsRouter({ jobs, jobAdmin: consoleServices.jobAdmin, videoAdmin: consoleServices.videoAdmin, processing }));
  admin.use(consoleApi.router);
  admin.all('/{*rest}', () => {
    throw new ApiError('NOT_FOUND', 'no such admin endpoint');
  });
  admin.use(adminErrorHandler(log));
  app.use('/admin/api', admin);

  app.all('/{*rest}', () => {
    throw new ApiError('NOT_FOUND');
  });
  app.use(envelopeErrorHandler(log));

  let server: http.Server | undefined;
  let metricsServer: http.Server | undefined;
  let closing: Promise<void> | undefined;
  return {
    app,
    options,
    adminToken,
    stores,
    events,
    media,
    objects,
    jobs,
    tus: ingest.tus,
    metrics,
    metricsAddress: () => metricsServer?.address() as AddressInfo | undefined,
    backups: { service: backups, schedule: backupSchedule },
    services: { apps, videos, auth, lifecycle, callbacks, ingest: ingest.service, processing, mediaAccess },
    listen(port, host) {
      return new Promise((resolve, reject) => {
        const proxies = new TrustedProxies(options.trustedProxies);
        const logRequest = options.operatorLog?.requests ? requestLogger(options.operatorLog.logger, clientAddress) : undefined;
        const requests = metrics?.requests;
        // A worker answers /healthz only (its supervisor's and load balancer's question).
        const serve = options.role === 'worker' ? workerOnly(health, metricsRoute, log) : (req: IncomingMessage, res: http.ServerResponse) => {
          // The hot paths skip Express (see http/hotPaths.ts); everything else goes to it.
          if (!hot(req, res)) app(req, res);
        };
        server = http.createServer((req, res) => {
          noteClientAddress(req, proxies);
          logRequest?.(req, res);
          // Once closing, answers say so: the client takes a new connection for its next request
          // instead of sending it on one that is about to go.
          if (closing) res.setHeader('Connection', 'close');
          requests?.track(req, res);
          serve(req, res);
        });
        limitConnectionsPerAddress(server, options.maxConnectionsPerAddress);
        server.keepAliveTimeout = 65_000;
        // Node's default of 300 s for a whole request would cut off large uploads (a 2 GB
        // multipart body, a tus PATCH) on slow links; header reads keep their own timeout.
        server.requestTimeout = 0;
        server.once('error', reject);
        server.listen(port, host, () => {
          server!.off('error', reject);
          // Jobs start once the server answers: they may need its address (callbacks, tests).
          // The loopback metrics port, when asked for, before jobs start: a port taken fails the start.
          (metrics && options.metrics.port !== undefined ? listenMetricsPort(metrics, options.metrics.port, log, isOwnHost) : Promise.resolve(undefined))
            .then((m) => {
              metricsServer = m;
              return jobs.start();
            })
            .then(() => {
              // In the background: with a large library it takes seconds (callbackService.ts).
              void callbacks.startCatchUp();
              backupSchedule.start();
              return Promise.all([processing.start(), resumeDownloads({ jobs, stores, startedAt: builtAt, log })]);
            })
            .then(() => {
              const bound = server!.address() as AddressInfo;
              // For `vop backup --data-dir` (storage/serverAddress.ts): an address that answers the admin API (loopback by default).
              const host = ['0.0.0.0', '::'].includes(bound.address) ? '127.0.0.1' : bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
              try {
                writeServerAddress(options.dataDir, { url: `http://${host}:${bound.port}`, pid: process.pid });
              } catch (err) {
                log(`Could not write ${ADDRESS_FILE} in the data folder (vop backup will need --server): ${(err as Error).message}`);
              }
              resolve(bound);
            }, reject);
        });
      });
    },
    close(graceMs = 10_000) {
      closing ??= (async () => {
        // Open console event streams would hold the close for the whole grace period.
        consoleApi.closeAll();
        if (server) {
          const s = server;
          // close() lets go of the connections idle at the time only. One with a request in flight
          // stayed open after its answer for the keep-alive time (65 s), holding the close for the
          // whole grace. Node arms that time when an answer has been handed to the kernel, and reads
          // it then: 1 ms lets such a connection go right after its last byte. (Closing idle
          // connections again and again would not do: Node counts a connection idle from the end()
          // of its answer, while the end of a large file may still be queued behind a slow reader.)
          s.keepAliveTimeout = 1;
          const stopped = new Promise<void>((resolve) => s.close(() => resolve()));
          s.closeIdleConnections();
          const timer = setTimeout(() => s.closeAllConnections(), graceMs);
          await stopped;
          clearTimeout(timer);
        }
        if (metricsServer) {
          const m = metricsServer;
          const stopped = new Promise<void>((resolve) => m.close(() => resolve()));
          m.closeAllConnections(); // a scrape is short; a scraper's kept-alive connection would hold the close
          await stopped;
        }
        metrics?.close();
        // Before the storage closes: a scheduled backup under way reads it.
        await backupSchedule.stop(graceMs);
        await ingest.stop();
        await callbacks.stop();
        await jobs.stop();
        await processing.stop();
        // What was counted since the last write, before the storage closes.
        await views.close();
        await relay?.close();
        // Their refresh timers read the keys' table: stopped before the storage closes.
        mediaKeys.close();
        uploadKeys.close();
        await stores.close();
        s3?.close();
        removeServerAddress(options.dataDir);
      })();
      return closing;
    },
  };
}

/**
 * The counter window of a scheduled backup's claim, counted at the run's own time: runs fall on
 * whole minutes, so every node counts the same slot in the same window (the key names the slot
 * too). The shared counters forget windows after an hour, long after the nodes claimed.
 */
const SCHEDULE_CLAIM_WINDOW_MS = 60_000;

/** Job types only workers run: they need ffmpeg (issue 11: an API node never transcodes). */
const WORKER_JOB_TYPES: readonly string[] = [TRANSCODE_JOB, LADDER_JOB, STORYBOARD_JOB, DOWNLOAD_JOB];

/** A worker node's answers: /healthz, /metrics, and for anything else a 404 that says why, in the spec's envelope. */
function workerOnly(health: HotHandler, metrics: express.Router | undefined, log: (line: string) => void): (req: IncomingMessage, res: http.ServerResponse) => void {
  const hot = hotPaths({ exact: { '/healthz': health }, prefixes: {} }, log);
  const rest = express();
  rest.disable('x-powered-by');
  noteExpressRoutes(rest.request);
  // Its own metrics too: the transcodes and pulls are timed on the workers.
  if (metrics) rest.use(metrics);
  rest.all('/{*rest}', () => {
    throw new ApiError('NOT_FOUND', 'this is a worker node (--role worker): it answers /healthz only; the API is on the API nodes');
  });
  rest.use(envelopeErrorHandler(log));
  return (req, res) => {
    if (!hot(req, res)) rest(req, res);
  };
}

/**
 * The admin token when none is configured: generated on first start, kept in the data dir,
 * readable by the owner only.
 */
function loadOrCreateAdminToken(dataDir: string): string {
  return loadOrCreateSecret(
    path.join(dataDir, 'admin-token'),
    () => crypto.randomBytes(24).toString('base64url'),
    (text) => text.length >= 16,
  );
}

/**
 * Closes a client's connections past `max` open at once, as they arrive (issue 12, item 9): one
 * address cannot hold the server's sockets and answer buffers without end.
 */
function limitConnectionsPerAddress(server: http.Server, max: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    // Counted per /64 for IPv6 (core/addressLimitKey.ts).
    const address = addressLimitKey(socket.remoteAddress ?? 'unknown');
    const n = (open.get(address) ?? 0) + 1;
    if (n > max) {
      socket.destroy();
      return;
    }
    open.set(address, n);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

/**
 * Why a data directory is too open, if it is (issue 12): it holds the admin token, the database
 * with every application's secret, and the media. One made by vop is 0700; one that existed
 * before may be anything. Windows has no such mode bits.
 */
export function looseDataDir(dir: string): string | undefined {
  if (process.platform === 'win32') return undefined;
  const mode = fs.statSync(dir).mode & 0o777;
  if ((mode & 0o077) === 0) return undefined;
  return `the data directory ${path.resolve(dir)} can be read or entered by other users (mode ${mode.toString(8)}); it holds the admin token, the applications' secrets and the media: chmod 700 it.`;
}
