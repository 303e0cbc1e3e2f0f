/**
 * The Express app and what it mounts, in the order requests meet them: the console, tus (before
 * any body parser: it reads the request stream itself), the upload API, the widget, the video API
 * and the watch page, the metrics, the admin API, then the spec's 404.
 */
import express, { type Express, type RequestHandler, type Router } from 'express';
import type { AuthService } from '../auth/authService.js';
import type { CallbackService } from '../callbacks/callbackService.js';
import type { ServerOptions } from '../config.js';
import type { ConsoleServices } from '../console/consoleServices.js';
import { ApiError } from '../core/errors.js';
import { adminErrorHandler, envelopeErrorHandler } from '../http/errorResponses.js';
import { noteExpressRoutes } from '../http/routeTemplate.js';
import type { Ingest } from '../ingest/createIngest.js';
import { receiveMultipartUpload } from '../ingest/multipartUpload.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { Processing } from '../processing/createProcessing.js';
import { adminAppsRouter } from '../routes/adminApps.js';
import { adminCallbacksRouter } from '../routes/adminCallbacks.js';
import { adminJobsRouter } from '../routes/adminJobs.js';
import { consoleRouter } from '../routes/console.js';
import type { ConsoleApi } from '../routes/consoleApi.js';
import { requireAdmin } from '../routes/requireAdmin.js';
import { uploadApiRouter } from '../routes/uploadApi.js';
import type { RequestOrigin } from '../routes/videoApi.js';
import { widgetRouter } from '../routes/widget.js';
import type { AppService } from '../services/appService.js';
import type { LocalMediaRoot } from '../storage/media/localMediaRoot.js';

/** An app with vop's settings and no route yet (the fast path reads its query parser). */
export function createExpressApp(): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false); // API answers change with every write; media sets its own validators
  app.set('query parser', 'simple');
  // Each matched route's template, for the request metrics (http/routeTemplate.ts).
  noteExpressRoutes(app.request);
  return app;
}

export interface RoutesDeps {
  options: ServerOptions;
  /** The console and the admin API answer only to this server's own names (DNS rebinding). */
  ownNames: RequestHandler;
  baseUrl: (req: RequestOrigin) => string;
  ingest: Ingest;
  media: LocalMediaRoot;
  auth: AuthService;
  /** The video API's and the watch page's routers (composition/delivery.ts). */
  delivery: Router[];
  metricsRoute?: Router;
  admin: AdminDeps;
}

export function mountRoutes(app: Express, deps: RoutesDeps): void {
  const { options, ingest } = deps;
  const { log } = options;
  // The console (issue 5): the built renderer at /console; it talks only to the admin API.
  app.use('/console', deps.ownNames);
  app.use(consoleRouter());
  app.all('/upload/tus{/*rest}', ingest.tus.handler);
  app.use(uploadApiRouter({ receive: (req) => receiveMultipartUpload(req, { ingest: ingest.service, media: deps.media, auth: deps.auth }), log }));
  // Spec 4.5: the widget scripts and the upload page they open (checked by the ingest service).
  app.use(widgetRouter({ sessions: ingest.service, scriptBaseUrl: (req) => options.scriptBaseUrl ?? `${deps.baseUrl(req)}/widget/`, log }));
  for (const router of deps.delivery) app.use(router);
  if (deps.metricsRoute) app.use(deps.metricsRoute);
  app.use('/admin/api', adminRouter(options, deps.ownNames, deps.admin));
  app.all('/{*rest}', () => {
    throw new ApiError('NOT_FOUND');
  });
  app.use(envelopeErrorHandler(log));
}

export interface AdminDeps {
  consoleApi: ConsoleApi;
  consoleServices: ConsoleServices;
  apps: AppService;
  callbacks: CallbackService;
  jobs: JobQueue;
  processing: Processing;
}

/** The admin API: the console's login, then the admin's checks, then its routes; errors in its own shape. */
function adminRouter(options: ServerOptions, ownNames: RequestHandler, deps: AdminDeps): Router {
  const { consoleApi, consoleServices } = deps;
  const admin = express.Router();
  admin.use(ownNames);
  // The console's login comes before the check: it is how a browser gets its session cookie.
  admin.use('/session', consoleApi.session);
  admin.use(requireAdmin({ gate: consoleApi.gate, allowRemote: options.adminRemote, sessions: consoleApi.sessions, publicUrl: options.publicUrl }));
  admin.use(express.json({ limit: options.maxBodyBytes }));
  admin.use('/apps', adminAppsRouter(deps.apps));
  admin.use(adminCallbacksRouter(deps.callbacks));
  admin.use(adminJobsRouter({ jobs: deps.jobs, jobAdmin: consoleServices.jobAdmin, videoAdmin: consoleServices.videoAdmin, processing: deps.processing }));
  admin.use(consoleApi.router);
  admin.all('/{*rest}', () => {
    throw new ApiError('NOT_FOUND', 'no such admin endpoint');
  });
  admin.use(adminErrorHandler(options.log));
  return admin;
}
