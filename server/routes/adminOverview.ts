import type { AddressInfo } from 'node:net';
import express, { type Request, type Router } from 'express';
import type { ServedAddress } from '../http/adminApiTypes.js';
import type { FfmpegTools } from '../media/ffmpegTools.js';
import type { AppService } from '../services/appService.js';
import type { JobAdmin } from '../console/jobAdmin.js';
import type { VideoAdmin } from '../console/videoAdmin.js';
import { servedAddresses } from '../startArgs.js';

export interface AdminOverviewDeps {
  videos: Pick<VideoAdmin, 'countByStatus'>;
  apps: Pick<AppService, 'counts'>;
  jobs: Pick<JobAdmin, 'activeCounts'>;
  /** The data folder's disk (where uploads and scratch files go). */
  disk: () => Promise<{ freeBytes: number; totalBytes: number }>;
  tools: Pick<FfmpegTools, 'status'>;
  publicUrl?: string;
  scriptBaseUrl?: string;
  /** Where the server listens (undefined before listen). */
  boundAddress: () => AddressInfo | undefined;
}

/**
 * `GET /admin/api/overview`: what the console's first page shows. Mounted at `/admin/api`
 * behind requireAdmin.
 *
 *   {addresses: ServedAddress[], widgetScripts: [{label, window, overlay}], videosByStatus,
 *    disk: {usedBytes, freeBytes, totalBytes}, ffmpeg, apps: {total, disabled},
 *    jobs: {<type>: {queued, running}}, dataDir?}
 */
export function adminOverviewRouter(deps: AdminOverviewDeps): Router {
  const r = express.Router();
  r.get('/overview', async (req, res) => {
    const addresses = addressesOf(req, deps);
    const [videosByStatus, disk, ffmpeg, apps, jobs] = await Promise.all([
      deps.videos.countByStatus(),
      deps.disk(),
      deps.tools.status(),
      deps.apps.counts(),
      deps.jobs.activeCounts(),
    ]);
    res.json({
      addresses,
      widgetScripts: widgetScripts(addresses, deps.scriptBaseUrl),
      videosByStatus,
      disk: { usedBytes: disk.totalBytes - disk.freeBytes, freeBytes: disk.freeBytes, totalBytes: disk.totalBytes },
      ffmpeg,
      apps,
      jobs,
    });
  });
  return r;
}

/**
 * The public URL if set, then the addresses of this machine with the port the server listens on
 * (startArgs.ts's servedAddresses, which the start-up banner prints too).
 */
export function addressesOf(req: Request, deps: Pick<AdminOverviewDeps, 'publicUrl' | 'boundAddress'>): ServedAddress[] {
  const bound = deps.boundAddress();
  const port = bound?.port ?? req.socket.localPort ?? 80;
  const entry = (label: string, baseUrl: string, served: boolean): ServedAddress => ({ label, baseUrl, apiUrl: `${baseUrl}/Api/Video`, served });
  return [
    ...(deps.publicUrl ? [entry('Public URL', deps.publicUrl, true)] : []),
    ...servedAddresses(bound?.address ?? '0.0.0.0', port).map((a) => entry(a.label, a.url, a.served)),
  ];
}

/** The widget scripts' addresses: the configured one, else one per served address. */
function widgetScripts(addresses: ServedAddress[], scriptBaseUrl: string | undefined): Array<{ label: string; window: string; overlay: string }> {
  const of = (label: string, base: string) => ({ label, window: `${base}initUploadWidget.js`, overlay: `${base}initUploadABoxWidget.js` });
  if (scriptBaseUrl) return [of('Script address', scriptBaseUrl)];
  return addresses.filter((a) => a.served).map((a) => of(a.label, `${a.baseUrl}/widget/`));
}
