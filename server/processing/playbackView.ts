/**
 * What the detail response (spec 4.1) shows of a video's media: `VideoPlayFile` (spec 2.5) and,
 * beyond the spec, `HlsURL`, `Captions` and `ChaptersURL`. videoApi.ts shows `VideoPlayFile` only for a video in status 1.
 */
import type { VopEventBus } from '../core/events.js';
import { VIDEO_ID_RE, VideoStatus } from '../core/videoStatus.js';
import { mediaPrefix, textTrackUrl, toCaptionModel, watchPageUrl, type CaptionModel, type ViewContext } from '../videos/videoView.js';
import { mediaKey, type MediaStore } from '../storage/media/mediaStore.js';
import type { RenditionRecord, TextTrackRecord, VideoRecord } from '../storage/types.js';
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

/** A video's renditions as VideoPlayFile, in their order (the store's: highest bitrate first). */
export function playFiles(renditions: RenditionRecord[]): VideoPlayFile[] {
  return renditions.map((r) => ({ VideoURL: r.file, Bitrate: r.bitrateKbps, BitrateLabel: r.label }));
}

/**
 * Whether a video has an HLS master playlist. The detail call is the hot path of the API, and
 * asking the disk on every call cost about a fifth of it; remembering the answer per video still
 * asked once per video, which is every call when callers spread over a large library (the API
 * benchmark's random detail calls). So the HLS area is listed once, at start, in the background,
 * and answers from then on. A video's HLS is stored only in a transcode (master playlist last), which says so ({@link folderChanged}) before the video moves to 1;
 * any status change says so too. Such a video is asked on disk again, once. A video moved to 0
 * (deletion) is forgotten: its files go, and the detail call shows nothing of it.
 */
export class HlsPresence {
  /** Ids with a playlist folder, once the area was listed. */
  private listed: Set<string> | undefined;
  /** Videos whose status changed since the listing began and that were not asked on disk since. */
  private changed = new Set<string>();
  /** Counts status changes: a disk answer is kept only if none came while it was asked. */
  private changes = 0;

  constructor(
    private readonly objects: MediaStore,
    events: VopEventBus,
  ) {
    // Every node's changes: a worker writes the HLS folder and moves the video on (cluster mode).
    events.everywhere.on('video.status', (e) => {
      if (e.to === VideoStatus.WaitingForDeletion) {
        this.changes++;
        this.changed.delete(e.videoId);
        this.listed?.delete(e.videoId);
      } else {
        this.folderChanged(e.videoId);
      }
    });
  }

  /**
   * The video's HLS folder was written or removed. The transcode calls this itself before the
   * move to 1: the move is visible to readers before its event, which comes once the move is
   * on disk, and a detail call in between must not answer from the listing.
   */
  folderChanged(videoId: string): void {
    this.changes++;
    this.changed.add(videoId);
  }

  /** Lists the HLS area; until that is done (or if it failed), every call asks the media store. */
  async load(): Promise<void> {
    const names = await this.objects.listNames('hls');
    this.listed = new Set(names.filter((n) => VIDEO_ID_RE.test(n)));
  }

  async has(videoId: string): Promise<boolean> {
    if (this.listed && !this.changed.has(videoId)) return this.listed.has(videoId);
    const changesBefore = this.changes;
    const present = (await this.objects.stat(mediaKey('hls', videoId, HLS_MASTER))) !== undefined;
    if (this.listed && this.changes === changesBefore) {
      if (present) this.listed.add(videoId);
      else this.listed.delete(videoId);
      this.changed.delete(videoId);
    }
    return present;
  }
}

/** Extra detail fields, beyond the spec: spec clients ignore fields they do not know. */
export type DetailExtras = {
  /** The absolute address of the HLS master playlist, for adaptive playback (hls.js, Safari); '' when the video is not playable or has no HLS. */
  HlsURL: string;
  /** Its caption tracks (textTracks.ts), each with its WebVTT file's address; empty while the video is not playable. */
  Captions: CaptionModel[];
  /** The address of its chapters as WebVTT (`<track kind="chapters">`); '' when it has none or is not playable. */
  ChaptersURL: string;
  /** Its watch page, for an `<iframe>` (routes/watch.ts); in every status: the page says when it is not playable yet. */
  EmbedURL: string;
  /** Its seek previews: a WebVTT thumbnails track (`<track kind="metadata">`, sprites with `#xywh`); '' until made or when not playable. */
  StoryboardURL: string;
};

/** The detail's extra fields of `video`: its media addresses are served only in status 1. */
export async function detailExtras(hls: HlsPresence, textTracks: (videoId: string) => Promise<TextTrackRecord[]>, video: VideoRecord, ctx: ViewContext): Promise<DetailExtras> {
  const EmbedURL = watchPageUrl(video.id, ctx);
  if (video.status !== VideoStatus.Normal) return { HlsURL: '', Captions: [], ChaptersURL: '', EmbedURL, StoryboardURL: '' };
  const [present, tracks] = await Promise.all([hls.has(video.id), textTracks(video.id)]);
  const chapters = tracks.find((t) => t.kind === 'chapters');
  const storyboard = tracks.find((t) => t.kind === 'storyboard');
  return {
    // A signed application's token sits in the path: the playlists' relative addresses carry it.
    HlsURL: present ? `${mediaPrefix(ctx, video.id)}/hls/${video.id}/${HLS_MASTER}` : '',
    Captions: tracks.filter((t) => t.kind === 'captions').map((t) => toCaptionModel(t, ctx)),
    ChaptersURL: chapters ? textTrackUrl(chapters, ctx) : '',
    EmbedURL,
    StoryboardURL: storyboard ? textTrackUrl(storyboard, ctx) : '',
  };
}
