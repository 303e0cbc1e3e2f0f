/**
 * Captions an application adds to its videos (beyond the spec; issue 33, item 4): an SRT or
 * WebVTT file in one language becomes a text track of the video (processing/textTracks.ts), its
 * WebVTT file and, when the video has HLS, its subtitle rendition, with no re-encoding. The
 * master playlist lists it as soon as delivery hears of it (`video.textTracks`). The calls:
 * `POST /Api/Video/Caption`, `GET /Api/Video/Captions`, `POST /Api/Video/Caption/Delete`.
 *
 * What a caller sends is checked before anything is stored: the language is BCP-47, the label
 * plain text of a line, the file UTF-8 SRT or WebVTT that a player reads as the caller meant
 * (webvtt.ts says what is refused). The file is stored as WebVTT made anew from its cues, never
 * as sent: nothing but cues reaches a player.
 */
import { ApiError } from '../core/errors.js';
import type { VopEventBus } from '../core/events.js';
import { VideoStatus } from '../core/videoStatus.js';
import { canonicalLanguage, languageName } from '../media/languages.js';
import { buildVtt, parseCaptionFile, type CaptionProblem } from '../media/webvtt.js';
import { TEXT_TRACK_ID_RE } from '../processing/mediaNames.js';
import {
  MAX_CAPTION_TRACKS,
  MAX_TEXT_TRACK_BYTES,
  newTextTrackId,
  removeTextTrackFiles,
  storedHlsTimeline,
  storeSubtitleRendition,
  storeTextTrack,
} from '../processing/textTracks.js';
import type { MediaStore } from '../storage/media/mediaStore.js';
import type { TextTrackRecord, VideoRecord, VideoStore } from '../storage/types.js';

/** The largest caption file taken, as sent (the route reads no more of it). */
export const CAPTION_FILE_MAX_BYTES = MAX_TEXT_TRACK_BYTES;

/** The longest label a caption track may have: what a player's menu shows. */
export const MAX_CAPTION_LABEL_CHARS = 100;

export interface CaptionServiceDeps {
  videos: Pick<VideoStore, 'textTracks' | 'addTextTrack' | 'removeTextTrack'>;
  objects: MediaStore;
  events: VopEventBus;
  now?: () => number;
}

/** What an application sends to add a caption track. */
export interface CaptionInput {
  /** BCP-47. */
  language: string | undefined;
  /** Absent or empty: the language's English name. */
  label: string | undefined;
  /** The file, SRT or WebVTT. */
  bytes: Buffer | undefined;
  /** The file was longer than {@link CAPTION_FILE_MAX_BYTES}: `bytes` is its start only. */
  truncated?: boolean;
}

/** How each problem of a caption file is answered. */
const PROBLEM_CODES: Record<CaptionProblem, 'CAPTION_FILE_INVALID' | 'CAPTION_FILE_TOO_LARGE'> = {
  'too-large': 'CAPTION_FILE_TOO_LARGE',
  'not-text': 'CAPTION_FILE_INVALID',
  encoding: 'CAPTION_FILE_INVALID',
  syntax: 'CAPTION_FILE_INVALID',
  order: 'CAPTION_FILE_INVALID',
  empty: 'CAPTION_FILE_INVALID',
};

export class CaptionService {
  private readonly now: () => number;

  constructor(private readonly deps: CaptionServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** The video's caption tracks, oldest first (its chapters are not captions). */
  async list(video: VideoRecord): Promise<TextTrackRecord[]> {
    return (await this.deps.videos.textTracks(video.id)).filter((t) => t.kind === 'captions');
  }

  /** Adds a caption track to `video` (one of the caller's, checked by the caller); resolves with it. */
  async add(video: VideoRecord, input: CaptionInput): Promise<TextTrackRecord> {
    if (video.status === VideoStatus.WaitingForDeletion) throw new ApiError('VIDEO_STATE_CONFLICT', 'the video is being deleted');
    if (!input.language?.trim()) throw new ApiError('MISSING_PARAMETER', 'Language');
    const language = canonicalLanguage(input.language.trim());
    if (language === null) throw new ApiError('LANGUAGE_INVALID', `"${input.language.slice(0, 40)}" is not a BCP-47 tag of a known language (such as "en", "pt-BR", "zh-Hans")`);
    const label = captionLabel(input.label, language);
    if (!input.bytes || input.bytes.length === 0) throw new ApiError('MISSING_PARAMETER', 'the caption file (a file part, SRT or WebVTT)');
    if (input.truncated) throw new ApiError('CAPTION_FILE_TOO_LARGE', `the caption file is over the limit of ${CAPTION_FILE_MAX_BYTES} bytes`);
    const parsed = parseCaptionFile(input.bytes, { maxBytes: MAX_TEXT_TRACK_BYTES });
    if (!parsed.ok) throw new ApiError(PROBLEM_CODES[parsed.problem], parsed.detail);
    const vtt = buildVtt(parsed.cues, { keepMarkup: true });
    const track: TextTrackRecord = { videoId: video.id, id: newTextTrackId(), kind: 'captions', origin: 'api', language, label, forced: false, bytes: Buffer.byteLength(vtt), createdAt: this.now() };
    // Its files first, the row last: a row never names a file that is not there.
    await storeTextTrack(this.deps.objects, track, vtt);
    const timeline = await storedHlsTimeline(this.deps.objects, video.id);
    if (timeline) await storeSubtitleRendition(this.deps.objects, video.id, track.id, parsed.cues, timeline);
    if (!(await this.deps.videos.addTextTrack(track, MAX_CAPTION_TRACKS))) {
      await removeTextTrackFiles(this.deps.objects, track);
      throw new ApiError('CAPTION_LIMIT_REACHED', `the video has ${MAX_CAPTION_TRACKS} caption tracks; remove one first`);
    }
    await this.changed(video);
    return track;
  }

  /** Removes caption track `id` of `video`; resolves with it. */
  async remove(video: VideoRecord, id: string | undefined): Promise<TextTrackRecord> {
    if (!id?.trim()) throw new ApiError('MISSING_PARAMETER', 'CaptionId');
    const trackId = id.trim();
    const tracks = TEXT_TRACK_ID_RE.test(trackId) ? await this.deps.videos.textTracks(video.id) : [];
    if (!tracks.some((t) => t.id === trackId && t.kind === 'captions')) throw new ApiError('CAPTION_NOT_FOUND');
    const removed = await this.deps.videos.removeTextTrack(video.id, trackId);
    if (!removed) throw new ApiError('CAPTION_NOT_FOUND');
    // The row first: delivery stops listing it before its files go.
    await this.changed(video);
    await removeTextTrackFiles(this.deps.objects, removed);
    return removed;
  }

  private async changed(video: VideoRecord): Promise<void> {
    const ids = (await this.deps.videos.textTracks(video.id)).map((t) => t.id);
    this.deps.events.emit('video.textTracks', { videoId: video.id, appId: video.appId, ids });
  }
}

/** The label of a caption track: what was sent, trimmed, or the language's name; refused when a menu could not show it. */
function captionLabel(sent: string | undefined, language: string): string {
  const label = sent?.trim() ?? '';
  if (label === '') return languageName(language);
  if ([...label].length > MAX_CAPTION_LABEL_CHARS) throw new ApiError('INVALID_PARAMETER', `Label may be at most ${MAX_CAPTION_LABEL_CHARS} characters`);
  if (/[\u0000-\u001f\u007f"]/.test(label)) throw new ApiError('INVALID_PARAMETER', 'Label must be one line of text without double quotes');
  return label;
}
