import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type Request, type Response, type Router } from 'express';
import { ApiError } from '../core/errors.js';
import { clientAddress } from '../http/clientAddress.js';
import { logIfUnexpected, toApiError } from '../http/errorResponses.js';
import type { HotHandler } from '../http/hotPaths.js';
import { ParamBag } from '../http/params.js';
import type { IngestService } from '../ingest/ingestService.js';
import { NOT_VIDEO_EXTENSIONS, QUICK_LOOK_BYTES } from '../ingest/quickLook.js';
import { loadAsset, loadScriptBundle, sendAsset, type StaticAsset } from '../widget/staticAsset.js';
import { NOT_A_VIDEO_FOR_PAGE, renderUploadPage, sendUploadPage, sendWidgetError, widgetErrorText, type UploadPageData, type WidgetMode } from '../widget/uploadPage.js';
import { warningLine } from '../core/logLines.js';

/**
 * The repository's `widget/` folder: the sources of the two scripts (src/: the shared part and
 * each form's, assembled at start-up) and the upload page's files, served as they are.
 */
export const WIDGET_DIR = path.resolve(import.meta.dirname, '../../widget');

/** Tuning of the upload page (not spec options: the page's own behaviour). */
export interface UploadPageOptions {
  /** Bytes per PATCH. Large enough for throughput, small enough that a retry resends little. */
  chunkSize: number;
  /** Smallest and largest `chunkSize` a page address may ask for (tests ask for small ones). */
  chunkSizeRange: { min: number; max: number };
  /** Milliseconds before each retry of a failed tus request; then the page reports a network error. */
  retryDelays: number[];
  /** max-age of the scripts and assets: short, so that a new release reaches host pages soon. */
  assetMaxAgeSeconds: number;
}

export const DEFAULT_UPLOAD_PAGE_OPTIONS: UploadPageOptions = {
  chunkSize: 5 * 1024 * 1024,
  chunkSizeRange: { min: 16 * 1024, max: 64 * 1024 * 1024 },
  retryDelays: [0, 1_000, 3_000, 5_000, 10_000, 20_000],
  assetMaxAgeSeconds: 300,
};

export interface WidgetRouterDeps {
  /**
   * The ingest service: openUploadSession checks the widget's values and issues the upload
   * credential; reopenUploadSession reopens a page from its credential (a reload after the
   * spec's timestamp went stale).
   */
  sessions: Pick<IngestService, 'openUploadSession' | 'reopenUploadSession' | 'refuseOnQuickLook'>;
  /** The public address of the scripts (spec {script_url}) for this request, ending in `/`. */
  scriptBaseUrl: (req: Request) => string;
  log: (line: string) => void;
  page?: Partial<UploadPageOptions>;
  /** Where the widget files are (tests); the repository's `widget/` by default. */
  widgetDir?: string;
}

const JS = 'application/javascript; charset=utf-8';

/**
 * Spec 4.5: the two widget scripts at `/widget/`, and the upload page they open. Thin: the checks
 * of the values are the ingest service's, the page is static files plus one JSON block.
 */
