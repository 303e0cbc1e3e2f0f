import express, { type Request, type Router } from 'express';
import { ApiError } from '../core/errors.js';
import type { VideoRow } from '../http/adminApiTypes.js';
import { knownFields } from '../http/knownFields.js';
import { intParam, stringParam } from '../http/params.js';
import { COVER_SIZES } from '../media/cover.js';
import { VIDEO_ID_RE } from '../core/videoStatus.js';
import type { Processing } from '../processing/createProcessing.js';
import { MAX_BULK_VIDEOS, type VideoAdmin } from '../console/videoAdmin.js';
import { coverUrl, mediaServer, toCaptionModel, type CaptionModel, type ViewContext } from '../videos/videoView.js';
import { CAPTION_FILE_MAX_BYTES, type CaptionService } from '../services/captionService.js';
import { formBody, formFile } from '../http/formBody.js';
import { VideoStatus } from '../core/videoStatus.js';
import type { AppService } from '../services/appService.js';
import { validMediaTtl, type MediaAccess } from '../services/mediaAccess.js';
import type { VideoRecord, VideoSearch } from '../storage/types.js';

export interface AdminVideosDeps {
  apps: Pick<AppService, 'names'>;
  admin: VideoAdmin;
  processing: Pick<Processing, 'detailExtras'>;
  viewContext: (req: Request) => ViewContext;
  /** The view for a video's application: a signed application's addresses carry tokens (services/mediaAccess.ts). */
  media: Pick<MediaAccess, 'viewFor'>;
  /** A video's caption tracks (services/captionService.ts). */
  captions: Pick<CaptionService, 'list' | 'add' | 'remove'>;
  /** The most a form's fields may take (ServerOptions.maxBodyBytes). */
  maxBodyBytes: number;
}

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;
const MAX_TEXT = 200;

/**
 * Admin API: the console's videos. Mounted at `/admin/api` behind requireAdmin and a JSON parser.
 * The detail (`GET /videos/:id`: record, status history, renditions, jobs) is adminJobs.ts's.
 *
 *   GET    /videos?q=&status=1,7&createUser=&appId=&offset=0&limit=50   newest first, {total, videos}
 *   GET    /videos/:id/playback[?ttl=s]  play and download addresses of each rendition, covers, HLS
 *                                 (a signed application's good for ttl seconds, or its own lifetime)
 *   POST   /videos/:id/retry      7 → 5 (transcode again) or 4 → 2 (download again)
 *   DELETE /videos/:id            status 0, live jobs cancelled, files purged; the record stays
 *   GET    /videos/:id/captions   {captions: [{id, language, label, origin, url}]}, in every status
 *   POST   /videos/:id/captions   multipart: language, label (optional), one file (SRT or WebVTT) →
 *                                 {caption}; refused as the API's POST /Api/Video/Caption is
 *   DELETE /videos/:id/captions/:captionId   {removed: captionId}
 *   POST   /videos/bulk {action: 'delete'|'retry', ids: [...]}   the same for up to 100 videos, each
 *                                 on its own: {results: [{id, ok: true, video, action?} |
 *                                 {id, ok: false, error: {code, message}}]}, in the order given
 */
