/**
 * A video's watch page (`GET /embed/<id>`, routes/watch.ts) and its link preview (oEmbed): what
 * the page may show of a video, and with which addresses (docs/watch.md).
 *
 * Access follows the application's media access. A public application's page is open to anyone
 * with its address. A signed application's page opens only with the video's media token
 * (`?t=`, the token of its media addresses, which the detail's `EmbedURL` carries): the page
 * plays with that same token, so it works exactly as long as the addresses the application was
 * given, and a cover token (which opens the cover only) never opens it.
 */
import { escapeHtml } from '../core/htmlText.js';
import { ApiError } from '../core/errors.js';
import { VIDEO_ID_RE, VideoStatus } from '../core/videoStatus.js';
import { SIGNED_SEGMENT, type MediaTokens } from '../keys/mediaTokens.js';
import { HLS_MASTER } from '../processing/mediaNames.js';
import type { AppStore, VideoStore } from '../storage/types.js';
import { mediaPrefix, textTrackUrl, type ViewContext } from '../videos/videoView.js';

/** Why a page shows a message instead of a player. */
export type WatchRefusal = 'notFound' | 'notReady' | 'failed' | 'refused' | 'expired';

/** What the page plays: the addresses are those of the page's own access (public, or the page's token). */
export interface WatchVideo {
  id: string;
  title: string;
  description: string;
  /** Whole seconds. */
  duration: number;
  /** The largest rendition's picture (the page's and a preview's aspect). */
  width: number;
  height: number;
  /** The page's own address (with its token for a signed application). */
  pageUrl: string;
  /** Where its player reports views and watch time (services/viewCounter.ts), with the same token. */
  viewsUrl: string;
  hlsUrl: string;
  /** The renditions, largest first: what plays where HLS does not. */
  mp4: Array<{ label: string; width: number; height: number; url: string }>;
  /** '' when there is no cover yet. */
  posterUrl: string;
  captions: Array<{ id: string; language: string; label: string; url: string }>;
  chaptersUrl: string;
  /** Its seek previews' WebVTT; '' until made. */
  storyboardUrl: string;
  /** When the page's addresses stop working (Unix ms); absent for a public application's. */
  expiresAt?: number;
}

export type WatchAnswer = { kind: 'play'; video: WatchVideo } | { kind: 'message'; refusal: WatchRefusal; title?: string };

/** oEmbed 1.0's answer for a video (https://oembed.com, section 2.3.4). */
export interface OEmbedVideo {
  version: '1.0';
  type: 'video';
  provider_name: string;
  provider_url: string;
  title: string;
  html: string;
  width: number;
  height: number;
  thumbnail_url?: string;
  thumbnail_width?: number;
  thumbnail_height?: number;
}

export interface WatchServiceDeps {
  videos: Pick<VideoStore, 'get' | 'renditions' | 'textTracks'>;
  apps: Pick<AppStore, 'get'>;
  tokens: MediaTokens;
  /** Whether the video has HLS (processing/playbackView.ts). */
  hasHls: (videoId: string) => Promise<boolean>;
  now?: () => number;
}

/** A preview's frame when the video gives no size (no rendition yet). */
const DEFAULT_FRAME = { width: 640, height: 360 };

export class WatchService {
  constructor(private readonly deps: WatchServiceDeps) {}

