/**
 * What the detail response (spec 4.1) shows of a video's media: `VideoPlayFile` (spec 2.5) and,
 * beyond the spec, `HlsURL`. videoApi.ts shows `VideoPlayFile` only for a video in status 1.
 */
import fsp from 'node:fs/promises';
import { VideoStatus } from '../services/videoStatus.js';
import type { ViewContext } from '../services/videoView.js';
import type { LocalMediaStore } from '../storage/mediaStore.js';
import type { VideoStore } from '../storage/types.js';
import { HLS_MASTER } from './mediaNames.js';

/** Spec 2.5. */
export interface VideoPlayFile {
  /** `<date_folder>/<file_name>`, appended to `MediaSever.PlayURL` or `DownloadURL`. */
  VideoURL: string;
  /** kbps, measured over the whole file (video plus audio). */
  Bitrate: number;
  /** e.g. "720p". */
  BitrateLabel: string;
}

/** A video's renditions, highest bitrate first (the store's order). */
export async function playFiles(videos: VideoStore, videoId: string): Promise<VideoPlayFile[]> {
  return (await videos.renditions(videoId)).map((r) => ({ VideoURL: r.file, Bitrate: r.bitrateKbps, BitrateLabel: r.label }));
}

/**
 * Extra detail fields: `HlsURL`, the absolute address of the HLS master playlist, for adaptive
 * playback (hls.js, Safari); empty when the video is not playable or has no HLS packaging.
 */
export async function detailExtras(videos: VideoStore, media: LocalMediaStore, videoId: string, ctx: ViewContext): Promise<{ HlsURL: string }> {
  const video = await videos.get(videoId);
  if (video?.status !== VideoStatus.Normal) return { HlsURL: '' };
  const exists = await fsp.access(media.path('hls', videoId, HLS_MASTER)).then(
    () => true,
    () => false,
  );
  return { HlsURL: exists ? hlsMasterUrl(ctx.baseUrl, videoId) : '' };
}

/** Where delivery serves a video's master playlist. */
export function hlsMasterUrl(baseUrl: string, videoId: string): string {
  return `${baseUrl}/media/hls/${videoId}/${HLS_MASTER}`;
}
