import type { TextTrackRecord, VideoRecord } from '../storage/types.js';

/** What turns stored records into the spec's JSON: the base addresses and the date format. */
export interface ViewContext {
  /** Absolute base of this server as the caller should see it, without a trailing slash. */
  baseUrl: string;
  formatDate: (ms: number) => string;
  /**
   * Where a video's media are served from, without a trailing slash: for an application that
   * serves signed addresses, `<baseUrl>/media/s/<token>` (keys/mediaTokens.ts). Absent: the public
   * `<baseUrl>/media`.
   */
  mediaPrefix?: (videoId: string) => string;
  /** The token {@link mediaPrefix} puts in a video's addresses (it opens its media); absent for public ones. */
  mediaToken?: (videoId: string) => string;
  /** The same for a video's cover, whose token opens the cover only; absent: {@link mediaPrefix}'s. */
  coverPrefix?: (videoId: string) => string;
  /** Changes whenever {@link mediaPrefix}'s answers do: what keeps answers made with it compares it. */
  mediaEpoch?: string;
  /** When the addresses {@link mediaPrefix} makes stop working (Unix ms); absent for public ones. */
  mediaExpiresAt?: number;
}

/** Where `videoId`'s media are served from in `ctx` ({@link ViewContext.mediaPrefix}). */
export function mediaPrefix(ctx: ViewContext, videoId: string): string {
  return ctx.mediaPrefix ? ctx.mediaPrefix(videoId) : `${ctx.baseUrl}/media`;
}

/**
 * The address of a video's watch page (routes/watch.ts), beyond the spec: a signed application's
 * carries the video's media token, which the page opens and plays with.
 */
export function watchPageUrl(videoId: string, ctx: ViewContext): string {
  return `${ctx.baseUrl}/embed/${videoId}${ctx.mediaToken ? `?t=${encodeURIComponent(ctx.mediaToken(videoId))}` : ''}`;
}

/** Spec 2.2, as in list responses (no Duration). */
export interface VideoListItem {
  Id: string;
  VideoTitle: string;
  Description: string;
  Tags: string;
  Actors: string;
  Status: number;
  CreateDate: string;
  CreateUser: string;
  PicSavePath: string;
}

/** Spec 2.2 as in the detail response: with Duration, in whole seconds. */
export interface VideoModel extends VideoListItem {
  Duration: number;
}

/** Where a video's cover is served (spec 2.3 appends `?t=<n>` to it); empty until there is one. */
export function coverUrl(v: VideoRecord, ctx: ViewContext): string {
  return v.coverFile ? `${ctx.coverPrefix ? ctx.coverPrefix(v.id) : mediaPrefix(ctx, v.id)}/cover/${v.id}.jpg` : '';
}

export function toListItem(v: VideoRecord, ctx: ViewContext): VideoListItem {
  return {
    Id: v.id,
    VideoTitle: v.title,
    Description: v.description,
    Tags: v.tags,
    Actors: v.actors,
    Status: v.status,
    CreateDate: ctx.formatDate(v.createdAt),
    CreateUser: v.createUser,
    PicSavePath: coverUrl(v, ctx),
  };
}

export function toVideoModel(v: VideoRecord, ctx: ViewContext): VideoModel {
  return { ...toListItem(v, ctx), Duration: v.duration };
}

/**
 * Spec 2.4 (`MediaSever`, spelled as the spec spells it): base addresses that `videoId`'s
 * VideoURLs are appended to (a signed application's carry the video's token).
 */
export function mediaServer(ctx: ViewContext, videoId: string): { PlayURL: string; MobilePlayURL: string; DownloadURL: string } {
  const prefix = mediaPrefix(ctx, videoId);
  return {
    PlayURL: `${prefix}/play/`,
    MobilePlayURL: `${prefix}/play/`,
    DownloadURL: `${prefix}/download/`,
  };
}

/** One caption track as the API shows it (beyond the spec; services/captionService.ts). */
export interface CaptionModel {
  Id: string;
  /** BCP-47. */
  Language: string;
  Label: string;
  /** "source": from a subtitle stream of the uploaded file; "api": added by the application. */
  Origin: 'source' | 'api';
  /** The whole WebVTT file, served while the video is playable (status 1). */
  URL: string;
}

/** A text track's model, its address made as the video's media addresses are (signed where the application's are). */
export function toCaptionModel(t: TextTrackRecord, ctx: ViewContext): CaptionModel {
  return { Id: t.id, Language: t.language, Label: t.label, Origin: t.origin, URL: textTrackUrl(t, ctx) };
}

/** The address of a text track's WebVTT file. */
export function textTrackUrl(t: Pick<TextTrackRecord, 'videoId' | 'id'>, ctx: ViewContext): string {
  return `${mediaPrefix(ctx, t.videoId)}/text/${t.videoId}/${t.id}.vtt`;
}
