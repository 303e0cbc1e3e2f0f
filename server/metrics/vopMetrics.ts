/**
 * What `GET /metrics` answers (routes/metrics.ts), in Prometheus's text format: the request
 * durations (requestDurations.ts), vop's own figures, and the process's (prom-client's default
 * metrics). Names follow OpenTelemetry's conventions as Prometheus exports them; docs/deployment.md
 * ("Metrics") lists each with its labels.
 *
 * Each node answers for itself (cluster mode adds no cross-node sums): what it received, ran and
 * delivered, heard on its own event bus (events, not events.everywhere), so summing over nodes
 * counts each thing once. Two figures are read from what every node shares, and so are the same
 * on every node: the queue (`vop_jobs`, the shared job table) and, with object storage, the
 * media's bytes (`vop_storage_bytes`).
 *
 * A scrape costs no walk of the media and no count of videos: the jobs are counted on their
 * state's index (queued and running jobs only), the uploads under way are this node's ledger, and
 * the storage figures are the console's, counted in the background at most once per their age.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { VopEventBus } from '../core/events.js';
import type { StorageUsageView } from '../console/housekeepingViews.js';
import type { StatusChange } from '../storage/types.js';
import { VideoStatus } from '../core/videoStatus.js';
import { RequestDurations } from './requestDurations.js';

/** Job states `vop_jobs` counts: the live ones. */
const LIVE_JOB_STATES = ['queued', 'running'] as const;
/** How an upload arrived (VopEvents 'upload.received'). */
const UPLOAD_VIAS = ['tus', 'multipart', 'pull'] as const;
/** How a callback's attempt ended (VopEvents 'callback.attempt'). */
const CALLBACK_OUTCOMES = ['delivered', 'failed', 'given-up'] as const;
/** `vop_storage_bytes`' kinds, by the media store's areas (console/storageUsage.ts). */
const STORAGE_KINDS: ReadonlyArray<readonly [kind: string, area: keyof StorageUsageView['areas']]> = [
  ['sources', 'sources'],
  ['renditions', 'play'],
  ['hls', 'hls'],
  ['covers', 'covers'],
  ['uploads', 'incoming'],
];

/** Seconds: a cover takes under one, a pull or a long transcode an hour. */
const JOB_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
/** Seconds from a file's arrival to its first playable rendition. */
const PLAYABLE_BUCKETS = [1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200];

export interface VopMetricsDeps {
  /** This node's bus (not `everywhere`): what happened here. */
  events: VopEventBus;
  /** Queued and running jobs per type (JobStore.countByTypeAndState). */
  jobCounts: (states: Array<(typeof LIVE_JOB_STATES)[number]>) => Promise<Array<{ type: string; state: string; count: number }>>;
  /** The job types this node runs: shown at 0 when none is queued or running, so a series does not come and go. */
  jobTypes: () => string[];
  /** Uploads under way on this node (UploadRoom.uploads). */
  uploadsActive: () => number;
  /** The storage figures (console/storageUsage.ts: a cached count of every media object). */
  storage: () => Promise<StorageUsageView>;
  /** How old the storage figures may grow before a scrape has them counted again (in the background). */
  storageMaxAgeMs: number;
  /** A video's status changes, oldest first: when its file arrived. */
  statusHistory: (videoId: string) => Promise<StatusChange[]>;
  log: (line: string) => void;
  now?: () => number;
}

