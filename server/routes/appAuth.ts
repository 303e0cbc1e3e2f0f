import type { IncomingMessage } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import type { AuthService } from '../auth/authService.js';
import type { AppRecord } from '../storage/types.js';
import { clientAddress } from '../http/clientAddress.js';
import { ParamBag } from '../http/params.js';

/** What the spec API's middleware hands on to its routes. */
export interface ApiLocals {
  app: AppRecord;
  params: ParamBag;
}

/** The calling application and its parameters, set by {@link authenticateApp}. */
export function apiLocals(res: Response): ApiLocals {
  return res.locals as ApiLocals;
}

/** The credential's names (spec section 5): on a POST they are read from the body only. */
const CREDENTIAL_NAMES = new Set(['appid', 'timestamp', 'token']);

/**
 * Spec section 5 on every call: AppId, Timestamp and Token are query parameters on GET and form
 * fields on POST. A POST's other fields may also come in the query (the form wins), but not its
 * credential: a token in a URL ends up in proxy and server logs, so a POST with it only there is
 * refused as missing it (issue 12).
 */
export function authenticateApp(auth: AuthService): RequestHandler {
  return async (req: Request, res, next) => {
    const params = req.method === 'POST' ? new ParamBag(req.body, withoutCredential(req.query)) : new ParamBag(req.query);
    const app = await authenticateParams(auth, params, req);
    Object.assign(res.locals, { app, params } satisfies ApiLocals);
    next();
  };
}

/**
 * Authenticates the caller from its parameters (spec section 5); also used by fastReadPath.ts.
 * Every call through here is an API call: the application's API networks apply.
 */
export function authenticateParams(auth: AuthService, params: ParamBag, req: IncomingMessage): Promise<AppRecord> {
  return auth.authenticate(
    { appId: params.get('AppId')?.trim(), timestamp: params.get('Timestamp')?.trim(), token: params.get('Token')?.trim() },
    clientAddress(req),
    { apiCall: true },
  );
}

function withoutCredential(query: unknown): Record<string, unknown> {
  if (!query || typeof query !== 'object') return {};
  return Object.fromEntries(Object.entries(query as Record<string, unknown>).filter(([k]) => !CREDENTIAL_NAMES.has(k.toLowerCase())));
}
