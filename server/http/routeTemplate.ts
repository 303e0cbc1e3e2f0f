import type { ServerResponse } from 'node:http';

/**
 * The route template a request was answered by (`/media/play/:date/:file`), noted on its response
 * by whatever matched it ahead of Express (http/hotPaths.ts, routes/media.ts), for the request
 * metrics (metrics/requestDurations.ts), or by Express as it matches a route
 * ({@link noteExpressRoutes}). A label of templates stays a handful of series whatever the paths;
 * a raw path would make one per video, and name the video in the metrics.
 */
const ROUTE = Symbol('vop.route');

interface Noted {
  [ROUTE]?: string;
}

/** Notes `template` as the route `res` answers (the latest note wins: a prefix's handler refines the prefix's). */
export function noteRoute(res: ServerResponse, template: string): void {
  (res as Noted)[ROUTE] = template;
}

/** The template noted for `res`, if any. */
export function notedRoute(res: ServerResponse): string | undefined {
  return (res as Noted)[ROUTE];
}

/** Where the matched route is kept on a request once {@link noteExpressRoutes} has taken `route` over. */
const MATCHED = Symbol('vop.matchedRoute');

/**
 * Has an Express app note each route it matches, as `req.baseUrl` + the route's path
 * (`/admin/api/apps/:appId`), on the response. Express's router sets `req.route` when it matches;
 * an accessor on the app's request prototype (`app.request`, Express's place for what requests
 * share) sees that moment, when `baseUrl` is the matched router's mount path. Read later it is
 * not: a router going out (an error passed on to a handler of its parent) puts its parent's back.
 * Defined once per app: nothing is added per request.
 */
export function noteExpressRoutes(request: object): void {
  Object.defineProperty(request, 'route', {
    configurable: true,
    get(this: { [MATCHED]?: unknown }) {
      return this[MATCHED];
    },
    set(this: { [MATCHED]?: unknown; baseUrl?: string; res?: ServerResponse }, route: { path?: unknown } | undefined) {
      this[MATCHED] = route;
      const path = route?.path;
      if (this.res === undefined || path === undefined) return;
      const base = this.baseUrl ?? '';
      const template = Array.isArray(path) ? path.join('|') : String(path);
      // A router's own root (`/apps` mounted, its route `/`) is the mount path, as requests name it.
      noteRoute(this.res, base !== '' && template === '/' ? base : `${base}${template}`);
    },
  });
}
