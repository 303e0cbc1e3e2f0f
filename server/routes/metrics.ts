import express, { type RequestHandler, type Router } from 'express';
import { adminErrorHandler } from '../http/errorResponses.js';
import type { AdminTokenGate } from '../console/adminTokenGate.js';
import { METRICS_CONTENT_TYPE, type VopMetrics } from '../metrics/vopMetrics.js';
import { requireAdmin } from './requireAdmin.js';

/** Where Prometheus scrapes. */
export const METRICS_PATH = '/metrics';

/**
 * `GET /metrics`: the node's metrics in Prometheus's text format (metrics/vopMetrics.ts), to the
 * admin token only, checked as the admin API checks it: this server's own names (`ownNames`,
 * http/hostCheck.ts), loopback callers unless --admin-remote, `Authorization: Bearer <token>` with
 * the admin token's failure limit (routes/requireAdmin.ts). A console cookie is not enough: a
 * scraper holds the token. Refusals are the admin API's (`{error: {code, message}}`, 401/403/429).
 * The figures name applications' routes and counts, not their data, but whoever may read them
 * learns the traffic: as much the admin's as /healthz's details.
 */
export function metricsRouter(deps: { metrics: VopMetrics; gate: AdminTokenGate; allowRemote: boolean; ownNames: RequestHandler; log: (line: string) => void }): Router {
  const r = express.Router();
  r.get(METRICS_PATH, deps.ownNames, requireAdmin({ gate: deps.gate, allowRemote: deps.allowRemote }), metricsAnswer(deps.metrics));
  // Only this router's route fails into it (Express passes other errors by a router).
  r.use(adminErrorHandler(deps.log));
  return r;
}

/** The answer itself: every metric, never cached. */
export function metricsAnswer(metrics: VopMetrics): RequestHandler {
  return async (_req, res) => {
    const text = await metrics.text();
    res.set({ 'Content-Type': METRICS_CONTENT_TYPE, 'Cache-Control': 'no-store' }).send(text);
  };
}
