import express, { type Router } from 'express';
import { knownFields } from '../http/knownFields.js';
import type { AppService } from '../services/appService.js';

/** Admin API: applications (`/admin/api/apps`). Mounted behind requireAdmin and a JSON parser. */
export function adminAppsRouter(apps: AppService): Router {
  const r = express.Router();
  r.post('/', async (req, res) => {
    const body = knownFields(req.body, ['name', 'callbackUrl', 'apiNetworks', 'wholeLadderFirst', 'mediaAccess', 'mediaTtlSeconds']);
    res.status(201).json(await apps.create(body));
  });
  r.get('/', async (_req, res) => {
    res.json({ apps: await apps.list() });
  });
  r.get('/:appId', async (req, res) => {
    res.json(await apps.get(req.params.appId));
  });
  r.patch('/:appId', async (req, res) => {
    res.json(await apps.update(req.params.appId, knownFields(req.body, ['name', 'callbackUrl', 'disabled', 'grants', 'apiNetworks', 'wholeLadderFirst', 'mediaAccess', 'mediaTtlSeconds'])));
  });
  r.post('/:appId/secret', async (req, res) => {
    res.json(await apps.rotateSecret(req.params.appId));
  });
  return r;
}
