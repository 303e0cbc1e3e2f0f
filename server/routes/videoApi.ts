import express, { type Request, type Response, type Router } from 'express';
import { ApiError } from '../errors.js';
import { apiLocals, authenticateApp } from '../http/appAuth.js';
import { envelopeErrorHandler, sendEnvelope } from '../http/errorResponses.js';
import { formBody } from '../http/formBody.js';
import type { AuthService } from '../services/authService.js';
import type { VideoService } from '../services/videoService.js';
import { mediaServer, toListItem, toVideoModel, type ViewContext } from '../services/videoView.js';

export interface VideoApiDeps {
  auth: AuthService;
  videos: VideoService;
  /** The view context for this request (base URL from the public URL or the Host used). */
  viewContext: (req: Request) => ViewContext;
  /** Renditions for the detail response (spec 2.5); the transcoding service supplies them. */
  playFiles: (videoId: string) => Promise<Array<{ VideoURL: string; Bitrate: number; BitrateLabel: string }>>;
  /** Extra detail fields beyond the spec (the HLS master playlist, for instance). */
  detailExtras?: (videoId: string, ctx: ViewContext) => Promise<Record<string, unknown>>;
  maxBodyBytes: number;
  log: (line: string) => void;
}

/** The spec's HTTP API, section 4.1 to 4.4. Paths match without regard to case. */
export function videoApiRouter(deps: VideoApiDeps): Router {
  const r = express.Router();
  const auth = authenticateApp(deps.auth);

  const detail = async (req: Request, res: Response) => {
    const { app, params } = apiLocals(res);
    const video = await deps.videos.get(app, params.get('Id'));
    const ctx = deps.viewContext(req);
    sendEnvelope(res, {
      VideoModel: toVideoModel(video, ctx),
      MediaSever: mediaServer(ctx),
      VideoPlayFile: video.status === 1 ? await deps.playFiles(video.id) : [],
      ...(deps.detailExtras ? await deps.detailExtras(video.id, ctx) : {}),
    });
  };

  const list = async (req: Request, res: Response) => {
    const { app, params } = apiLocals(res);
    const { total, items } = await deps.videos.list(app, params.get('PageIndex'), params.get('PageSize'));
    const ctx = deps.viewContext(req);
    sendEnvelope(res, { Total: total, VideoList: items.map((v) => toListItem(v, ctx)) });
  };

  const userList = async (req: Request, res: Response) => {
    const { app, params } = apiLocals(res);
    const { total, items } = await deps.videos.listByUser(app, params.get('aId'), params.get('createUser'), params.get('PageIndex'), params.get('PageSize'));
    const ctx = deps.viewContext(req);
    sendEnvelope(res, { Total: total, VideoList: items.map((v) => toListItem(v, ctx)) });
  };

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

  r.get('/Api/Video/Get', auth, detail);
  r.get('/Api/Video/GetList', auth, list);
  r.get('/Api/Video/GetUserVideoListByAId', auth, userList);
  // Spec 4.4 leaves the rule open: a non-empty Id (any case) makes it the detail call.
  r.get('/Api/Video', auth, (req, res) => (apiLocals(res).params.has('Id') ? detail(req, res) : list(req, res)));
  r.post('/Api/Video/Post', formBody(deps.maxBodyBytes), auth, register);

  // RFC 9110 section 15.5.6: a 405 names the methods the path does take (Express answers HEAD
  // with the GET route).
  const known: Array<[path: string, allow: string]> = [
    ['/Api/Video/Get', 'GET, HEAD'],
    ['/Api/Video/GetList', 'GET, HEAD'],
    ['/Api/Video/GetUserVideoListByAId', 'GET, HEAD'],
    ['/Api/Video', 'GET, HEAD'],
    ['/Api/Video/Post', 'POST'],
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
