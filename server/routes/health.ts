import type { IncomingMessage } from 'node:http';
import { VOP_VERSION } from '../core/version.js';
import type { HotHandler } from '../http/hotPaths.js';
import { JSON_CONTENT_TYPE } from '../http/errorResponses.js';

/** What anyone gets: made once. */
const OK = Buffer.from(JSON.stringify({ status: 'ok' }));

/**
 * `GET /healthz`: 200 with JSON once the server is ready to answer. To anyone, only
 * `{status}`: what a supervisor or a load balancer needs. To the admin, the rest too (version,
 * counts, warnings that name paths, the ffmpeg binaries and their paths): details that help
 * whoever probes the server (issue 12). `isAdmin` is the admin API's own check (address rule,
 * Host, the admin token with its failure limit): this is no side door for guessing the token.
 * One of the hot paths (http/hotPaths.ts): load balancers ask it often (issue 14).
 */
export function healthCheck(deps: {
  /** The admin's figures: the videos by status and the storage's warnings. */
  summary: () => Promise<{ videosByStatus: Record<number, number>; warnings: string[] }>;
  startedAt: number;
  /** May answer late: in cluster mode the admin token's failure limit is counted in the database. */
  isAdmin: (req: IncomingMessage) => boolean | Promise<boolean>;
  extra?: () => Promise<Record<string, unknown>>;
}): HotHandler {
  return async (req, res, hot) => {
    let body = OK;
    if (await deps.isAdmin(req)) {
      const { videosByStatus, warnings } = await deps.summary();
      body = Buffer.from(
        JSON.stringify({
          status: 'ok',
          version: VOP_VERSION,
          uptimeSeconds: Math.round((Date.now() - deps.startedAt) / 1000),
          videosByStatus,
          warnings,
          ...(deps.extra ? await deps.extra() : {}),
        }),
      );
    }
    // The headers res.json sends (vop turns off ETag and X-Powered-By); for HEAD, Node leaves out the body.
    hot.answer(res, 200, { 'Content-Type': JSON_CONTENT_TYPE, 'Content-Length': body.length }, body);
  };
}
