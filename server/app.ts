import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express, { type Express, type Request } from 'express';
import { resolveOptions, type ServerOptions, type ServerOptionsInput } from './config.js';
import { ApiError } from './errors.js';
import { VopEventBus } from './events.js';
import { requireAdmin } from './http/adminAuth.js';
import { adminErrorHandler, envelopeErrorHandler } from './http/errorResponses.js';
import { adminAppsRouter } from './routes/adminApps.js';
import { healthRouter } from './routes/health.js';
import { videoApiRouter } from './routes/videoApi.js';
import { AppService } from './services/appService.js';
import { AuthService } from './services/authService.js';
import { makeLocalDateFormatter } from './services/localTime.js';
import { VideoService } from './services/videoService.js';
import type { ViewContext } from './services/videoView.js';
import { JobQueue } from './jobs/jobQueue.js';
import { VideoLifecycle } from './services/videoLifecycle.js';
import { LocalMediaStore } from './storage/mediaStore.js';
import { openSqlJsStores } from './storage/sqljsStore.js';
import type { Stores } from './storage/types.js';

/** A running vop: listen and close it; its services are there for jobs, the CLI and tests. */
export interface VopServer {
  app: Express;
  options: ServerOptions;
  adminToken: string;
  stores: Stores;
  events: VopEventBus;
  media: LocalMediaStore;
  jobs: JobQueue;
  services: { apps: AppService; videos: VideoService; auth: AuthService; lifecycle: VideoLifecycle };
  /** Starts answering; resolves with the bound address. */
  listen(port: number, host?: string): Promise<AddressInfo>;
  /** Stops answering, lets requests in flight finish (up to `graceMs`), flushes storage. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Builds the server on the embedded defaults (sql.js and local disk under `dataDir`). Knows
 * nothing of Electron: the desktop shell and `npm start` both call this.
 */
export async function createServer(input: ServerOptionsInput): Promise<VopServer> {
  const options = resolveOptions(input);
  const log = options.log;
  fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const adminToken = options.adminToken ?? loadOrCreateAdminToken(options.dataDir);
  const stores = await openSqlJsStores({ dir: options.dataDir, log });
  const events = new VopEventBus();
  const auth = new AuthService(stores.apps, options.auth);
  const apps = new AppService(stores.apps);
  const videos = new VideoService(stores.videos, stores.apps, events, options.videos);
  const formatDate = makeLocalDateFormatter(options.timeZone);
  const media = new LocalMediaStore(options.dataDir);
  const lifecycle = new VideoLifecycle(stores.videos, events);
  const jobs = new JobQueue(stores.jobs, events, log);

  const viewContext = (req: Request): ViewContext => ({
    baseUrl: options.publicUrl ?? `${req.protocol}://${req.host}`,
    formatDate,
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false); // API answers change with every write; media sets its own validators
  app.set('query parser', 'simple');

  app.use(healthRouter({ stores, startedAt: Date.now() }));
  app.use(
    videoApiRouter({
      auth,
      videos,
      viewContext,
      playFiles: async () => [],
      maxBodyBytes: options.maxBodyBytes,
      log,
    }),
  );

  const admin = express.Router();
  admin.use(requireAdmin({ token: adminToken, allowRemote: options.adminRemote }));
  admin.use(express.json({ limit: options.maxBodyBytes }));
  admin.use('/apps', adminAppsRouter(apps));
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
  let closing: Promise<void> | undefined;
  return {
    app,
    options,
    adminToken,
    stores,
    events,
    media,
    jobs,
    services: { apps, videos, auth, lifecycle },
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server = http.createServer(app);
        server.keepAliveTimeout = 65_000;
        server.once('error', reject);
        server.listen(port, host, () => {
          server!.off('error', reject);
          // Jobs start once the server answers: they may need its address (callbacks, tests).
          jobs.start().then(() => resolve(server!.address() as AddressInfo), reject);
        });
      });
    },
    close(graceMs = 10_000) {
      closing ??= (async () => {
        if (server) {
          const s = server;
          const stopped = new Promise<void>((resolve) => s.close(() => resolve()));
          s.closeIdleConnections();
          const timer = setTimeout(() => s.closeAllConnections(), graceMs);
          await stopped;
          clearTimeout(timer);
        }
        await jobs.stop();
        await stores.close();
      })();
      return closing;
    },
  };
}

/**
 * The admin token when none is configured: generated on first start, kept in the data dir,
 * readable by the owner only.
 */
function loadOrCreateAdminToken(dataDir: string): string {
  const file = path.join(dataDir, 'admin-token');
  try {
    const existing = fs.readFileSync(file, 'utf8').trim();
    if (existing.length >= 16) return existing;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const token = crypto.randomBytes(24).toString('base64url');
  fs.writeFileSync(file, `${token}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return token;
}
