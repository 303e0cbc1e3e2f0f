import express, { type Router } from 'express';
import { ApiError } from '../core/errors.js';
import type { UploadMonitor } from '../console/uploadMonitor.js';

/**
 * `GET /admin/api/uploads`: tus uploads that have not finished, with bytes received, rate and
 * time left (console/uploadMonitor.ts). Pulls from a URL are `download` jobs
 * (`GET /admin/api/jobs?type=download`); a multipart upload (`POST /Api/Video/Upload`) finishes
 * within its one request and is not listed. Mounted at `/admin/api` behind requireAdmin.
 *
 * `DELETE /admin/api/uploads/:id`: cancels an unfinished tus upload (a stalled one, issue 13 item
 * 4): its bytes go, its video stays in 8 and can take another upload. 404 if no unfinished upload
 * has that id.
 */
export function adminUploadsRouter(uploads: UploadMonitor): Router {
  const r = express.Router();
  r.get('/uploads', async (_req, res) => {
    res.json({ uploads: await uploads.list() });
  });
  r.delete('/uploads/:id', async (req, res) => {
    if (!(await uploads.cancel(req.params.id))) throw new ApiError('NOT_FOUND', 'no unfinished upload has that id');
    res.json({ cancelled: req.params.id });
  });
  return r;
}
