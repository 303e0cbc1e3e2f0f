import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { AuthService } from './auth/authService.js';
import type { CallbackService } from './callbacks/callbackService.js';
import { readSealKey } from './backup/backupSeal.js';
import { resolveOptions, type ServerOptions, type ServerOptionsInput } from './config.js';
import { createConsoleServices } from './console/consoleServices.js';
import type { VopEventBus } from './core/events.js';
import { makeLocalDateFormatter } from './core/localTime.js';
import { hostCheck, ownHostPredicate } from './http/hostCheck.js';
import { hotPaths } from './http/hotPaths.js';
import { createIngest } from './ingest/createIngest.js';
import type { IngestService } from './ingest/ingestService.js';
import type { TusUploads } from './ingest/tus/tusUpload.js';
import type { JobQueue } from './jobs/jobQueue.js';
import { FfmpegTools } from './media/ffmpegTools.js';
import type { VopMetrics } from './metrics/vopMetrics.js';
import { createProcessing, type Processing } from './processing/createProcessing.js';
import { createConsoleApi } from './routes/consoleApi.js';
import type { RequestOrigin } from './routes/videoApi.js';
import { widgetAssets } from './routes/widget.js';
import { AppService } from './services/appService.js';
import type { BackupService } from './backup/backupService.js';
import type { MediaAccess } from './services/mediaAccess.js';
import type { ScheduledBackups } from './backup/scheduledBackups.js';
import { VideoService } from './services/videoService.js';
import type { LocalMediaRoot } from './storage/media/localMediaRoot.js';
import type { MediaStore } from './storage/media/mediaStore.js';
import type { Stores } from './storage/types.js';
import { VideoLifecycle } from './videos/videoLifecycle.js';
import type { ViewContext } from './videos/videoView.js';
import { createBackups } from './composition/backups.js';
import { openCallbacks } from './composition/callbacks.js';
import { prepareDataDir } from './composition/dataDir.js';
import { createDelivery } from './composition/delivery.js';
import { createExpressApp, mountRoutes } from './composition/expressApp.js';
import { openFoundation } from './composition/foundation.js';
import { createHealth } from './composition/health.js';
import { createHttpServer } from './composition/httpServer.js';
import { jobQueuePart, openJobQueue } from './composition/jobQueue.js';
import { createMetrics } from './composition/metrics.js';
import { Parts } from './composition/parts.js';
import { openSigningKeys } from './composition/signingKeys.js';

/** A running vop: listen and close it; its services are there for jobs, the CLI and tests. */
export interface VopServer {
  app: Express;
  options: ServerOptions;
  adminToken: string;
  stores: Stores;
  events: VopEventBus;
  media: LocalMediaRoot;
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
  // What the build opens, in the order it starts; stopped last first by close(), or at once if a
  // later step fails: a desktop shell that retries in the same process finds the data
  // directory's lock, the database and the sweeps let go.
  const parts = new Parts();
  try {
    return await buildServer(input, parts);
  } catch (err) {
    await parts.stop(0).catch(() => undefined);
    throw err;
  }
}