export function adminVideosRouter(deps: AdminVideosDeps): Router {
  const r = express.Router();
  const appNames = () => deps.apps.names();
  /** A row's view: its application's (a signed application's thumbnails carry tokens). */
  const views = async (videos: VideoRecord[], req: Request): Promise<(v: VideoRecord) => ViewContext> => {
    const base = deps.viewContext(req);
    const byApp = new Map<string, ViewContext>();
    for (const appId of new Set(videos.map((v) => v.appId))) byApp.set(appId, await deps.media.viewFor(appId, base));
    return (v) => byApp.get(v.appId) ?? base;
  };
  const load = async (id: string | undefined): Promise<VideoRecord> => {
    const video = id && VIDEO_ID_RE.test(id.toLowerCase()) ? await deps.admin.get(id.toLowerCase()) : undefined;
    if (!video) throw new ApiError('VIDEO_NOT_FOUND');
    return video;
  };

  r.get('/videos', async (req, res) => {
    const q = req.query as Record<string, unknown>;
    const filter = videoSearchOf(q);
    const offset = intParam(q.offset, 'offset', 0, 0, 10_000_000);
    const limit = intParam(q.limit, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT);
    const [{ total, items }, names] = await Promise.all([deps.admin.search(filter, { offset, limit }), appNames()]);
    const viewOf = await views(items, req);
    res.json({ total, offset, limit, videos: items.map((v) => videoRow(v, names, viewOf(v))) });
  });

  r.get('/videos/:id/playback', async (req, res) => {
    const video = await load(req.params.id);
    const ttlText = stringParam((req.query as Record<string, unknown>).ttl, 'ttl');
    const ttl = ttlText === undefined ? undefined : validMediaTtl('ttl', /^\d{1,6}$/.test(ttlText) ? Number(ttlText) : NaN);
    const ctx = await deps.media.viewFor(video.appId, deps.viewContext(req), ttl);
    const base = mediaServer(ctx, video.id);
    const renditions = (await deps.admin.renditions(video.id)).map((x) => ({
      label: x.label,
      width: x.width,
      height: x.height,
      bitrateKbps: x.bitrateKbps,
      bytes: x.bytes,
      file: x.file,
      playUrl: `${base.PlayURL}${x.file}`,
      downloadUrl: `${base.DownloadURL}${x.file}`,
    }));
    const cover = coverUrl(video, ctx);
    const extras = await deps.processing.detailExtras(video, ctx);
    res.json({
      // Delivery serves a video's files only while it is in status 1.
      playable: video.status === VideoStatus.Normal,
      // A signed application's addresses, and when they stop working (Unix ms); null for public ones.
      signedUntil: ctx.mediaExpiresAt ?? null,
      mediaServer: base,
      renditions,
      coverUrl: cover,
      covers: cover ? Object.entries(COVER_SIZES).map(([t, s]) => ({ t: Number(t), width: s.width, height: s.height, url: `${cover}?t=${t}` })) : [],
      hlsUrl: hlsUrlOf(extras),
      captions: Array.isArray(extras.Captions) ? (extras.Captions as CaptionModel[]).map(captionRow) : [],
      chaptersUrl: typeof extras.ChaptersURL === 'string' ? extras.ChaptersURL : '',
      storyboardUrl: typeof extras.StoryboardURL === 'string' ? extras.StoryboardURL : '',
    });
  });

  const captionsView = async (req: Request, video: VideoRecord) => deps.media.viewFor(video.appId, deps.viewContext(req));
  r.get('/videos/:id/captions', async (req, res) => {
    const video = await load(req.params.id);
    const ctx = await captionsView(req, video);
    res.json({ captions: (await deps.captions.list(video)).map((t) => captionRow(toCaptionModel(t, ctx))) });
  });
  r.post('/videos/:id/captions', formBody(deps.maxBodyBytes, { fileBytes: CAPTION_FILE_MAX_BYTES }), async (req, res) => {
    const video = await load(stringParam(req.params.id, 'id'));
    const body = (req.body ?? {}) as Record<string, unknown>;
    const file = formFile(req);
    const text = (name: string) => (typeof body[name] === 'string' ? (body[name] as string) : undefined);
    const track = await deps.captions.add(video, { language: text('language'), label: text('label'), bytes: file?.bytes, truncated: file?.truncated === true });
    res.json({ caption: captionRow(toCaptionModel(track, await captionsView(req, video))) });
  });
  r.delete('/videos/:id/captions/:captionId', async (req, res) => {
    const video = await load(req.params.id);
    const removed = await deps.captions.remove(video, stringParam(req.params.captionId, 'captionId'));
    res.json({ removed: removed.id });
  });

  r.post('/videos/bulk', async (req, res) => {
    const { action, ids } = bulkRequestOf(req.body);
    // Each id once; one that is not of our form is reported as not found, as the single calls do.
    const requested = [...new Set(ids.map((id) => id.toLowerCase()))];
    const valid = requested.filter((id) => VIDEO_ID_RE.test(id));
    const outcomes = new Map((valid.length > 0 ? await deps.admin.bulk(action, valid) : []).map((o) => [o.id, o]));
    const notFound = new ApiError('VIDEO_NOT_FOUND');
    const names = await appNames();
    const viewOf = await views([...outcomes.values()].flatMap((o) => (o.ok ? [o.video] : [])), req);
    res.json({
      results: requested.map((id) => {
        const o = outcomes.get(id);
        if (!o) return { id, ok: false, error: { code: notFound.code, message: notFound.message } };
        return o.ok ? { id, ok: true, video: videoRow(o.video, names, viewOf(o.video)), ...(o.action ? { action: o.action } : {}) } : { id, ok: false, error: o.error };
      }),
    });
  });

  r.post('/videos/:id/retry', async (req, res) => {
    const video = await load(req.params.id);
    const { video: after, action } = await deps.admin.retry(video.id);
    res.json({ action, video: videoRow(after, await appNames(), (await views([after], req))(after)) });
  });

  r.delete('/videos/:id', async (req, res) => {
    const video = await load(req.params.id);
    const after = await deps.admin.remove(video.id);
    res.json({ video: videoRow(after, await appNames(), (await views([after], req))(after)) });
  });

  return r;
}

