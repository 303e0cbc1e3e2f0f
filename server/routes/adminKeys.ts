import express, { type Router } from 'express';
import { knownFields } from '../http/knownFields.js';
import type { SigningKeysService } from '../services/signingKeys.js';

/**
 * Admin API: the signing keys of media addresses and upload credentials. Mounted at `/admin/api`
 * behind requireAdmin and a JSON parser. Never shows a key's secret.
 *
 *   GET  /keys                       {media: [...], uploads: [...]}, the one that signs first
 *   POST /keys/:purpose/rotate {revokeOld?: boolean}   a new key signs; the old ones check until
 *                                    what they signed has expired, or (revokeOld) not at all
 */
export function adminKeysRouter(keys: SigningKeysService): Router {
  const r = express.Router();
  r.get('/keys', (_req, res) => {
    res.json(keys.list());
  });
  r.post('/keys/:purpose/rotate', async (req, res) => {
    const body = knownFields(req.body, ['revokeOld']);
    res.json({ keys: await keys.rotate(req.params.purpose, body.revokeOld) });
  });
  return r;
}
