import express, { type Request, type Router } from 'express';
import type { Stores } from '../storage/types.js';

const VERSION = process.env.npm_package_version ?? '0.1.0';

/**
 * `GET /healthz`: 200 with JSON once the server is ready to answer. To anyone, only
 * `{status}`: what a supervisor or a load balancer needs. To the admin, the rest too (version,
 * counts, warnings that name paths, the ffmpeg binaries and their paths): details that help
 * whoever probes the server (issue 12). `isAdmin` is the admin API's own check (address rule,
 * Host, the admin token with its failure limit): this is no side door for guessing the token.
 */
export function healthRouter(deps: { stores: Stores; startedAt: number; isAdmin: (req: Request) => boolean; extra?: () => Promise<Record<string, unknown>> }): Router {
  const r = express.Router();
  r.get('/healthz', async (req, res) => {
    if (!deps.isAdmin(req)) {
      res.json({ status: 'ok' });
      return;
    }
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
