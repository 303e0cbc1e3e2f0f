import express, { type Request, type Response, type Router } from 'express';
import { ApiError } from '../core/errors.js';
import { apiLocals, authenticateApp } from './appAuth.js';
import { envelopeErrorHandler, envelopeJson, sendEnvelope, sendEnvelopeJson } from '../http/errorResponses.js';
import { formBody, formFile } from '../http/formBody.js';
import type { ParamBag } from '../http/params.js';
import type { AuthService } from '../auth/authService.js';
import type { VideoService } from '../services/videoService.js';
import { mediaServer, toCaptionModel, toListItem, toVideoModel, type ViewContext } from '../videos/videoView.js';
import { CAPTION_FILE_MAX_BYTES, type CaptionService } from '../services/captionService.js';
import type { AppRecord, RenditionRecord, VideoRecord } from '../storage/types.js';

/** What a view context is made from: the scheme and the Host a request came with (an Express Request has both). */
export type RequestOrigin = Pick<Request, 'protocol' | 'host'>;

export interface VideoApiDeps {
  auth: AuthService;
  videos: VideoService;
  /** The caption calls (beyond the spec); absent: not routed. */
  captions?: CaptionService;
  /** The read calls, from {@link videoReadCalls}: fastReadPath.ts serves the same ones ahead of Express. */
  reads: VideoReadCalls;
  /** The view for the calling application's answers (signed media addresses); absent: the request's. */
  mediaView?: (app: AppRecord, ctx: ViewContext) => ViewContext;
  /** The view context for this request (base URL from the public URL or the Host used). */
  viewContext: (req: RequestOrigin) => ViewContext;
  maxBodyBytes: number;
  log: (line: string) => void;
}

export interface VideoReadDeps {
  videos: VideoService;
  /** The detail response's VideoPlayFile (spec 2.5) made of a video's renditions; the transcoding service supplies it. */
  playFiles: (renditions: RenditionRecord[]) => Array<{ VideoURL: string; Bitrate: number; BitrateLabel: string }>;
  /** Extra detail fields beyond the spec (the HLS master playlist, for instance). */
  detailExtras?: (video: VideoRecord, ctx: ViewContext) => Promise<Record<string, unknown>>;
  /** The view for the calling application's answers: a signed application's media addresses carry tokens (services/mediaAccess.ts). */
  mediaView?: (app: AppRecord, ctx: ViewContext) => ViewContext;
  /** The same, for the application `appId` (the owner of the videos a granted `aId` lists). */
  ownerView?: (appId: string, ctx: ViewContext) => Promise<ViewContext>;
}

/** One read call: the envelope JSON of its answer to an authenticated application. */
export type ReadCall = (app: AppRecord, params: ParamBag, ctx: ViewContext) => Promise<Buffer>;

/** The paths of the read calls (spec 4.1, 4.3, 4.4), as routed (without regard to case). */
export const READ_PATHS = ['/Api/Video/Get', '/Api/Video/GetList', '/Api/Video/GetUserVideoListByAId', '/Api/Video'] as const;

export type VideoReadCalls = Record<(typeof READ_PATHS)[number], ReadCall>;

/**
 * The read calls of the spec API, apart from any HTTP framework: the routes below answer with
 * them, and so does server/routes/fastReadPath.ts, ahead of Express, on a listening server.
 */
export function videoReadCalls(deps: VideoReadDeps): VideoReadCalls {
  /**
   * List answers by the page the store handed out and the view they were made for. A store hands
   * out the same read-only page until one of the application's videos is written (see
   * VideoStore.listByApp), so a page's 24 KB of JSON is made once, not on every call (about 70 µs
   * of CPU for 50 videos); a new page object, or none cached, simply misses.
   */
  const listJson = new WeakMap<object, { baseUrl: string; formatDate: ViewContext['formatDate']; mediaEpoch: string | undefined; json: Buffer }>();
  const listAnswer = (page: { total: number; items: VideoRecord[] }, ctx: ViewContext): Buffer => {
    const hit = listJson.get(page);
    // A signed application's covers carry tokens: the same answer until their expiry's step moves (mediaEpoch).
    if (hit && hit.baseUrl === ctx.baseUrl && hit.formatDate === ctx.formatDate && hit.mediaEpoch === ctx.mediaEpoch) return hit.json;
    const json = envelopeJson({ Total: page.total, VideoList: page.items.map((v) => toListItem(v, ctx)) });
    listJson.set(page, { baseUrl: ctx.baseUrl, formatDate: ctx.formatDate, mediaEpoch: ctx.mediaEpoch, json });
    return json;
  };
  const viewFor = (app: AppRecord, ctx: ViewContext): ViewContext => (deps.mediaView ? deps.mediaView(app, ctx) : ctx);

  const detail: ReadCall = async (app, params, requestCtx) => {
    const { video, renditions } = await deps.videos.getWithRenditions(app, params.get('Id'));
    const ctx = viewFor(app, requestCtx);
    return envelopeJson({
      VideoModel: toVideoModel(video, ctx),
      MediaSever: mediaServer(ctx, video.id),
      VideoPlayFile: video.status === 1 ? deps.playFiles(renditions) : [],
      ...(deps.detailExtras ? await deps.detailExtras(video, ctx) : {}),
    });
  };

  const list: ReadCall = async (app, params, ctx) => listAnswer(await deps.videos.list(app, params.get('PageIndex'), params.get('PageSize')), viewFor(app, ctx));

  // Another application's videos (aId, by grant) are addressed as their own application serves
  // them; the caller's view is right only for its own, so a list of another's is made under that one's.
  const userList: ReadCall = async (app, params, ctx) => {
    const page = await deps.videos.listByUser(app, params.get('aId'), params.get('createUser'), params.get('PageIndex'), params.get('PageSize'));
    const owner = page.items[0]?.appId;
    return listAnswer(page, owner && owner !== app.appId && deps.ownerView ? await deps.ownerView(owner, ctx) : viewFor(app, ctx));
  };

  return {
    '/Api/Video/Get': detail,
    '/Api/Video/GetList': list,
    '/Api/Video/GetUserVideoListByAId': userList,
    // Spec 4.4 leaves the rule open: a non-empty Id (any case) makes it the detail call.
    '/Api/Video': (app, params, ctx) => (params.has('Id') ? detail : list)(app, params, ctx),
  };
}

