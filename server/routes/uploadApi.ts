import express, { type Router } from 'express';
import { ApiError } from '../core/errors.js';
import { envelopeErrorHandler, sendEnvelope } from '../http/errorResponses.js';
import type { IncomingMessage } from 'node:http';

export interface UploadApiDeps {
  /** Receives one multipart upload (ingest/multipartUpload.ts, with the ingest service and the disk it stages on). */
  receive: (req: IncomingMessage) => Promise<{ videoId: string }>;
  log: (line: string) => void;
}

/**
 * `POST /Api/Video/Upload`: the server-side upload (issue 3 item 4), answering the spec's
 * envelope. No body parser here: the handler streams the request itself. Mounted before the
 * spec API router, whose catch-all would answer this path with 404.
 */
export function uploadApiRouter(deps: UploadApiDeps): Router {
  const r = express.Router();
  r.post('/Api/Video/Upload', async (req, res) => {
    const { videoId } = await deps.receive(req);
    sendEnvelope(res, { VideoId: videoId });
  });
  r.all('/Api/Video/Upload', (_req, res) => {
    res.set('Allow', 'POST');
    throw new ApiError('METHOD_NOT_ALLOWED');
  });
  r.use(envelopeErrorHandler(deps.log));
  return r;
}
