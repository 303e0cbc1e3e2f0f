/**
 * The admin endpoints the console needs beyond the apps, callbacks and jobs ones, wired in one
 * place so that app.ts mounts them with a few lines: the login, the events stream, the overview,
 * videos, uploads, settings and the try-out of the upload widget.
 */
import type { AddressInfo } from 'node:net';
import express, { type Request, type Router } from 'express';
import type { ServerOptions } from '../config.js';
import type { VopEventBus } from '../core/events.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { Processing } from '../processing/createProcessing.js';
import type { AppService } from '../services/appService.js';
import type { ConsoleServices } from '../console/consoleServices.js';
import type { ConsoleSessions } from '../console/consoleSessions.js';
import type { ViewContext } from '../videos/videoView.js';
import type { AdminTokenGate } from '../console/adminTokenGate.js';
import { adminEventsRouter } from './adminEvents.js';
import { adminHousekeepingRouter } from './adminHousekeeping.js';
import { adminOverviewRouter } from './adminOverview.js';
import { adminSessionRouter } from './adminSession.js';
import { adminSettingsRouter } from './adminSettings.js';
import { adminUploadsRouter } from './adminUploads.js';
import { adminVideosRouter } from './adminVideos.js';
import { adminKeysRouter } from './adminKeys.js';
import { adminTryUploadRouter } from './adminTryUpload.js';
import { adminBackupsRouter } from './adminBackups.js';
import type { BackupService } from '../backup/backupService.js';
import type { ScheduledBackups } from '../backup/scheduledBackups.js';
import type { MediaAccess } from '../services/mediaAccess.js';
import type { SigningKeysService } from '../services/signingKeys.js';
import type { CaptionService } from '../services/captionService.js';
import type { ViewCounter } from '../services/viewCounter.js';
import { adminViewsRouter } from './adminViews.js';

export interface ConsoleApiDeps {
  options: ServerOptions;
  /** What the endpoints work with (console/consoleServices.ts). */
  services: ConsoleServices;
  apps: Pick<AppService, 'names' | 'counts'>;
  events: VopEventBus;
  jobs: JobQueue;
  processing: Processing;
  viewContext: (req: Request) => ViewContext;
  /** A video's addresses as its application serves them (signed or public). */
  media: MediaAccess;
  /** The signing keys (media addresses, upload credentials). */
  keys: SigningKeysService;
  /** Videos' caption tracks, added and removed from a video's page. */
  captions: CaptionService;
  /** Views and watch time, per video and per day. */
  views: Pick<ViewCounter, 'ofVideo' | 'lastDays'>;
  /** Backups: made, listed and downloaded. */
  backups: BackupService;
  /** The backup schedule, shown with the backups. */
  backupSchedule: ScheduledBackups;
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
  /**
   * Ends the open event streams (call first when the server closes, so that they do not hold its
   * close). The console services behind them are a part of their own, stopped in its turn.
   */
  closeAll(): void;
}

export function createConsoleApi(deps: ConsoleApiDeps): ConsoleApi {
  const { options, services } = deps;
  const { sessions, gate, uploads } = services;
  const events = adminEventsRouter({ events: deps.events, uploads, sessions, log: deps.log });
  const housekeeping = options.housekeeping;

  const router = express.Router();
  router.use(events.router);
  router.use(
    adminOverviewRouter({
      videos: services.videoAdmin,
      apps: deps.apps,
      jobs: services.jobAdmin,
      disk: services.disk,
      tools: deps.processing.tools,
      publicUrl: options.publicUrl,
      scriptBaseUrl: options.scriptBaseUrl,
      boundAddress: deps.boundAddress,
    }),
  );
  router.use(adminVideosRouter({ apps: deps.apps, admin: services.videoAdmin, processing: deps.processing, viewContext: deps.viewContext, media: deps.media, captions: deps.captions, maxBodyBytes: options.maxBodyBytes }));
  router.use(adminViewsRouter(deps.views));
  router.use(adminKeysRouter(deps.keys));
  router.use(adminBackupsRouter({ backups: deps.backups, schedule: deps.backupSchedule, sessions, defaultMedia: deps.backups.defaultMedia, sendTimeoutMs: options.sendTimeoutMs }));
  router.use(adminUploadsRouter(uploads));
  router.use(adminTryUploadRouter(services.tryUpload));
  router.use(adminHousekeepingRouter({ storage: services.storage, expiry: services.expiry, uploads, stalledUploadMinutes: housekeeping.stalledUploadMinutes }));
  router.use(adminSettingsRouter({ options, jobs: deps.jobs, saved: services.saved, boundAddress: deps.boundAddress }));

  return {
    sessions,
    gate,
    session: adminSessionRouter({ gate, allowRemote: options.adminRemote, sessions, publicUrl: options.publicUrl }),
    router,
    closeAll: () => events.closeAll(),
  };
}
