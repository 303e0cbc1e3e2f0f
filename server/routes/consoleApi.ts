/**
 * The admin endpoints the console needs beyond the apps, callbacks and jobs ones, wired in one
 * place so that app.ts mounts them with a few lines: the login, the events stream, the overview,
 * videos, uploads and settings.
 */
import type { AddressInfo } from 'node:net';
import express, { type Request, type Router } from 'express';
import type { ServerOptions } from '../config.js';
import type { VopEventBus } from '../events.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { Processing } from '../processing/createProcessing.js';
import { ConsoleSessions } from '../services/consoleSessions.js';
import { RegistrationExpiry } from '../services/registrationExpiry.js';
import { fileSettings, followSharedSettings, sharedSettings } from '../services/savedSettings.js';
import { StorageUsage } from '../services/storageUsage.js';
import { UploadMonitor, type TusUploadSource } from '../services/uploadMonitor.js';
import { VideoAdmin } from '../services/videoAdmin.js';
import type { VideoLifecycle } from '../services/videoLifecycle.js';
import type { ViewContext } from '../services/videoView.js';
import type { MediaStore } from '../storage/media/mediaStore.js';
import type { LocalMediaStore } from '../storage/mediaStore.js';
import type { VideoMedia } from '../storage/media/videoMedia.js';
import type { Stores } from '../storage/types.js';
import { adminEventsRouter } from './adminEvents.js';
import { adminHousekeepingRouter } from './adminHousekeeping.js';
import { adminOverviewRouter } from './adminOverview.js';
import { adminSessionRouter } from './adminSession.js';
import { AdminTokenGate, DEFAULT_ADMIN_TOKEN_LIMIT } from '../http/adminAuth.js';
import { adminSettingsRouter } from './adminSettings.js';
import { adminUploadsRouter } from './adminUploads.js';
import { adminVideosRouter } from './adminVideos.js';

export interface ConsoleApiDeps {
  options: ServerOptions;
  adminToken: string;
  stores: Stores;
  events: VopEventBus;
  jobs: JobQueue;
  media: LocalMediaStore;
  /** A video's media wherever they live (deletion). */
  videoMedia: VideoMedia;
  /** Media as objects: the overview's storage figures are counted through it (MediaStore.list). */
  objects: Pick<MediaStore, 'list'>;
  lifecycle: VideoLifecycle;
  processing: Processing;
  /** The tus endpoint's store, for the uploads in progress. */
  tus: TusUploadSource;
  viewContext: (req: Request) => ViewContext;
  /** Where the server listens (undefined before listen). */
  boundAddress: () => AddressInfo | undefined;
  log: (line: string) => void;
}

export interface ConsoleApi {
  /** Checked by requireAdmin besides the bearer token. */
  sessions: ConsoleSessions;
  /** The admin token's check with its failure limit, for the login and requireAdmin alike. */
  gate: AdminTokenGate;
  /** `/admin/api/session`: mount before requireAdmin. */
  session: Router;
  /** The rest: mount at `/admin/api` behind requireAdmin and the JSON parser. */
  router: Router;
  /** Ends the open event streams, the sweep of expired registrations and the following of shared settings (call first when the server closes). */
  closeAll(): void;
}

export function createConsoleApi(deps: ConsoleApiDeps): ConsoleApi {
  const { options, stores } = deps;
  // In cluster mode both live in the database (stores.consoleSessions, stores.counters), so a
  // login, a logout and the admin token's failure limit hold across nodes; embedded, in memory.
  const sessions = new ConsoleSessions({}, { store: stores.consoleSessions });
  const gate = new AdminTokenGate(deps.adminToken, DEFAULT_ADMIN_TOKEN_LIMIT, stores.counters);
  const uploads = new UploadMonitor(deps.tus, stores.videos);
  const events = adminEventsRouter({ events: deps.events, uploads, log: deps.log });
  const videoAdmin = new VideoAdmin({
    videos: stores.videos,
    jobStore: stores.jobs,
    jobs: deps.jobs,
    lifecycle: deps.lifecycle,
    media: deps.videoMedia,
    retryTranscode: (job) => deps.processing.scheduler.retry(job),
  });
  // Housekeeping (issue 13, item 4): registrations never uploaded expire through the admin's
  // delete, so the sweep lives with it; the storage figures are counted through the media store.
  const housekeeping = options.housekeeping;
  const expiry = new RegistrationExpiry(
    { videos: stores.videos, admin: videoAdmin, uploading: () => uploads.videosUploading(), log: deps.log },
    housekeeping,
  );
  expiry.start();
  const storage = new StorageUsage(deps.objects, housekeeping.storageCacheMs);
  // The console's saved settings: the data folder's settings.json embedded; in cluster mode the
  // shared database's document, which this node follows whatever its role (a worker runs no
  // console, yet its transcodes at once are a saved setting).
  const saved = stores.sharedSettings ? sharedSettings(stores.sharedSettings) : fileSettings(options.dataDir);
  const unfollow = stores.sharedSettings ? followSharedSettings(stores.sharedSettings, deps.jobs, deps.log) : undefined;

  const router = express.Router();
  router.use(events.router);
  router.use(
    adminOverviewRouter({
      videos: stores.videos,
      apps: stores.apps,
      jobStore: stores.jobs,
      media: deps.media,
      tools: deps.processing.tools,
      publicUrl: options.publicUrl,
      scriptBaseUrl: options.scriptBaseUrl,
      boundAddress: deps.boundAddress,
    }),
  );
  router.use(adminVideosRouter({ videos: stores.videos, apps: stores.apps, admin: videoAdmin, processing: deps.processing, viewContext: deps.viewContext }));
  router.use(adminUploadsRouter(uploads));
  router.use(adminHousekeepingRouter({ storage, expiry, uploads, stalledUploadMinutes: housekeeping.stalledUploadMinutes }));
  router.use(adminSettingsRouter({ options, jobs: deps.jobs, saved, boundAddress: deps.boundAddress }));

  return {
    sessions,
    gate,
    session: adminSessionRouter({ gate, allowRemote: options.adminRemote, sessions }),
    router,
    closeAll: () => {
      events.closeAll();
      void expiry.stop();
      void unfollow?.();
    },
  };
}
