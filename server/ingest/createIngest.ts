import type { VopEventBus } from '../events.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { AuthService } from '../services/authService.js';
import type { VideoLifecycle } from '../services/videoLifecycle.js';
import { SourceFileGetType } from '../services/videoStatus.js';
import type { LocalMediaStore } from '../storage/mediaStore.js';
import type { MediaStore } from '../storage/media/mediaStore.js';
import type { Stores } from '../storage/types.js';
import { DOWNLOAD_JOB, downloadJob } from './downloadJob.js';
import type { IngestOptions } from './ingestOptions.js';
import { IngestService } from './ingestService.js';
import { allowEntriesThatNarrowNothing } from './pullPolicy.js';
import { SourceIntake } from './sourceIntake.js';
import type { FfmpegTools } from '../processing/ffmpegTools.js';
import { TusUploads } from './tusUpload.js';
import { UploadCredentials } from './uploadCredential.js';

export interface IngestDeps {
  options: IngestOptions;
  dataDir: string;
  publicUrl?: string;
  auth: AuthService;
  stores: Stores;
  media: LocalMediaStore;
  /** Where sources are kept once complete (local disk or S3). */
  objects: MediaStore;
  lifecycle: VideoLifecycle;
  events: VopEventBus;
  jobs: JobQueue;
  /** Probes stored sources (with the other ffprobe when the chosen one breaks). */
  tools: Pick<FfmpegTools, 'probe'>;
  log: (line: string) => void;
}

/** Ingest as the server runs it: the service, the tus endpoint, and the pull job with its trigger. */
export interface Ingest {
  service: IngestService;
  tus: TusUploads;
  /** Finishes what a stop cut off (stored but unchecked sources), removes expired uploads, starts the sweep timer. */
  start(): Promise<void>;
  stop(): void;
}

/**
 * Builds ingest and wires it: the `download` job type is registered on the queue, and a video
 * registered with SourceFileGetType 2 gets a download job.
 */
export function createIngest(deps: IngestDeps): Ingest {
  const { stores, media, lifecycle, log } = deps;
  const intake = new SourceIntake({ videos: stores.videos, media, objects: deps.objects, lifecycle, probeTimeoutMs: deps.options.probeTimeoutMs, probe: (file, o) => deps.tools.probe(file, o), log });
  const service = new IngestService({
    auth: deps.auth,
    apps: stores.apps,
    videos: stores.videos,
    media,
    intake,
    credentials: UploadCredentials.open(deps.dataDir),
    options: deps.options,
  });
  const tus = new TusUploads({ ingest: service, media, publicUrl: deps.publicUrl, log });

  deps.jobs.register(DOWNLOAD_JOB, downloadJob({ ingest: service, videos: stores.videos, media, lifecycle }));
  for (const cidr of allowEntriesThatNarrowNothing(deps.options.pull.allow)) {
    log(`WARNING: pull.allow ${cidr} holds no loopback or link-local address: the allow list now only opts those in, and no longer keeps pulls inside it. Use pull.deny to keep pulls off other networks.`);
  }
  deps.events.on('video.registered', ({ videoId, sourceType }) => {
    if (sourceType !== SourceFileGetType.Download) return;
    deps.jobs.enqueue(DOWNLOAD_JOB, { videoId }, { videoId }).catch((err) => log(`Ingest: queueing the download of ${videoId} failed: ${String(err)}`));
  });

  return {
    service,
    tus,
    async start() {
      const resumed = await intake.resumeStored();
      if (resumed > 0) log(`Ingest: checked ${resumed} source file(s) stored before the last stop.`);
      await tus.start();
    },
    stop() {
      tus.stop();
    },
  };
}
