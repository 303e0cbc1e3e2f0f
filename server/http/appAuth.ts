import type { IncomingMessage } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import type { AuthService } from '../services/authService.js';
import type { AppRecord } from '../storage/types.js';
import { ParamBag } from './params.js';

/** What the spec API's middleware hands on to its routes. */
export interface ApiLocals {
  app: AppRecord;
  params: ParamBag;
}

/** The calling application and its parameters, set by {@link authenticateApp}. */
export function apiLocals(res: Response): ApiLocals {
  return res.locals as ApiLocals;
}

/**
 * Spec section 5 on every call: AppId, Timestamp and Token are query parameters on GET and form
 * fields on POST (a POST may also carry them in the query; the form wins).
 */
export function authenticateApp(auth: AuthService): RequestHandler {
  return async (req: Request, res, next) => {
    const params = req.method === 'POST' ? new ParamBag(req.body, req.query) : new ParamBag(req.query);
    const app = await authenticateParams(auth, params, req);
    Object.assign(res.locals, { app, params } satisfies ApiLocals);
    next();
  };
}

/** Authenticates the caller from its parameters (spec section 5); also used by fastReadPath.ts. */
export function authenticateParams(auth: AuthService, params: ParamBag, req: IncomingMessage): Promise<AppRecord> {
  return auth.authenticate(
    { appId: params.get('AppId')?.trim(), timestamp: params.get('Timestamp')?.trim(), token: params.get('Token')?.trim() },
    req.socket.remoteAddress ?? 'unknown',
  );
}
