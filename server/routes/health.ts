import express, { type Router } from 'express';
import type { Stores } from '../storage/types.js';

const VERSION = process.env.npm_package_version ?? '0.1.0';

/** `GET /healthz`: 200 with JSON once the server is ready to answer. */
export function healthRouter(deps: { stores: Stores; startedAt: number; extra?: () => Promise<Record<string, unknown>> }): Router {
  const r = express.Router();
  r.get('/healthz', async (_req, res) => {
    res.json({
      status: 'ok',
      version: VERSION,
      uptimeSeconds: Math.round((Date.now() - deps.startedAt) / 1000),
      videosByStatus: await deps.stores.videos.countByStatus(),
      warnings: deps.stores.warnings(),
      ...(deps.extra ? await deps.extra() : {}),
    });
  });
  return r;
}
