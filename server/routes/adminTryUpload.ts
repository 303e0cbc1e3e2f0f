import express, { type Request, type Router } from 'express';
import type { TryUpload } from '../console/tryUpload.js';
import { knownFields } from '../http/knownFields.js';

/**
 * Admin API: the console's try-out of the upload widget. Mounted at `/admin/api` behind
 * requireAdmin and a JSON parser.
 *
 *   POST /apps/:appId/try-upload {videoId?}   a video registered for the application (or, with
 *        videoId, one of its videos) and the widget's values for it, plus the widget scripts
 */
export function adminTryUploadRouter(tryUpload: TryUpload): Router {
  const r = express.Router();
  r.post('/apps/:appId/try-upload', async (req, res) => {
    const body = knownFields(req.body, ['videoId']);
    res.json({ ...(await tryUpload.values(req.params.appId, body.videoId)), scripts: ownScripts(req) });
  });
  return r;
}

/**
 * The widget scripts at the address the console was opened at, which vop always serves at
 * `/widget/`: the console's Content-Security-Policy allows scripts of its own origin only, and
 * the upload page they open is then this same server, whatever the public or script address.
 */
function ownScripts(req: Request): { window: string; overlay: string } {
  const base = `${req.protocol}://${req.host}/widget/`;
  return { window: `${base}initUploadWidget.js`, overlay: `${base}initUploadABoxWidget.js` };
}
