/**
 * Transcoding and what delivery needs from it, wired as the server runs them: the `transcode`
 * and `ladder` job types on the queue, the trigger on every move to 5, the sized-cover cache, the binaries.
 */
import path from 'node:path';
import type { VopEventBus } from '../core/events.js';
import type { JobHandlers, JobQueue } from '../jobs/jobQueue.js';
import { killAll, killOrphans } from '../media/ffmpegRunner.js';
import { PauseGroup } from '../media/pauseGroup.js';
import type { ViewContext } from '../videos/videoView.js';
import type { VideoLifecycle } from '../videos/videoLifecycle.js';
import type { MediaStore } from '../storage/media/mediaStore.js';
import { Scratch } from '../storage/scratch.js';
import type { RenditionRecord, Stores, VideoRecord } from '../storage/types.js';
import { CoverSizeCache } from './coverSizeCache.js';
import type { FfmpegTools } from '../media/ffmpegTools.js';
import { makeDateFolder } from './mediaNames.js';
import { HlsPresence, detailExtras, playFiles, type VideoPlayFile } from './playbackView.js';
import { sourcePolicyOf, type ProcessingOptions } from './processingOptions.js';
import { ladderJob } from './ladderJob.js';
import { storyboardJob } from './storyboardJob.js';
import { transcodeJob } from './transcodeJob.js';
import { TranscodeScheduler } from './transcodeScheduler.js';
import { warningLine } from '../core/logLines.js';

export interface ProcessingDeps {
  options: ProcessingOptions;
  dataDir: string;
  /** The server's zone for date folders; absent: the process's local zone. */
  timeZone?: string;
  stores: Stores;
  /** Where media live (local disk or S3): sources read, outputs stored. */
  objects: MediaStore;
  lifecycle: VideoLifecycle;
  events: VopEventBus;
  jobs: JobQueue;
  /** The binaries, shared with ingest's probe. */
  tools: FfmpegTools;
  log: (line: string) => void;
}

export interface Processing {
  options: ProcessingOptions;
  /** The handlers of the transcode, ladder and storyboard jobs. */
  jobs: Pick<JobHandlers, 'transcode' | 'ladder' | 'storyboard'>;
  tools: FfmpegTools;
  scheduler: TranscodeScheduler;
  covers: CoverSizeCache;
  /** Spec 2.5 for the detail response, made of the video's renditions. */
  playFiles(renditions: RenditionRecord[]): VideoPlayFile[];
  /** `HlsURL` for the detail response. */
  detailExtras(video: VideoRecord, ctx: ViewContext): Promise<Record<string, unknown>>;
  /** Whether a video has HLS (the watch page's adaptive playback). */
  hasHls(videoId: string): Promise<boolean>;
  /** Queues the transcodes start-up finds waiting; call once the job queue has started. */
  start(): Promise<void>;
  /**
   * Stops cover work and makes sure no ffmpeg is left: the job queue's stop has already ended
   * the transcodes; the cover runs are aborted and awaited; then `killAll` ends anything else.
   */
  stop(): Promise<void>;
}

/**
 * Servers open in this process. `killAll` reaches every ffmpeg of the process, so it runs only
 * when the last one closes (one vop per process is how it is deployed; tests open several).
 */
let openInstances = 0;

/** The file recording live ffmpeg PIDs, so the next start can end what a crash left running. */
function ffmpegPidFile(dataDir: string): string {
  return path.join(dataDir, 'ffmpeg.pids');
}

export function createProcessing(deps: ProcessingDeps): Processing {
  const { options, stores, objects, log } = deps;
  const scratch = new Scratch(deps.dataDir);
  const pidFile = ffmpegPidFile(deps.dataDir);
  // Before any job runs: an ffmpeg a crash left behind (where the parent-death signal is not
  // available) would otherwise keep writing into files the next attempt writes too.
  const orphans = killOrphans(pidFile);
  if (orphans.length > 0) log(`Processing: killed ${orphans.length} ffmpeg process(es) left by the last run: ${orphans.join(', ')}`);

  openInstances++;
  const { tools } = deps;
  // Ingest probes with these tools too: the allow-list, the limits and the memory cap apply from
  // the first upload (this runs as the server is created, before it listens).
  tools.configure({ policy: sourcePolicyOf(options), memoryLimitBytes: options.memoryLimitBytes });
  const confinement = tools.confinement();
  if (confinement.warning) log(`Processing: ${confinement.warning}`);
  const closing = new AbortController();
  const covers = new CoverSizeCache({
    objects,
    scratch,
    ffmpegPath: async () => (await tools.binaries()).ffmpeg.path,
    pidFile,
    memoryLimitBytes: options.memoryLimitBytes,
    concurrency: options.coverConcurrency,
    signal: closing.signal,
  });
  const hls = new HlsPresence(objects, deps.events);
  // The ladders' ffmpeg stops while a first rendition is made on this node.
  const ladders = new PauseGroup();
  // Registered by the composition with every other type's (JobQueue.registerAll).
  const jobs: Processing['jobs'] = {
    transcode: transcodeJob({
      videos: stores.videos,
      objects,
      scratch,
      lifecycle: deps.lifecycle,
      tools,
      options,
      dateFolder: makeDateFolder(deps.timeZone),
      pidFile,
      hlsChanged: (videoId) => hls.folderChanged(videoId),
      wholeLadderFirst: async (appId) => (await stores.apps.get(appId))?.wholeLadderFirst === true,
      holdLadders: () => ladders.hold(),
      log,
    }),
    ladder: ladderJob({ videos: stores.videos, objects, scratch, tools, options, events: deps.events, dateFolder: makeDateFolder(deps.timeZone), pidFile, pauseGroup: ladders, log }),
    storyboard: storyboardJob({ videos: stores.videos, objects, scratch, tools, options, events: deps.events, pidFile, pauseGroup: ladders, log }),
  };
  const scheduler = new TranscodeScheduler(deps.jobs, stores.jobs, stores.videos, deps.lifecycle, log);
  scheduler.listen(deps.events);

  return {
    options,
    jobs,
    tools,
    scheduler,
    covers,
    playFiles,
    detailExtras: (video, ctx) => detailExtras(hls, (id) => stores.videos.textTracks(id), video, ctx),
    hasHls: (videoId) => hls.has(videoId),
    async start() {
      // Resolve the binaries now, in the background: the first /healthz need not wait for it.
      tools
        .binaries()
        .then(async () => {
          const toneMapping = await tools.toneMapping();
          if (toneMapping.warning) log(warningLine(`Processing: ${toneMapping.warning}.`));
        })
        .catch((err) => log(`Processing: no usable ffmpeg: ${(err as Error).message}`));
      hls.load().catch((err) => log(`Processing: could not list the HLS folder (each detail call asks the disk instead): ${String(err)}`));
      await scheduler.reconcile();
    },
    async stop() {
      if (closing.signal.aborted) return;
      closing.abort(new Error('shutting down'));
      await covers.settled();
      if (--openInstances === 0) await killAll();
    },
  };
}
