import express, { type Router } from 'express';
import type { HousekeepingView } from '../console/housekeepingViews.js';
import type { RegistrationExpiry } from '../console/registrationExpiry.js';
import type { StorageUsage } from '../console/storageUsage.js';
import type { UploadMonitor } from '../console/uploadMonitor.js';

export interface AdminHousekeepingDeps {
  storage: Pick<StorageUsage, 'get'>;
  expiry: Pick<RegistrationExpiry, 'view'>;
  uploads: Pick<UploadMonitor, 'stalled'>;
  /** Minutes without a byte after which an upload counts as stalled. */
  stalledUploadMinutes: number;
}

/**
 * `GET /admin/api/housekeeping`: what the overview shows for tidying up (issue 13, item 4).
 * Mounted at `/admin/api` behind requireAdmin.
 *
 *   {storage: {areas: {sources, play, hls, covers, incoming: {bytes, files}}, totalBytes, countedAt},
 *    registrations: {days, waiting, nextExpiresAt}, stalledUploads: {minutes, uploads: [...]}}
 *
 * Cancelling a stalled upload is `DELETE /admin/api/uploads/:id` (adminUploads.ts).
 */
export function adminHousekeepingRouter(deps: AdminHousekeepingDeps): Router {
  const r = express.Router();
  r.get('/housekeeping', async (_req, res) => {
    const minutes = deps.stalledUploadMinutes;
    const [storage, registrations, stalled] = await Promise.all([deps.storage.get(), deps.expiry.view(), deps.uploads.stalled(minutes * 60_000)]);
    const view: HousekeepingView = { storage, registrations, stalledUploads: { minutes, uploads: stalled } };
    res.json(view);
  });
  return r;
}
