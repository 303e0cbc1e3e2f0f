/**
 * The watch page and its link preview (docs/watch.md): `GET /embed/<VideoId>` (HTML for an
 * `<iframe>`), its files under `/embed/assets/`, and `GET /oembed`. Thin: what a page may show is
 * the watch service's, the HTML is server/watch/watchPage.ts's.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type Request, type Response, type Router } from 'express';
import { ApiError } from '../core/errors.js';
import type { RequestOrigin } from './videoApi.js';
import { clientAddress } from '../http/clientAddress.js';
import type { ViewCounter } from '../services/viewCounter.js';
import type { WatchService } from '../services/watchService.js';
import type { ViewContext } from '../videos/videoView.js';
import { readWatchOptions, renderWatchPage, watchPageCsp } from '../watch/watchPage.js';
import { watchLanguage } from '../watch/watchText.js';
import { loadAsset, matches, type StaticAsset } from '../widget/staticAsset.js';
import { WIDGET_DIR } from './widget.js';

export interface WatchRouterDeps {
  watch: WatchService;
  views: Pick<ViewCounter, 'report'>;
  viewContext: (req: RequestOrigin) => ViewContext;
  /** Where the page's files are (tests); the repository's `widget/watch/` by default. */
  assetsDir?: string;
}

/** A message page's HTTP status: the page is still a page, for the frame that shows it. */
const MESSAGE_STATUS = { notFound: 404, refused: 403, expired: 403, notReady: 200, failed: 200 } as const;

/** The page's files: a day in caches (they change with a release, and revalidate by ETag). */
const ASSET_MAX_AGE_SECONDS = 86_400;

export function watchRouter(deps: WatchRouterDeps): Router {
  const r = express.Router();
  const dir = deps.assetsDir ?? path.join(WIDGET_DIR, 'watch');
  const assets: Record<string, StaticAsset> = {
    'watch.js': loadAsset(path.join(dir, 'watch.js'), 'application/javascript; charset=utf-8'),
    'watch.css': loadAsset(path.join(dir, 'watch.css'), 'text/css; charset=utf-8'),
    'hls.min.js': loadAsset(hlsJsFile(), 'application/javascript; charset=utf-8'),
  };

  r.get('/embed/assets/:file', (req: Request, res: Response) => {
    const asset = assets[String(req.params.file)];
    if (!asset) throw new ApiError('NOT_FOUND');
    res.set({ 'Content-Type': asset.contentType, 'Cache-Control': `public, max-age=${ASSET_MAX_AGE_SECONDS}`, ETag: asset.etag, 'X-Content-Type-Options': 'nosniff' });
    if (matches(req.get('if-none-match'), asset.etag)) return void res.status(304).end();
    res.send(asset.body);
  });

  r.get('/embed/:videoId', async (req: Request, res: Response) => {
    const ctx = deps.viewContext(req);
    const token = typeof req.query.t === 'string' ? req.query.t : undefined;
    const answer = await deps.watch.page(String(req.params.videoId), token, ctx);
    const lang = watchLanguage(typeof req.query.lang === 'string' ? req.query.lang : undefined, req.get('accept-language'));
    const options = readWatchOptions(req.query as Record<string, unknown>);
    const pageUrl = answer.kind === 'play' ? answer.video.pageUrl : '';
    const html = renderWatchPage(answer, options, lang, `${ctx.baseUrl}/oembed?url=${encodeURIComponent(pageUrl)}&format=json`);
    res
      .status(answer.kind === 'play' ? 200 : MESSAGE_STATUS[answer.refusal])
      .set({
        'Content-Security-Policy': watchPageCsp(new URL(ctx.baseUrl).origin),
        // A signed page's addresses expire; a public one's may change with its video (a ladder adds rungs).
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
      })
      .type('html')
      .send(html);
  });

  // Views and watch time (services/viewCounter.ts): `{"s": <session>, "w": <seconds watched>}`,
  // sent by navigator.sendBeacon as text/plain (no preflight), or as JSON by any player.
  r.post('/embed/:videoId/views', express.text({ type: () => true, limit: 1024 }), async (req: Request, res: Response) => {
    let body: { s?: unknown; w?: unknown };
    try {
      body = JSON.parse(typeof req.body === 'string' ? req.body : '') as typeof body;
    } catch {
      throw new ApiError('MALFORMED_REQUEST', 'the body must be JSON: {"s": "<session>", "w": <seconds watched>}');
    }
    if (typeof body !== 'object' || body === null) throw new ApiError('MALFORMED_REQUEST', 'the body must be a JSON object');
    await deps.views.report(
      String(req.params.videoId),
      { session: typeof body.s === 'string' ? body.s : '', watched: typeof body.w === 'number' ? body.w : NaN },
      { address: clientAddress(req), userAgent: req.get('user-agent') ?? '' },
      typeof req.query.t === 'string' ? req.query.t : undefined,
    );
    res.status(204).end();
  });

  r.get('/oembed', async (req: Request, res: Response) => {
    const q = req.query as Record<string, unknown>;
    const format = q.format === undefined ? 'json' : q.format;
    if (format !== 'json') throw new ApiError('FORMAT_NOT_SUPPORTED', 'oEmbed is answered in json only');
    if (typeof q.url !== 'string' || q.url === '') throw new ApiError('MALFORMED_REQUEST', 'url is missing: the address of a watch page');
    const size = (v: unknown) => (typeof v === 'string' && /^\d{1,5}$/.test(v) && Number(v) > 0 ? Number(v) : undefined);
    const answer = await deps.watch.oembed(q.url, { width: size(q.maxwidth), height: size(q.maxheight) }, deps.viewContext(req));
    res.set('Cache-Control', 'no-store').json(answer);
  });
  return r;
}

/** hls.js's full build (the light one has no audio-track or subtitle support). */
function hlsJsFile(): string {
  return createRequire(import.meta.url).resolve('hls.js/dist/hls.min.js');
}
