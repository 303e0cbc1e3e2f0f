import type { VideoRecord } from '../storage/types.js';

/** What turns stored records into the spec's JSON: the base addresses and the date format. */
export interface ViewContext {
  /** Absolute base of this server as the caller should see it, without a trailing slash. */
  baseUrl: string;
  formatDate: (ms: number) => string;
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
  return v.coverFile ? `${ctx.baseUrl}/media/cover/${v.id}.jpg` : '';
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

/** Spec 2.4 (`MediaSever`, spelled as the spec spells it): base addresses that VideoURL is appended to. */
export function mediaServer(ctx: ViewContext): { PlayURL: string; MobilePlayURL: string; DownloadURL: string } {
  return {
    PlayURL: `${ctx.baseUrl}/media/play/`,
    MobilePlayURL: `${ctx.baseUrl}/media/play/`,
    DownloadURL: `${ctx.baseUrl}/media/download/`,
  };
}
