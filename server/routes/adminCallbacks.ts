import express, { type Router } from 'express';
import type { CallbackService } from '../callbacks/callbackService.js';
import { ApiError } from '../errors.js';

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
    res.json(await callbacks.list(req.params.appId, { limit: limitParam(q.limit), before: optionalString(q.before, 'before') }));
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

function limitParam(v: unknown): number {
  if (v === undefined || v === '') return DEFAULT_LIMIT;
  const n = typeof v === 'string' && /^\d{1,4}$/.test(v) ? Number(v) : NaN;
  if (!(n >= 1 && n <= MAX_LIMIT)) throw new ApiError('INVALID_PAGING', `limit must be a whole number from 1 to ${MAX_LIMIT}`);
  return n;
}

function optionalString(v: unknown, name: string): string | undefined {
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw new ApiError('INVALID_PARAMETER', `${name} must be given once`);
  return v;
}
