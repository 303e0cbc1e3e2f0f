import express, { type Router } from 'express';
import type { UploadMonitor } from '../services/uploadMonitor.js';

/**
 * `GET /admin/api/uploads`: tus uploads that have not finished, with bytes received, rate and
 * time left (services/uploadMonitor.ts). Pulls from a URL are `download` jobs
 * (`GET /admin/api/jobs?type=download`); a multipart upload (`POST /Api/Video/Upload`) finishes
 * within its one request and is not listed. Mounted at `/admin/api` behind requireAdmin.
 */
export function adminUploadsRouter(uploads: UploadMonitor): Router {
  const r = express.Router();
  r.get('/uploads', async (_req, res) => {
    res.json({ uploads: await uploads.list() });
  });
  return r;
}
