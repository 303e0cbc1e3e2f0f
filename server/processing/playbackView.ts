/**
 * What the detail response (spec 4.1) shows of a video's media: `VideoPlayFile` (spec 2.5) and,
 * beyond the spec, `HlsURL`. videoApi.ts shows `VideoPlayFile` only for a video in status 1.
 */
import fsp from 'node:fs/promises';
import type { VopEventBus } from '../events.js';
import { VideoStatus } from '../services/videoStatus.js';
import type { ViewContext } from '../services/videoView.js';
import type { LocalMediaStore } from '../storage/mediaStore.js';
import type { VideoRecord, VideoStore } from '../storage/types.js';
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
 * Whether a video has an HLS master playlist, remembered per video: the detail call is the hot
 * path of the API, and asking the disk on every call (a failing access() for every video without
 * HLS) cost about a fifth of it. The playlist is written and removed only around status changes
 * (the transcode before its move to 1, deletion with its move to 0), so any status change of the
 * video forgets what was known of it.
 */
export class HlsPresence {
  private known = new Map<string, boolean>();

  constructor(
    private readonly media: LocalMediaStore,
    events: VopEventBus,
  ) {
    events.on('video.status', (e) => this.known.delete(e.videoId));
  }

  async has(videoId: string): Promise<boolean> {
    let present = this.known.get(videoId);
    if (present === undefined) {
      present = await fsp.access(this.media.path('hls', videoId, HLS_MASTER)).then(
        () => true,
        () => false,
      );
      if (this.known.size >= 200_000) this.known.clear(); // a bound, far above a library's playable set
      this.known.set(videoId, present);
    }
    return present;
  }
}

/**
 * Extra detail fields: `HlsURL`, the absolute address of the HLS master playlist, for adaptive
 * playback (hls.js, Safari); empty when the video is not playable or has no HLS packaging.
 */
export async function detailExtras(hls: HlsPresence, video: VideoRecord, ctx: ViewContext): Promise<{ HlsURL: string }> {
  if (video.status !== VideoStatus.Normal) return { HlsURL: '' };
  return { HlsURL: (await hls.has(video.id)) ? hlsMasterUrl(ctx.baseUrl, video.id) : '' };
}

/** Where delivery serves a video's master playlist. */
function hlsMasterUrl(baseUrl: string, videoId: string): string {
  return `${baseUrl}/media/hls/${videoId}/${HLS_MASTER}`;
}
