import type { AddressInfo } from 'node:net';
import os from 'node:os';
import express, { type Request, type Router } from 'express';
import type { ServedAddress } from '../http/adminApiTypes.js';
import type { JobStore } from '../jobs/types.js';
import type { FfmpegTools } from '../processing/ffmpegTools.js';
import type { LocalMediaStore } from '../storage/mediaStore.js';
import type { AppStore, VideoStore } from '../storage/types.js';

export interface AdminOverviewDeps {
  videos: VideoStore;
  apps: AppStore;
  jobStore: JobStore;
  media: Pick<LocalMediaStore, 'diskUsage'>;
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
    const addresses = servedAddresses(req, deps);
    const [videosByStatus, disk, ffmpeg, apps, live] = await Promise.all([
      deps.videos.countByStatus(),
      deps.media.diskUsage(),
      deps.tools.status(),
      deps.apps.list(),
      deps.jobStore.list({ states: ['queued', 'running'], limit: 100_000 }),
    ]);
    const jobs: Record<string, { queued: number; running: number }> = {};
    for (const j of live) {
      const c = (jobs[j.type] ??= { queued: 0, running: 0 });
      if (j.state === 'running') c.running++;
      else c.queued++;
    }
    res.json({
      addresses,
      widgetScripts: widgetScripts(addresses, deps.scriptBaseUrl),
      videosByStatus,
      disk: { usedBytes: disk.totalBytes - disk.freeBytes, freeBytes: disk.freeBytes, totalBytes: disk.totalBytes },
      ffmpeg,
      apps: { total: apps.length, disabled: apps.filter((a) => a.disabled).length },
      jobs,
    });
  });
  return r;
}

/**
 * The public URL if set; loopback; and each LAN IPv4 address of this machine, with the port the
 * server listens on. A LAN address is marked not served when the server is bound to loopback.
 */
export function servedAddresses(req: Request, deps: Pick<AdminOverviewDeps, 'publicUrl' | 'boundAddress'>): ServedAddress[] {
  const bound = deps.boundAddress();
  const port = bound?.port ?? req.socket.localPort ?? 80;
  const host = bound?.address ?? '0.0.0.0';
  const everywhere = host === '0.0.0.0' || host === '::';
  const out: ServedAddress[] = [];
  const add = (label: string, baseUrl: string, served: boolean) => out.push({ label, baseUrl, apiUrl: `${baseUrl}/Api/Video`, served });
  if (deps.publicUrl) add('Public URL', deps.publicUrl, true);
  add('This machine', `http://127.0.0.1:${port}`, everywhere || host.startsWith('127.') || host === '::1');
  for (const [name, infos] of Object.entries(os.networkInterfaces())) {
    for (const info of infos ?? []) {
      if (info.family !== 'IPv4' || info.internal) continue;
      add(`LAN (${name})`, `http://${info.address}:${port}`, everywhere || host === info.address);
    }
  }
  return out;
}

/** The widget scripts' addresses: the configured one, else one per served address. */
function widgetScripts(addresses: ServedAddress[], scriptBaseUrl: string | undefined): Array<{ label: string; window: string; overlay: string }> {
  const of = (label: string, base: string) => ({ label, window: `${base}initUploadWidget.js`, overlay: `${base}initUploadABoxWidget.js` });
  if (scriptBaseUrl) return [of('Script address', scriptBaseUrl)];
  return addresses.filter((a) => a.served).map((a) => of(a.label, `${a.baseUrl}/widget/`));
}