/** A caption track as the console's API shows it. */
function captionRow(c: CaptionModel): { id: string; language: string; label: string; origin: 'source' | 'api'; url: string } {
  return { id: c.Id, language: c.Language, label: c.Label, origin: c.Origin, url: c.URL };
}

/** `HlsURL` of the detail response's extras, or '' when there is none. */
function hlsUrlOf(extras: Record<string, unknown>): string {
  return typeof extras.HlsURL === 'string' ? extras.HlsURL : '';
}

/** A video as a row of the console's list. */
function videoRow(v: VideoRecord, names: Map<string, string>, ctx: ViewContext): VideoRow {
  return {
    id: v.id,
    appId: v.appId,
    appName: names.get(v.appId) ?? '',
    title: v.title,
    createUser: v.createUser,
    status: v.status,
    statusReason: v.statusReason,
    sourceType: v.sourceType,
    duration: v.duration,
    coverUrl: coverUrl(v, ctx),
    createdAt: new Date(v.createdAt).toISOString(),
    updatedAt: new Date(v.updatedAt).toISOString(),
  };
}

/** The search `GET /videos` asks for (its paging aside), refused with the parameter at fault. */
function videoSearchOf(q: Record<string, unknown>): VideoSearch {
  const filter: VideoSearch = {};
  const text = stringParam(q.q, 'q')?.trim();
  if (text) {
    if (text.length > MAX_TEXT) throw new ApiError('INVALID_PARAMETER', `q is longer than ${MAX_TEXT} characters`);
    filter.text = text;
  }
  const statuses = stringParam(q.status, 'status');
  if (statuses) {
    filter.statuses = statuses.split(',').map((s) => {
      const n = /^\d$/.test(s) ? Number(s) : NaN;
      if (!(n >= 0 && n <= 8)) throw new ApiError('INVALID_PARAMETER', 'status must be values from 0 to 8, separated by commas');
      return n;
    });
  }
  filter.createUser = stringParam(q.createUser, 'createUser');
  filter.appId = stringParam(q.appId, 'appId');
  return filter;
}

/** The action and ids of `POST /videos/bulk`, refused before any video is touched when either is wrong. */
function bulkRequestOf(reqBody: unknown): { action: 'delete' | 'retry'; ids: string[] } {
  const body = knownFields(reqBody, ['action', 'ids']);
  const action = body.action;
  if (action !== 'delete' && action !== 'retry') throw new ApiError('INVALID_PARAMETER', 'action must be "delete" or "retry"');
  const ids = body.ids;
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_BULK_VIDEOS || !ids.every((id) => typeof id === 'string')) {
    throw new ApiError('INVALID_PARAMETER', `ids must be a list of 1 to ${MAX_BULK_VIDEOS} video ids`);
  }
  return { action, ids: ids as string[] };
}