/** The content type of the answer: Prometheus's text format 0.0.4. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

export class VopMetrics {
  /** Every request's duration, by method, route template and status (fed by the HTTP server). */
  readonly requests = new RequestDurations();
  private readonly registry = new Registry();
  private readonly storageFigures: StorageFigures;
  private readonly stopListening: () => void;

  constructor(private readonly deps: VopMetricsDeps) {
    const now = deps.now ?? Date.now;
    this.storageFigures = new StorageFigures(deps.storage, deps.storageMaxAgeMs, now, deps.log);
    this.stopListening = this.listen(this.defineMetrics(), now);
    // No count at start: the figures are the console's cached ones, and a count made now (of a
    // store still empty) would be what the console's storage view shows for its cache time.
  }

  /**
   * Registers vop's own metrics, in the order a scrape lists them; returns those the bus's events
   * feed (the others are read at each scrape by their `collect`).
   */
  private defineMetrics() {
    const deps = this.deps;
    const registers = [this.registry];
    const jobs = new Gauge({
      name: 'vop_jobs',
      help: 'Jobs queued and running, by type and state (the queue every node shares).',
      labelNames: ['type', 'state'],
      registers,
      collect: async () => {
        const rows = await deps.jobCounts([...LIVE_JOB_STATES]);
        jobs.reset();
        for (const type of deps.jobTypes()) for (const state of LIVE_JOB_STATES) jobs.set({ type, state }, 0);
        for (const r of rows) jobs.set({ type: r.type, state: r.state }, r.count);
      },
    });
    const jobDuration = new Histogram({
      name: 'vop_job_duration_seconds',
      help: 'How long a job attempt ran on this node before it succeeded, by job type.',
      labelNames: ['type'],
      buckets: JOB_BUCKETS,
      registers,
    });
    const timeToPlayable = new Histogram({
      name: 'vop_time_to_playable_seconds',
      help: "From a video's file arriving (stored and found to be a video, status 5) to its first playable rendition (status 1).",
      buckets: PLAYABLE_BUCKETS,
      registers,
    });
    const uploadsActive: Gauge = new Gauge({
      name: 'vop_uploads_active',
      help: 'Uploads under way on this node (tus uploads not finished, expired or ended, multipart bodies being received).',
      registers,
      collect: () => {
        uploadsActive.set(deps.uploadsActive());
      },
    });
    const uploadBytes = new Counter({
      name: 'vop_upload_bytes_total',
      help: "Bytes of video files received and stored on this node, by how they came (tus, multipart, pull).",
      labelNames: ['via'],
      registers,
    });
    const uploadsRefused = new Counter({
      name: 'vop_uploads_refused_total',
      help: 'Files refused or pulls failed on this node, by how they came and the result code.',
      labelNames: ['via', 'code'],
      registers,
    });
    const callbacks = new Counter({
      name: 'vop_callback_deliveries_total',
      help: "Status callback attempts sent from this node, by outcome: delivered, failed (to be tried again), given up.",
      labelNames: ['outcome'],
      registers,
    });
    const recoveries = new Counter({
      name: 'vop_job_recoveries_total',
      help: "Jobs cut off (a stop, a crash, a node gone) whose type's recover ran on this node before they ran again, by type and outcome: recovered, failed (the attempt's leftovers may remain; the log says why).",
      labelNames: ['type', 'outcome'],
      registers,
    });
    const storage = new Gauge({
      name: 'vop_storage_bytes',
      help: 'Bytes of media vop keeps, by kind (sources, renditions, hls, covers, uploads in progress); counted in the background.',
      labelNames: ['kind'],
      registers,
      collect: () => {
        const view = this.storageFigures.peek();
        if (!view) return;
        for (const [kind, area] of STORAGE_KINDS) storage.set({ kind }, view.areas[area].bytes);
      },
    });
    const views = new Counter({
      name: 'vop_views_total',
      help: 'Views counted on this node (a viewer watched a few seconds; docs/watch.md), by application.',
      labelNames: ['app'],
      registers,
    });
    for (const via of UPLOAD_VIAS) uploadBytes.inc({ via }, 0);
    for (const outcome of CALLBACK_OUTCOMES) callbacks.inc({ outcome }, 0);
    return { jobDuration, timeToPlayable, uploadBytes, uploadsRefused, callbacks, recoveries, views };
  }

  /** Feeds the metrics from this node's bus; returns what stops it. */
  private listen(metrics: ReturnType<VopMetrics['defineMetrics']>, now: () => number): () => void {
    const deps = this.deps;
    const { jobDuration, timeToPlayable, uploadBytes, uploadsRefused, callbacks, recoveries, views } = metrics;
    // A job's attempt is timed from its 'running' to its end on this node (the node that ran it
    // sees both); a map of the jobs running here, emptied as they end.
    const running = new Map<string, number>();
    const onJob = ({ jobId, type, state }: { jobId: string; type: string; state: string }) => {
      if (state === 'running') {
        running.set(jobId, now());
        return;
      }
      const started = running.get(jobId);
      if (started === undefined) return;
      running.delete(jobId);
      if (state === 'succeeded') jobDuration.observe({ type }, (now() - started) / 1000);
    };
    const onStatus = ({ videoId, to, from, at }: { videoId: string; to: number; from: number; at: number }) => {
      if (to !== VideoStatus.Normal || from === VideoStatus.Normal) return;
      // When the file arrived is in the status history, which every node shares: the node that
      // made the video playable (a worker, in cluster mode) observes it, once.
      deps.statusHistory(videoId).then(
        (history) => {
          // The latest arrival before this change: a video transcoded again arrived again.
          let arrivedAt: number | undefined;
          for (const c of history) if (c.to === VideoStatus.WaitingForTranscoding && c.at <= at) arrivedAt = c.at;
          if (arrivedAt !== undefined) timeToPlayable.observe(Math.max(0, at - arrivedAt) / 1000);
        },
        (err: unknown) => deps.log(`Metrics: the status history of video ${videoId} could not be read: ${String(err)}`),
      );
    };
    const onReceived = ({ via, bytes }: { via: string; bytes: number }) => uploadBytes.inc({ via }, bytes);
    const onRefused = ({ via, code }: { via: string; code: string }) => uploadsRefused.inc({ via, code });
    const onCallback = ({ outcome }: { outcome: string }) => callbacks.inc({ outcome });
    const onViewed = ({ appId }: { appId: string }) => views.inc({ app: appId });
    const onRecovered = ({ type, outcome }: { type: string; outcome: string }) => recoveries.inc({ type, outcome });
    deps.events.on('job.state', onJob);
    deps.events.on('video.status', onStatus);
    deps.events.on('upload.received', onReceived);
    deps.events.on('upload.refused', onRefused);
    deps.events.on('callback.attempt', onCallback);
    deps.events.on('video.viewed', onViewed);
    deps.events.on('job.recovered', onRecovered);
    return () => {
      deps.events.off('job.state', onJob);
      deps.events.off('video.status', onStatus);
      deps.events.off('upload.received', onReceived);
      deps.events.off('upload.refused', onRefused);
      deps.events.off('callback.attempt', onCallback);
      deps.events.off('video.viewed', onViewed);
      deps.events.off('job.recovered', onRecovered);
    };
  }

  /** Every metric, in Prometheus's text format ({@link METRICS_CONTENT_TYPE}). */
  async text(): Promise<string> {
    const [own, process] = await Promise.all([this.registry.metrics(), processRegistry().metrics()]);
    return `${this.requests.text()}\n${own}\n${process}`;
  }

  /** Stops listening to the bus. */
  close(): void {
    this.stopListening();
  }
}