export function widgetRouter(deps: WidgetRouterDeps): Router {
  const r = express.Router();
  const dir = deps.widgetDir ?? WIDGET_DIR;
  const page = { ...DEFAULT_UPLOAD_PAGE_OPTIONS, ...deps.page };
  // The scripts and the page's files are served on the hot paths: widgetAssets below.
  const tus = tusClientFile();
  const template = fs.readFileSync(path.join(dir, 'page/upload.html'), 'utf8');

  // Where the scripts are, for people and consoles setting up an application.
  r.get('/widget/', (req, res) => {
    const base = deps.scriptBaseUrl(req);
    res.set('Cache-Control', 'no-cache').json({ window: `${base}initUploadWidget.js`, overlay: `${base}initUploadABoxWidget.js` });
  });

  r.get('/widget/upload', async (req: Request, res: Response) => {
    const q = new ParamBag(req.query);
    let data: UploadPageData;
    try {
      // Our own parameters first (format only, no lookups); then spec 4.5's checks, before anything shows.
      const mode = readMode(q.get('mode'));
      const hostOrigin = readOrigin(q.get('origin'));
      const chunkSize = readChunkSize(q.get('chunkSize'), page);
      if (!tus) throw new ApiError('SERVICE_UNAVAILABLE', 'the upload page is not installed on this server');
      // `session` is what the page put in its own address once it was open (upload.js), so
      // that a reload works past the timestamp's 10 minutes without the spec token in the URL.
      const reopen = q.get('session');
      const session = reopen
        ? await deps.sessions.reopenUploadSession(reopen)
        : await deps.sessions.openUploadSession(
            { appId: q.get('appId'), timestamp: q.get('timestamp'), token: q.get('token') },
            q.get('videoId'),
            { uploadType: q.get('uploadType'), needHandleSepcial: q.get('needHandleSepcial') },
            clientAddress(req),
          );
      data = {
        videoId: session.videoId,
        credential: session.credential,
        expiresAt: session.expiresAt,
        maxBytes: session.maxBytes,
        uploadType: session.uploadType,
        needHandleSepcial: session.keepSource,
        hostOrigin,
        mode,
        // Relative to /widget/upload, so that a path prefix in front of vop is kept.
        endpoint: `..${session.tusPath}`,
        chunkSize,
        retryDelays: page.retryDelays,
        notAVideo: NOT_A_VIDEO_FOR_PAGE,
        quickLook: { extensions: NOT_VIDEO_EXTENSIONS, bytes: QUICK_LOOK_BYTES, report: QUICK_LOOK_REPORT },
      };
    } catch (err) {
      const apiErr = toApiError(err);
      // The path only: the query holds the spec token or the page's credential.
      logIfUnexpected(deps.log, apiErr, err, req.method, req.path);
      // The error page posts the error to the host, if the address named a valid origin.
      sendWidgetError(req, res, apiErr, { hostOrigin: orEmpty(() => readOrigin(q.get('origin'))), mode: orEmpty(() => readMode(q.get('mode'))) || 'window' });
      return;
    }
    sendUploadPage(res, renderUploadPage(template, data), data.mode);
  });

  // The page's report of a file it found not to be a video before sending it (ingest/quickLook.ts):
  // the credential in its header, the file's name in X-File-Name (percent-encoded), its first
  // bytes as the body. Answered like the last tus PATCH of such a file: 422 with the error line.
  r.post(
    '/widget/upload/not-a-video',
    express.raw({ type: () => true, limit: QUICK_LOOK_BYTES }),
    async (req: Request, res: Response) => {
      let refusal: ApiError;
      try {
        const head = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        refusal = await deps.sessions.refuseOnQuickLook(req.get('x-upload-credential') ?? '', readFileName(req.get('x-file-name')), head);
      } catch (err) {
        refusal = toApiError(err);
        logIfUnexpected(deps.log, refusal, err, req.method, req.path);
      }
      res.set({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
      res.status(refusal.def.httpStatus).type('text/plain; charset=utf-8').send(`${widgetErrorText(refusal)}\n`);
    },
  );

  return r;
}

/**
 * Spec 4.5's two widget scripts and the upload page's static files, by path, answered on the hot
 * paths (http/hotPaths.ts, issue 14): every host page that shows a widget loads them.
 */
export function widgetAssets(deps: Pick<WidgetRouterDeps, 'log' | 'page' | 'widgetDir'>): Record<string, HotHandler> {
  const dir = deps.widgetDir ?? WIDGET_DIR;
  const page = { ...DEFAULT_UPLOAD_PAGE_OPTIONS, ...deps.page };
  // Loaded by <script> from any origin: say so (CORP), and allow CORS for pages that use crossorigin.
  const crossOrigin = { 'Cross-Origin-Resource-Policy': 'cross-origin', 'Access-Control-Allow-Origin': '*' };
  const sameOrigin = { 'Cross-Origin-Resource-Policy': 'same-origin' };
  const assets: Record<string, StaticAsset> = {
    // Each form is one self-contained script: the shared part, then the form's own (one source, two scripts).
    '/widget/initUploadWidget.js': loadScriptBundle(widgetSources(dir, 'window'), JS, crossOrigin),
    '/widget/initUploadABoxWidget.js': loadScriptBundle(widgetSources(dir, 'overlay'), JS, crossOrigin),
    '/widget/page/upload.js': loadAsset(path.join(dir, 'page/upload.js'), JS, sameOrigin),
    '/widget/page/failed.js': loadAsset(path.join(dir, 'page/failed.js'), JS, sameOrigin),
    '/widget/page/upload.css': loadAsset(path.join(dir, 'page/upload.css'), 'text/css; charset=utf-8', sameOrigin),
    '/widget/page/failed.css': loadAsset(path.join(dir, 'page/failed.css'), 'text/css; charset=utf-8', sameOrigin),
  };
  const tus = tusClientFile();
  if (tus) assets['/widget/vendor/tus.min.js'] = loadAsset(tus, JS, sameOrigin);
  else deps.log(warningLine('tus-js-client is not installed; the upload page cannot upload (npm install without --omit=dev).'));
  return Object.fromEntries(Object.entries(assets).map(([route, asset]) => [route, (req, res, hot) => sendAsset(req, res, asset, page.assetMaxAgeSeconds, hot.answer)]));
}

/** Where the upload page reports a file it refused on a quick look, relative to the page (a path prefix is kept). */
const QUICK_LOOK_REPORT = 'upload/not-a-video';

/** A file name the page sent percent-encoded, as a name: cut to 255 characters, no control characters. */
function readFileName(header: string | undefined): string {
  let name = header ?? '';
  try {
    name = decodeURIComponent(name);
  } catch {
    // Not percent-encoded: taken as it came.
  }
  return [...name.replace(/[\u0000-\u001f\u007f]/g, '')].slice(0, 255).join('') || 'the file';
}

/** The source files of a widget form's script, in the order they run. */
function widgetSources(dir: string, form: WidgetMode): string[] {
  return [path.join(dir, 'src/shared.js'), path.join(dir, `src/${form}.js`)];
}

/** tus-js-client's browser build, if the package is installed. */
function tusClientFile(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve('tus-js-client/dist/tus.min.js');
  } catch {
    return undefined;
  }
}

/** What `read` answers, or '' if it throws (the error page is being sent for that very value). */
function orEmpty<T extends string>(read: () => T): T | '' {
  try {
    return read();
  } catch {
    return '';
  }
}

function readMode(value: string | undefined): WidgetMode {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'window') return 'window';
  if (v === 'overlay') return 'overlay';
  throw new ApiError('INVALID_PARAMETER', 'mode must be window or overlay');
}

/**
 * The host page's origin, where the page posts its results (postMessage's targetOrigin). Exactly
 * an http(s) origin; absent means the page was opened without a widget and posts nothing.
 */
function readOrigin(value: string | undefined): string {
  const v = (value ?? '').trim();
  if (v === '') return '';
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new ApiError('INVALID_PARAMETER', 'origin must be an http or https origin');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== v) {
    throw new ApiError('INVALID_PARAMETER', 'origin must be an http or https origin');
  }
  return url.origin;
}

function readChunkSize(value: string | undefined, page: UploadPageOptions): number {
  const v = (value ?? '').trim();
  if (v === '') return page.chunkSize;
  const n = Number(v);
  const { min, max } = page.chunkSizeRange;
  if (!/^\d+$/.test(v) || n < min || n > max) throw new ApiError('INVALID_PARAMETER', `chunkSize must be a whole number of bytes from ${min} to ${max}`);
  return n;
}