/** The features, each made by its own module and added to `parts` in the order they start. */
async function buildServer(input: ServerOptionsInput, parts: Parts): Promise<VopServer> {
  const options = resolveOptions(input);
  const { log } = options;
  // Read first, so that a missing or short key stops the start before anything is made.
  const backupSealKey = options.backups.sealKeyFile !== undefined ? readSealKey(options.backups.sealKeyFile) : undefined;
  const adminToken = prepareDataDir(options);
  const foundation = await openFoundation(options, parts);
  const { stores, events, media, objects } = foundation;
  const signing = await openSigningKeys(options, foundation, parts);
  const jobs = await openJobQueue(options, foundation, parts);
  // In cluster mode the failure limits and the registration rate count in the shared database.
  const auth = new AuthService(stores, options.auth);
  const apps = new AppService(stores.apps, Date.now, auth);
  const videos = new VideoService(stores.videos, stores.apps, stores.counters, events, options.videos);
  const lifecycle = new VideoLifecycle(stores.videos, events);
  const callbacks = await openCallbacks(options, foundation, jobs);
  // One choice of ffmpeg and ffprobe for intake and transcoding alike (media/ffmpegBinaries.ts).
  const tools = new FfmpegTools({ ffmpegPath: options.processing.ffmpegPath, ffprobePath: options.processing.ffprobePath });
  const processing = createProcessing({ options: options.processing, dataDir: options.dataDir, timeZone: options.timeZone, stores, objects, lifecycle, events, jobs, tools, log });
  // Before the job queue: its stop ends the transcodes, then processing's ends any ffmpeg left.
  parts.add({ name: 'processing', start: () => processing.start(), stop: () => processing.stop() });
  const database = options.databaseUrl ? { url: options.databaseUrl, connectRetry: options.databaseConnectRetry } : undefined;
  const ingest = await createIngest({ options: options.ingest, dataDir: options.dataDir, leaseMs: options.jobLeaseMs, publicUrl: options.publicUrl, auth, stores, media, objects, database, uploadKeys: signing.uploadKeys, lifecycle, events, jobs, tools, log });
  // Every job type's handler, or this does not compile; in the order the types were always registered.
  jobs.registerAll({ ...callbacks.service.jobs, ...ingest.jobs, ...processing.jobs });
  const formatDate = makeLocalDateFormatter(options.timeZone);
  const baseUrl = (req: RequestOrigin): string => options.publicUrl ?? `${req.protocol}://${req.host}`;
  const viewContext = (req: RequestOrigin): ViewContext => ({ baseUrl: baseUrl(req), formatDate });
  const app = createExpressApp();
  const delivery = createDelivery({ options, foundation, mediaAccess: signing.mediaAccess, processing, auth, videos, viewContext, parseQuery: app.get('query parser fn') }, parts);
  // Routes reach services, never stores (issue 11, item 7): the console's are composed here.
  const consoleServices = createConsoleServices({ options, adminToken, consoleKeys: signing.consoleKeys, stores, jobs, media, videoMedia: foundation.videoMedia, objects, lifecycle, videos, processing, tus: ingest.tus, log });
  parts.add({ name: 'the console services', stop: () => consoleServices.close() });
  const isOwnHost = ownHostPredicate({ publicUrl: options.publicUrl, scriptBaseUrl: options.scriptBaseUrl });
  const ownNames = hostCheck({ publicUrl: options.publicUrl, scriptBaseUrl: options.scriptBaseUrl });
  const metrics = createMetrics(options, foundation, { jobs, ingest: ingest.service, storage: consoleServices.storage, gate: consoleServices.gate, ownNames, isOwnHost });
  const backups = createBackups(options, foundation, backupSealKey);
  // The job queue starts after processing queued what start-up found waiting, and stops before.
  parts.add(metrics?.part, jobQueuePart(jobs), { name: 'ingest', start: () => ingest.start(), stop: () => ingest.stop() }, callbacks.part, backups.part);
  const consoleApi = createConsoleApi({
    options, services: consoleServices, apps, events, jobs, processing, viewContext, media: signing.mediaAccess, keys: signing.service, captions: delivery.captions, views: delivery.views,
    backups: backups.service, backupSchedule: backups.schedule, log, boundAddress: () => http.address(),
  });
  const health = createHealth(options, { stores, gate: consoleServices.gate, isOwnHost, jobs, processing, backupSchedule: backups.schedule });
  mountRoutes(app, { options, ownNames, baseUrl, ingest, media, auth, delivery: delivery.routers, metricsRoute: metrics?.route, admin: { consoleApi, consoleServices, apps, callbacks: callbacks.service, jobs, processing } });
  // The hot paths (issue 14), answered ahead of Express: the read calls, /healthz, the widget's files, the media.
  const hot = hotPaths({ exact: { ...delivery.hot.exact, '/healthz': health, ...widgetAssets({ log }) }, prefixes: delivery.hot.prefixes }, log);
  const http = createHttpServer({ options, app, hot, health, metrics, onClosing: () => consoleApi.closeAll() });
  parts.add(http.part);
  let closing: Promise<void> | undefined;
  return {
    app, options, adminToken, stores, events, media, objects, jobs, tus: ingest.tus, metrics: metrics?.metrics,
    metricsAddress: () => metrics?.address(),
    backups: { service: backups.service, schedule: backups.schedule },
    services: { apps, videos, auth, lifecycle, callbacks: callbacks.service, ingest: ingest.service, processing, mediaAccess: signing.mediaAccess },
    async listen(port, host) {
      http.bind(port, host);
      await parts.start();
      return http.address()!;
    },
    close: (graceMs = 10_000) => (closing ??= parts.stop(graceMs)),
  };
}
