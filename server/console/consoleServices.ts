/**
 * What the console's admin endpoints work with, composed from the stores in one place (issue 11,
 * item 7: routes reach services, never stores): the login sessions and the admin token's gate,
 * the uploads in progress, the console's video and job views, housekeeping, and the saved
 * settings. routes/consoleApi.ts and routes/adminJobs.ts take these and no store.
 */
import type { KeyRing } from '../keys/keyRing.js';
import type { ServerOptions } from '../config.js';
import { AdminTokenGate } from './adminTokenGate.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { Processing } from '../processing/createProcessing.js';
import type { MediaStore } from '../storage/media/mediaStore.js';
import type { VideoMedia } from '../storage/media/videoMedia.js';
import type { LocalMediaRoot } from '../storage/media/localMediaRoot.js';
import type { Stores } from '../storage/types.js';
import { ConsoleSessions, sessionSecretKey } from './consoleSessions.js';
import { JobAdmin } from './jobAdmin.js';
import { RegistrationExpiry } from './registrationExpiry.js';
import { followSharedSettings, sharedSettings, type SavedSettings } from '../settings/savedSettings.js';
import { StorageUsage } from './storageUsage.js';
import { UploadMonitor, type TusUploadSource } from './uploadMonitor.js';
import { TryUpload } from './tryUpload.js';
import { VideoAdmin } from './videoAdmin.js';
import type { VideoService } from '../services/videoService.js';
import type { VideoLifecycle } from '../videos/videoLifecycle.js';

export interface ConsoleServicesDeps {
  options: ServerOptions;
  adminToken: string;
  /** The console key ring (keys/keyRing.ts): what the sessions' secrets are made with. */
  consoleKeys: Pick<KeyRing, 'signing'>;
  stores: Stores;
  jobs: JobQueue;
  media: LocalMediaRoot;
  /** A video's media wherever they live (deletion). */
  videoMedia: VideoMedia;
  /** Media as objects: the overview's storage figures are counted through it (MediaStore.list). */
  objects: Pick<MediaStore, 'list'>;
  lifecycle: VideoLifecycle;
  /** Registrations as the spec API makes them (the try-out of the upload widget). */
  videos: VideoService;
  processing: Processing;
  /** The tus endpoint's store, for the uploads in progress. */
  tus: TusUploadSource;
  log: (line: string) => void;
}

export interface ConsoleServices {
  /** Checked by requireAdmin besides the bearer token. */
  sessions: ConsoleSessions;
  /** The admin token's check with its failure limit, for the login and requireAdmin alike. */
  gate: AdminTokenGate;
  uploads: UploadMonitor;
  videoAdmin: VideoAdmin;
  jobAdmin: JobAdmin;
  expiry: RegistrationExpiry;
  storage: StorageUsage;
  saved: SavedSettings;
  /** The try-out of the upload widget: a video registered and its widget values. */
  tryUpload: TryUpload;
  /** The data folder's disk (the overview's figure). */
  disk: () => Promise<{ freeBytes: number; totalBytes: number }>;
  /** Ends the sweep of expired registrations and the following of shared settings. */
  close(): void;
}

export function createConsoleServices(deps: ConsoleServicesDeps): ConsoleServices {
  const { options, stores } = deps;
  // Sessions live in the database (stores.consoleSessions), so a login outlasts a restart and, in
  // cluster mode, a login, a logout and the admin token's failure limit (stores.counters) hold
  // across nodes.
  // Every node makes the same key from the console key ring and the admin token: a session's
  // secret checks on any of them. Made again only when the ring's key changes (a rotation).
  let made: { ring: Buffer; key: Buffer } | undefined;
  const secretKey = () => {
    const ring = deps.consoleKeys.signing().secret;
    if (made?.ring !== ring) made = { ring, key: sessionSecretKey(ring, deps.adminToken) };
    return made.key;
  };
  const sessions = new ConsoleSessions({}, { store: stores.consoleSessions, secretKey });
  const gate = new AdminTokenGate(deps.adminToken, stores.counters);
  const uploads = new UploadMonitor(deps.tus, stores.videos);
  const videoAdmin = new VideoAdmin({
    videos: stores.videos,
    jobStore: stores.jobs,
    jobs: deps.jobs,
    lifecycle: deps.lifecycle,
    media: deps.videoMedia,
    retryTranscode: (job) => deps.processing.scheduler.retry(job),
    ladder: () => deps.processing.options.ladder,
  });
  // Housekeeping (issue 13, item 4): registrations never uploaded expire through the admin's
  // delete, so the sweep lives with it; the storage figures are counted through the media store.
  const expiry = new RegistrationExpiry(
    { videos: stores.videos, admin: videoAdmin, uploading: () => uploads.videosUploading(), log: deps.log },
    options.housekeeping,
  );
  expiry.start();
  // The console's saved settings: the data folder's settings.json embedded; in cluster mode the
  // shared database's document, which this node follows whatever its role (a worker runs no
  // console, yet its transcodes at once are a saved setting).
  const saved = sharedSettings(stores.sharedSettings);
  const unfollow = followSharedSettings(stores.sharedSettings, { jobs: deps.jobs, options }, deps.log);
  return {
    sessions,
    gate,
    uploads,
    videoAdmin,
    jobAdmin: new JobAdmin(stores.jobs),
    expiry,
    storage: new StorageUsage(deps.objects, options.housekeeping.storageCacheMs),
    saved,
    tryUpload: new TryUpload({ apps: stores.apps, videos: deps.videos, maxClockSkewSeconds: options.auth.maxClockSkewSeconds }),
    disk: () => deps.media.diskUsage(),
    close: () => {
      void expiry.stop();
      void unfollow();
    },
  };
}
