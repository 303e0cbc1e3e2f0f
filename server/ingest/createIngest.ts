import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { VopEventBus } from '../core/events.js';
import type { JobHandlers, JobQueue } from '../jobs/jobQueue.js';
import type { RetryConfig } from '../core/retry.js';
import type { AuthService } from '../auth/authService.js';
import type { VideoLifecycle } from '../videos/videoLifecycle.js';
import { SourceFileGetType } from '../core/videoStatus.js';
import type { LocalMediaRoot } from '../storage/media/localMediaRoot.js';
import type { MediaStore } from '../storage/media/mediaStore.js';
import type { S3MediaStore } from '../storage/media/s3MediaStore.js';
import type { Stores } from '../storage/types.js';
import { downloadJob, resumeDownloads } from './downloadJob.js';
import type { IngestOptions } from './ingestOptions.js';
import { IngestService } from './ingestService.js';
import { allowEntriesThatNarrowNothing } from './pullPolicy.js';
import { MEDIA_DISK, SharedReservations, nodeDisk } from './sharedReservations.js';
import { SourceIntake } from './sourceIntake.js';
import type { FfmpegTools } from '../media/ffmpegTools.js';
import { TusUploads } from './tus/tusUpload.js';
import { UploadCredentials } from './uploadCredential.js';
import type { KeyRing } from '../keys/keyRing.js';
import { warningLine } from '../core/logLines.js';

export interface IngestDeps {
  options: IngestOptions;
  dataDir: string;
  /** Cluster mode's node lease (ServerOptions.jobLeaseMs): a multipart body's reservation is leased as the node's jobs are. */
  leaseMs: number;
  publicUrl?: string;
  auth: AuthService;
  stores: Stores;
  media: LocalMediaRoot;
  /** Where sources are kept once complete (local disk or S3); with S3, tus uploads under way live there too. */
  objects: MediaStore;
  /** Cluster mode's database (the stores' databaseUrl): tus locks uploads there, so every node sees the lock. */
  database?: { url: string; connectRetry: RetryConfig };
  /** The keys of upload credentials (the 'uploads' ring): the same on every node of a cluster. */
  uploadKeys: KeyRing;
  lifecycle: VideoLifecycle;
  events: VopEventBus;
  jobs: JobQueue;
  /** Probes stored sources (with the other ffprobe when the chosen one breaks). */
  tools: Pick<FfmpegTools, 'probe'>;
  log: (line: string) => void;
}

/**
 * Connections of the tus lock pool: each PATCH or HEAD in flight holds one while it has its
 * upload's lock, plus one that listens; a 21st upload at once waits for one (bounded by the
 * pool's 10 s connection timeout, then 500, which tus clients retry). Kept so that two API nodes and two workers
 * (10 store connections each, and this pool's listener on a worker) stay within PostgreSQL's
 * default max_connections (100); docs/cluster.md says what to raise for more uploads at once.
 */
const TUS_LOCK_CONNECTIONS = 21;

/** Ingest as the server runs it: the service, the tus endpoint, and the pull job with its trigger. */
export interface Ingest {
  service: IngestService;
  tus: TusUploads;
  /** The download job's handler (registered by the composition, JobQueue.registerAll). */
  jobs: Pick<JobHandlers, 'download'>;
  /**
   * Finishes what a stop cut off (stored but unchecked sources, pulls), removes expired uploads,
   * starts the sweep timer. Call once the job queue has started.
   */
  start(): Promise<void>;
  /** Stops the sweep and lets go of the cluster's lock connections. */
  stop(): Promise<void>;
}

/**
 * Builds ingest and wires it: the `download` job type is registered on the queue, and a video
 * registered with SourceFileGetType 2 gets a download job.
 */