/** The spec's HTTP API, section 4.1 to 4.4. Paths match without regard to case. */
export function videoApiRouter(deps: VideoApiDeps): Router {
  const r = express.Router();
  const auth = authenticateApp(deps.auth);

  const register = async (_req: Request, res: Response) => {
    const { app, params } = apiLocals(res);
    const video = await deps.videos.register(app, {
      VideoTitle: params.get('VideoTitle'),
      Description: params.get('Description'),
      Tags: params.get('Tags'),
      Actors: params.get('Actors'),
      CreateUser: params.get('CreateUser'),
      SourceFileGetType: params.get('SourceFileGetType'),
      SourceFilePath: params.get('SourceFilePath'),
    });
    sendEnvelope(res, { VideoId: video.id });
  };

  for (const path of READ_PATHS) {
    const call = deps.reads[path];
    r.get(path, auth, async (req, res) => {
      const { app, params } = apiLocals(res);
      sendEnvelopeJson(res, await call(app, params, deps.viewContext(req)));
    });
  }
  r.post('/Api/Video/Post', formBody(deps.maxBodyBytes), auth, register);

  // Captions (beyond the spec): services/captionService.ts.
  const captions = deps.captions;
  if (captions) {
    const view = (req: Request, app: AppRecord) => (deps.mediaView ? deps.mediaView(app, deps.viewContext(req)) : deps.viewContext(req));
    r.post('/Api/Video/Caption', formBody(deps.maxBodyBytes, { fileBytes: CAPTION_FILE_MAX_BYTES }), auth, async (req, res) => {
      const { app, params } = apiLocals(res);
      const video = await deps.videos.get(app, params.get('VideoId'));
      const file = formFile(req);
      const track = await captions.add(video, { language: params.get('Language'), label: params.get('Label'), bytes: file?.bytes, truncated: file?.truncated === true });
      sendEnvelope(res, { Caption: toCaptionModel(track, view(req, app)) });
    });
    r.get('/Api/Video/Captions', auth, async (req, res) => {
      const { app, params } = apiLocals(res);
      const video = await deps.videos.get(app, params.get('VideoId'));
      const ctx = view(req, app);
      sendEnvelope(res, { Captions: (await captions.list(video)).map((t) => toCaptionModel(t, ctx)) });
    });
    r.post('/Api/Video/Caption/Delete', formBody(deps.maxBodyBytes), auth, async (_req, res) => {
      const { app, params } = apiLocals(res);
      const video = await deps.videos.get(app, params.get('VideoId'));
      const removed = await captions.remove(video, params.get('CaptionId'));
      sendEnvelope(res, { CaptionId: removed.id });
    });
  }

  // RFC 9110 section 15.5.6: a 405 names the methods the path does take (Express answers HEAD
  // with the GET route).
  const known: Array<[path: string, allow: string]> = [
    ['/Api/Video/Get', 'GET, HEAD'],
    ['/Api/Video/GetList', 'GET, HEAD'],
    ['/Api/Video/GetUserVideoListByAId', 'GET, HEAD'],
    ['/Api/Video', 'GET, HEAD'],
    ['/Api/Video/Post', 'POST'],
    ['/Api/Video/Caption', 'POST'],
    ['/Api/Video/Captions', 'GET, HEAD'],
    ['/Api/Video/Caption/Delete', 'POST'],
  ];
  for (const [path, allow] of known) {
    r.all(path, (_req, res) => {
      res.set('Allow', allow);
      throw new ApiError('METHOD_NOT_ALLOWED');
    });
  }
  r.all('/Api/{*rest}', () => {
    throw new ApiError('NOT_FOUND', 'no such API endpoint');
  });
  r.use(envelopeErrorHandler(deps.log));
  return r;
}