  /** What `GET /embed/<videoId>` shows, for a page asked for with `token` (`?t=`, or none). */
  async page(videoId: string, token: string | undefined, ctx: ViewContext): Promise<WatchAnswer> {
    if (!VIDEO_ID_RE.test(videoId)) return { kind: 'message', refusal: 'notFound' };
    const video = await this.deps.videos.get(videoId);
    if (!video || video.status === VideoStatus.WaitingForDeletion) return { kind: 'message', refusal: 'notFound' };
    const app = await this.deps.apps.get(video.appId);
    if (!app) return { kind: 'message', refusal: 'notFound' };
    const now = (this.deps.now ?? Date.now)();
    let view: ViewContext = ctx;
    let expiresAt: number | undefined;
    if (app.mediaAccess === 'signed') {
      // Nothing of a signed application's video, not even its title, without its media token.
      if (token === undefined) return { kind: 'message', refusal: 'refused' };
      const refused = await this.deps.tokens.check(token, videoId, 'media', now);
      if (refused) return { kind: 'message', refusal: refused === 'expired' ? 'expired' : 'refused' };
      const expires = this.deps.tokens.expiryOf(token)!;
      expiresAt = expires * 1000;
      // The poster's own token (a media token does not open the cover), expiring with the page's.
      const coverToken = this.deps.tokens.sign(videoId, Math.max(1, expires - Math.floor(now / 1000)), 'cover', now);
      view = {
        ...ctx,
        mediaToken: () => token,
        mediaPrefix: () => `${ctx.baseUrl}/media/${SIGNED_SEGMENT}/${token}`,
        coverPrefix: () => `${ctx.baseUrl}/media/${SIGNED_SEGMENT}/${coverToken}`,
      };
    }
    if (video.status !== VideoStatus.Normal) {
      const failed = video.status === VideoStatus.DownloadFailed || video.status === VideoStatus.TranscodingFailed;
      return { kind: 'message', refusal: failed ? 'failed' : 'notReady', title: video.title };
    }
    const [renditions, tracks, hls] = await Promise.all([this.deps.videos.renditions(videoId), this.deps.videos.textTracks(videoId), this.deps.hasHls(videoId)]);
    const prefix = mediaPrefix(view, videoId);
    const mp4 = [...renditions]
      .sort((a, b) => b.width * b.height - a.width * a.height || b.bitrateKbps - a.bitrateKbps)
      .map((r) => ({ label: r.label, width: r.width, height: r.height, url: `${prefix}/play/${r.file}` }));
    const frame = mp4[0] ?? DEFAULT_FRAME;
    const chapters = tracks.find((t) => t.kind === 'chapters');
    const storyboard = tracks.find((t) => t.kind === 'storyboard');
    const query = token !== undefined && app.mediaAccess === 'signed' ? `?t=${encodeURIComponent(token)}` : '';
    return {
      kind: 'play',
      video: {
        id: videoId,
        title: video.title,
        description: video.description,
        duration: video.duration,
        width: frame.width,
        height: frame.height,
        pageUrl: `${ctx.baseUrl}/embed/${videoId}${query}`,
        viewsUrl: `${ctx.baseUrl}/embed/${videoId}/views${query}`,
        hlsUrl: hls ? `${prefix}/hls/${videoId}/${HLS_MASTER}` : '',
        mp4,
        posterUrl: video.coverFile ? `${view.coverPrefix ? view.coverPrefix(videoId) : prefix}/cover/${videoId}.jpg` : '',
        captions: tracks.filter((t) => t.kind === 'captions').map((t) => ({ id: t.id, language: t.language, label: t.label, url: textTrackUrl(t, view) })),
        chaptersUrl: chapters ? textTrackUrl(chapters, view) : '',
        storyboardUrl: storyboard ? textTrackUrl(storyboard, view) : '',
        ...(expiresAt !== undefined ? { expiresAt } : {}),
      },
    };
  }

  /**
   * oEmbed for the watch page at `url` (`<base>/embed/<id>[?t=…]` of this server): 404 for any
   * other address or a video that is not playable, 403 (420) for a signed application's video
   * without a good token: a preview shows only what its link opens, and expires with it.
   */
  async oembed(url: string, max: { width?: number; height?: number }, ctx: ViewContext): Promise<OEmbedVideo> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ApiError('MALFORMED_REQUEST', 'url must be the address of a watch page (…/embed/<VideoId>)');
    }
    const base = new URL(`${ctx.baseUrl}/`);
    const m = /\/embed\/([^/]+)$/.exec(parsed.pathname);
    if (parsed.host !== base.host || !m || !parsed.pathname.startsWith(base.pathname)) throw new ApiError('NOT_FOUND', 'url is not the address of a watch page of this server');
    const answer = await this.page(m[1]!, parsed.searchParams.get('t') ?? undefined, ctx);
    if (answer.kind !== 'play') {
      if (answer.refusal === 'refused' || answer.refusal === 'expired') throw new ApiError('MEDIA_ADDRESS_REFUSED', 'this video is shown only with a signed link that has not expired');
      throw new ApiError('NOT_FOUND', 'no playable video at this address');
    }
    const v = answer.video;
    const { width, height } = fit(v.width, v.height, max);
    const src = escapeHtml(v.pageUrl);
    return {
      version: '1.0',
      type: 'video',
      provider_name: 'vop',
      provider_url: `${ctx.baseUrl}/`,
      title: v.title,
      html: `<iframe src="${src}" width="${width}" height="${height}" title="${escapeHtml(v.title)}" style="border:0" allow="autoplay; fullscreen; picture-in-picture" allowfullscreen></iframe>`,
      width,
      height,
      ...(v.posterUrl ? { thumbnail_url: v.posterUrl, thumbnail_width: v.width, thumbnail_height: v.height } : {}),
    };
  }
}

/** `width` x `height` scaled down (never up) to fit `max`, aspect kept, whole pixels. */
export function fit(width: number, height: number, max: { width?: number; height?: number }): { width: number; height: number } {
  const scale = Math.min(1, max.width ? max.width / width : 1, max.height ? max.height / height : 1);
  return { width: Math.max(1, Math.floor(width * scale)), height: Math.max(1, Math.floor(height * scale)) };
}
