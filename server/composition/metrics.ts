/**
 * The metrics (GET /metrics, and a loopback port of their own when metrics.port is set): fed by
 * this node's events; the figures read at a scrape are the cheap ones (metrics/vopMetrics.ts).
 * Absent with the metrics off (metrics.enabled false).
 */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler, Router } from 'express';
import type { ServerOptions } from '../config.js';
import type { AdminTokenGate } from '../console/adminTokenGate.js';
import type { StorageUsage } from '../console/storageUsage.js';
import type { IngestService } from '../ingest/ingestService.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import { listenMetricsPort } from '../metrics/metricsPort.js';
import { VopMetrics } from '../metrics/vopMetrics.js';
import { metricsRouter } from '../routes/metrics.js';
import type { Foundation } from './foundation.js';
import type { Part } from './parts.js';

export interface MetricsDeps {
  jobs: JobQueue;
  ingest: IngestService;
  storage: StorageUsage;
  /** The admin token's check, as the admin API has it. */
  gate: AdminTokenGate;
  /** The main port's own-names check (DNS rebinding), and the metrics port's. */
  ownNames: RequestHandler;
  isOwnHost: (hostHeader: string | undefined) => boolean;
}

export interface Metrics {
  metrics: VopMetrics;
  /** `GET /metrics` on the main port, behind the admin's checks. */
  route: Router;
  /** Where the loopback metrics port listens, once listening; absent without one. */
  address(): AddressInfo | undefined;
  /** Listens on the metrics port (a port taken fails the start); closes it and stops counting. */
  part: Part;
}

export function createMetrics(options: ServerOptions, { events, stores }: Foundation, deps: MetricsDeps): Metrics | undefined {
  if (!options.metrics.enabled) return undefined;
  const { log } = options;
  const { jobs } = deps;
  const metrics = new VopMetrics({
    events,
    jobCounts: (states) => stores.jobs.countByTypeAndState(states),
    jobTypes: () => jobs.describe().runs,
    uploadsActive: () => deps.ingest.room.uploads.underWay(),
    storage: () => deps.storage.get(),
    storageMaxAgeMs: options.housekeeping.storageCacheMs,
    statusHistory: (videoId) => stores.videos.statusHistory(videoId),
    log,
  });
  const { port } = options.metrics;
  let server: http.Server | undefined;
  return {
    metrics,
    route: metricsRouter({ metrics, gate: deps.gate, allowRemote: options.adminRemote, ownNames: deps.ownNames, log }),
    address: () => server?.address() as AddressInfo | undefined,
    part: {
      name: 'the metrics',
      start: async () => {
        if (port !== undefined) server = await listenMetricsPort(metrics, port, log, deps.isOwnHost);
      },
      stop: async () => {
        if (server) {
          const s = server;
          const stopped = new Promise<void>((resolve) => s.close(() => resolve()));
          s.closeAllConnections(); // a scrape is short; a scraper's kept-alive connection would hold the close
          await stopped;
        }
        metrics.close();
      },
    },
  };
}
