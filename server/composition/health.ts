/**
 * /healthz: a plain "ok" for anyone; for the admin (by the admin API's own checks: its token,
 * from an address and under a name the admin API accepts), the videos by status, the storage's
 * warnings, the node's role, its queue, its storage and its ffmpeg.
 */
import type { IncomingMessage } from 'node:http';
import type express from 'express';
import type { ServerOptions } from '../config.js';
import type { AdminTokenGate } from '../console/adminTokenGate.js';
import { clientAddress } from '../http/clientAddress.js';
import type { HotHandler } from '../http/hotPaths.js';
import type { JobQueue } from '../jobs/jobQueue.js';
import type { Processing } from '../processing/createProcessing.js';
import { healthCheck } from '../routes/health.js';
import { assertAdminAddress } from '../routes/requireAdmin.js';
import type { ScheduledBackups } from '../backup/scheduledBackups.js';
import { storageSummary } from '../storage/storageSummary.js';
import type { Stores } from '../storage/types.js';

export interface HealthDeps {
  stores: Stores;
  gate: AdminTokenGate;
  isOwnHost: (hostHeader: string | undefined) => boolean;
  jobs: JobQueue;
  processing: Processing;
  backupSchedule: ScheduledBackups;
}

export function createHealth(options: ServerOptions, deps: HealthDeps): HotHandler {
  const { stores, jobs } = deps;
  const isAdmin = async (req: IncomingMessage): Promise<boolean> => {
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
    if (bearer === undefined || !deps.isOwnHost(req.headers.host)) return false;
    try {
      assertAdminAddress(req as express.Request, options.adminRemote);
      await deps.gate.check(bearer, clientAddress(req));
      return true;
    } catch {
      return false;
    }
  };
  return healthCheck({
    summary: async () => ({ videosByStatus: await stores.videos.countByStatus(), warnings: [...stores.warnings(), ...deps.backupSchedule.warnings()] }),
    startedAt: Date.now(),
    isAdmin,
    extra: async () => ({ role: options.role, queue: jobs.describe(), storage: storageSummary(options), ffmpeg: await deps.processing.tools.status() }),
  });
}
