import express, { type Router } from 'express';
import type { CallbackService } from '../callbacks/callbackService.js';
import { intParam, stringParam } from '../http/params.js';

/** Paging of the delivery log. */
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

/**
 * Admin API: the status callback log and its actions. Mounted at `/admin/api` behind
 * requireAdmin and a JSON parser; an application's callback address is set through
 * `PATCH /admin/api/apps/:appId` (adminApps.ts).
 */
export function adminCallbacksRouter(callbacks: CallbackService): Router {
  const r = express.Router();
  r.get('/apps/:appId/deliveries', async (req, res) => {
    const q = req.query as Record<string, unknown>;
    res.json(await callbacks.list(req.params.appId, { limit: intParam(q.limit, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT), before: stringParam(q.before, 'before') }));
  });
  r.post('/apps/:appId/test-callback', async (req, res) => {
    res.json(await callbacks.sendTest(req.params.appId));
  });
  r.get('/deliveries/:id', async (req, res) => {
    res.json(await callbacks.get(req.params.id));
  });
  r.post('/deliveries/:id/redeliver', async (req, res) => {
    res.status(202).json(await callbacks.redeliver(req.params.id));
  });
  return r;
}