export async function createIngest(deps: IngestDeps): Promise<Ingest> {
  const { stores, media, lifecycle, log } = deps;
  // tus's S3 store, loaded only with media in object storage: the embedded default never loads it.
  const S3TusStorage = deps.objects.kind === 's3' ? (await import('./tus/tusS3Storage.js')).S3TusStorage : undefined;
  const intake = new SourceIntake({ videos: stores.videos, media, objects: deps.objects, lifecycle, probeTimeoutMs: deps.options.probeTimeoutMs, probe: (file, o) => deps.tools.probe(file, o), log, events: deps.events });
  const shared = sharedReservations(deps);
  const service = new IngestService({
    auth: deps.auth,
    apps: stores.apps,
    videos: stores.videos,
    media,
    intake,
    credentials: new UploadCredentials(deps.uploadKeys),
    options: deps.options,
    shared,
  });
  const { database } = deps;
  const tus = new TusUploads({
    ingest: service,
    media,
    publicUrl: deps.publicUrl,
    // Cluster mode (issue 11, item 3): uploads under way in the bucket, locked in the database.
    objectStorage:
      S3TusStorage
        ? { s3: (deps.objects as S3MediaStore).options, scratchDir: path.join(deps.dataDir, 'scratch', 'tus'), S3TusStorage }
        : undefined,
    openLocker: database
      ? async () => {
          // Loaded only in cluster mode, as the stores' own PostgreSQL code.
          const { openAdvisoryLocker } = await import('../storage/postgres/advisoryLocker.js');
          return openAdvisoryLocker({ url: database.url, connectRetry: database.connectRetry, maxConnections: TUS_LOCK_CONNECTIONS, log });
        }
      : undefined,
    log,
  });

  const jobs = { download: downloadJob({ ingest: service, videos: stores.videos, media, lifecycle, events: deps.events }) };
  for (const cidr of allowEntriesThatNarrowNothing(deps.options.pull.allow)) {
    log(warningLine(`ingest.pull.allow ${cidr} holds no loopback or link-local address: the allow list now only opts those in, and no longer keeps pulls inside it. Use ingest.pull.deny (the console's Settings, Pull: denied networks) to keep pulls off other networks.`));
  }
  deps.events.on('video.registered', ({ videoId, sourceType }) => {
    if (sourceType !== SourceFileGetType.Download) return;
    deps.jobs.enqueue('download', { videoId }, { videoId }).catch((err) => log(`Ingest: queueing the download of ${videoId} failed: ${String(err)}`));
  });
  // What was registered before this moment has no event still to come to the listener above:
  // start() queues the pulls of those that have no job.
  const listeningSince = Date.now();

  return {
    service,
    tus,
    jobs,
    async start() {
      const resumed = await intake.resumeStored();
      if (resumed > 0) log(`Ingest: checked ${resumed} source file(s) stored before the last stop.`);
      shared.start();
      await tus.start();
      await resumeDownloads({ jobs: deps.jobs, stores, startedAt: listeningSince, log });
    },
    async stop() {
      await tus.stop();
      await shared.stop();
    },
  };
}

/**
 * This node's part in the reservations (issue 12, item 7): every upload's reservation counts
 * against the disk its bytes land on, for every node of a cluster (the embedded mode's one process
 * keeps them in memory). With media in a bucket the media folder is this node's own disk, holding
 * only the multipart bodies it receives; without one, a cluster's media folder is the one every
 * node mounts (--shared-media). Leases are the queue's node lease, so a node that dies loses its
 * multipart reservations as it loses its jobs.
 */
function sharedReservations(deps: IngestDeps): SharedReservations {
  const store = deps.stores.uploadReservations;
  const node = `${os.hostname()}-${crypto.randomBytes(6).toString('hex')}`;
  return new SharedReservations({
    store,
    node,
    mediaDisk: deps.objects.kind === 's3' ? nodeDisk(node) : MEDIA_DISK,
    leaseMs: deps.leaseMs,
    idleMs: deps.options.reservationIdleMs,
    log: deps.log,
  });
}
