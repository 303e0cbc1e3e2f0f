/**
 * Delivery and media access: the API's read calls (spec 4.1, 4.3, 4.4) and their fast path, the
 * video API, captions, the watch page with its view counter, and spec 2.3-2.5's renditions,
 * downloads, covers and HLS answered ahead of Express (issue 14).
 */
import type { Router } from 'express';
import type { AuthService } from '../auth/authService.js';
import type { ServerOptions } from '../config.js';
import type { HotHandler } from '../http/hotPaths.js';
import type { Processing } from '../processing/createProcessing.js';
import { readCallPaths } from '../routes/fastReadPath.js';
import { mediaDelivery } from '../routes/media.js';
import { videoApiRouter, videoReadCalls, type RequestOrigin } from '../routes/videoApi.js';
import { watchRouter } from '../routes/watch.js';
import { CaptionService } from '../services/captionService.js';
import type { MediaAccess } from '../services/mediaAccess.js';
import { MediaDeliveryService } from '../services/mediaDelivery.js';
import type { VideoService } from '../services/videoService.js';
import { ViewCounter } from '../services/viewCounter.js';
import { WatchService } from '../services/watchService.js';
import type { ViewContext } from '../videos/videoView.js';
import type { Foundation } from './foundation.js';
import type { Parts } from './parts.js';

export interface DeliveryDeps {
  options: ServerOptions;
  foundation: Foundation;
  mediaAccess: MediaAccess;
  processing: Processing;
  auth: AuthService;
  videos: VideoService;
  viewContext: (req: RequestOrigin) => ViewContext;
  /** The Express app's query parser, which the fast path parses with too. */
  parseQuery: (query: string) => unknown;
}

export interface Delivery {
  /** The video API's and the watch page's routes, for Express. */
  routers: Router[];
  /** The read calls by exact path, and `/media/` by prefix, answered ahead of Express. */
  hot: { exact: Record<string, HotHandler>; prefixes: Record<string, HotHandler> };
  captions: CaptionService;
  views: ViewCounter;
}

export function createDelivery(deps: DeliveryDeps, parts: Parts): Delivery {
  const { options, mediaAccess, processing, auth, videos, viewContext } = deps;
  const { stores, objects, events } = deps.foundation;
  const { log } = options;
  const captions = new CaptionService({ videos: stores.videos, objects, events });
  const mediaView: Parameters<typeof videoApiRouter>[0]['mediaView'] = (app, ctx) => mediaAccess.view(app, ctx);
  // The API's routes and the fast path share the read calls.
  const reads = videoReadCalls({ videos, playFiles: processing.playFiles, detailExtras: processing.detailExtras, mediaView, ownerView: (appId, ctx) => mediaAccess.viewFor(appId, ctx) });
  const views = new ViewCounter({ store: stores.views, videos: stores.videos, apps: stores.apps, tokens: mediaAccess.tokens, events, log });
  // What was counted since the last write, before the database closes.
  parts.add({ name: 'the view counter', stop: () => views.close() });
  const watch = new WatchService({ videos: stores.videos, apps: stores.apps, tokens: mediaAccess.tokens, hasHls: processing.hasHls });
  const delivery = new MediaDeliveryService({ videos: stores.videos, apps: stores.apps, tokens: mediaAccess.tokens, objects, covers: processing.covers, events });
  return {
    routers: [
      videoApiRouter({ auth, videos, captions, mediaView, viewContext, reads, maxBodyBytes: options.maxBodyBytes, log }),
      // The watch page and its link previews (docs/watch.md).
      watchRouter({ watch, views, viewContext }),
    ],
    hot: {
      exact: readCallPaths({ auth, reads, parseQuery: deps.parseQuery, viewContext, log }),
      prefixes: { '/media/': mediaDelivery({ delivery, sendTimeoutMs: options.sendTimeoutMs, log }) },
    },
    captions,
    views,
  };
}