/**
 * The storage figures as a scrape reads them: the last count, never waited for. When it is older
 * than `maxAgeMs` a new count starts in the background and a later scrape has it. Before the first
 * count ends there are none (the metric has no samples).
 */
class StorageFigures {
  private latest: StorageUsageView | undefined;
  private counting = false;

  constructor(
    private readonly count: () => Promise<StorageUsageView>,
    private readonly maxAgeMs: number,
    private readonly now: () => number,
    private readonly log: (line: string) => void,
  ) {}

  peek(): StorageUsageView | undefined {
    const latest = this.latest;
    if (!this.counting && (latest === undefined || this.now() - Date.parse(latest.countedAt) >= this.maxAgeMs)) {
      this.counting = true;
      this.count().then(
        (view) => {
          this.latest = view;
          this.counting = false;
        },
        (err: unknown) => {
          this.counting = false;
          this.log(`Metrics: the storage figures could not be counted: ${String(err)}`);
        },
      );
    }
    return latest;
  }
}

let processMetrics: Registry | undefined;

/** prom-client's default metrics left out: gauges whose `_total` says counter. */
const LINTED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * The process's own metrics (prom-client's defaults: CPU, memory, heap, event loop lag, GC, open
 * files), in one registry for the process: they describe the process, whichever server in it
 * answers, and prom-client's collectors (an event-loop monitor, a GC observer) are made once.
 */
function processRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics });
    // Gauges named as counters, which `promtool check metrics` flags; the same figures by type
    // (nodejs_active_handles, _requests, _resources) stay, and their sum is the total.
    for (const name of LINTED_DEFAULTS) processMetrics.removeSingleMetric(name);
  }
  return processMetrics;
}
