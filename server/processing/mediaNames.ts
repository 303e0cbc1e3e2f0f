/**
 * The names of a video's media, in one place: what processing writes and what delivery accepts.
 *
 *   play/<YYYYMMDD>/<videoId>_<label>.mp4      a rendition (spec 2.5 VideoURL `<date_folder>/<file_name>`)
 *   play/<YYYYMMDD>/<videoId>_source.<ext>     the kept source of a needHandleSepcial video
 *   covers/<videoId>/cover.jpg                 the full-size cover
 *   covers/<videoId>/t<n>.jpg                  a spec 2.3 size, made on first request
 *   hls/<videoId>/master.m3u8                  the HLS master playlist
 *   hls/<videoId>/<label>/index.m3u8, seg_*    one HLS variant
 *   hls/<videoId>/audio-<n>/index.m3u8, seg_*  one audio track of a source with several
 *   hls/<videoId>/subs-<id>/index.m3u8, seg_*  one caption track, as segmented WebVTT
 *   text/<videoId>/<id>.vtt                    one text track (captions, chapters), whole
 *
 * Every name starts with or sits under the video id, so delivery can tell from a requested name
 * whose media it is, and check that video before reading anything.
 */
import { VIDEO_ID_RE } from '../core/videoStatus.js';

/** Rendition labels become file and directory names (`<id>_720p.mp4`, `hls/<id>/720p/`). */
export const LABEL_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;

/** The file name of the full-size cover inside `covers/<videoId>/`. */
export const COVER_FILE = 'cover.jpg';

/** The master playlist's name inside `hls/<videoId>/`. */
export const HLS_MASTER = 'master.m3u8';

/**
 * The folder of the HLS audio rendition of the source's audio stream `index` (`0:a:<index>`).
 * No rung may be labelled so (ladder.ts refuses the prefix).
 */
export function audioRenditionLabel(index: number): string {
  return `${AUDIO_LABEL_PREFIX}${index}`;
}

/** What the folders of HLS audio renditions start with. */
export const AUDIO_LABEL_PREFIX = 'audio-';

/** The folder of the HLS subtitle rendition of text track `id`. No rung may be labelled so either. */
export function subtitleRenditionLabel(id: string): string {
  return `subs-${id}`;
}

/** The file of text track `id` inside `text/<videoId>/`. */
export function textTrackFile(id: string): string {
  return `${id}.vtt`;
}

/** A text track's id: what {@link textTrackFile} and {@link subtitleRenditionLabel} are made of. */
export const TEXT_TRACK_ID_RE = /^[0-9a-f]{8}$/;

/** The label of a kept source in its file name (`<id>_source.<ext>`). */
export const SOURCE_LABEL = 'source';

/** `<videoId>_<label>.<ext>`. */
export function playFileName(videoId: string, label: string, ext: string): string {
  return `${videoId}_${label}.${ext}`;
}

/** `t<n>.jpg`, the cached cover of spec 2.3 size `n`. */
export function coverSizeFileName(t: number): string {
  return `t${t}.jpg`;
}

/** A pattern's source without its `^` and `$`, to build longer patterns from the ones above. */
const unanchored = (re: RegExp) => re.source.replace(/^\^|\$$/g, '');

const PLAY_NAME_RE = new RegExp(`^(${unanchored(VIDEO_ID_RE)})_${unanchored(LABEL_RE)}\\.[a-z0-9]{1,5}$`);
const COVER_REQUEST_RE = new RegExp(`^(${unanchored(VIDEO_ID_RE)})\\.jpg$`);
const DATE_FOLDER_RE = /^\d{8}$/;

/**
 * The video id of a requested play file `<date>/<file>`, or undefined if the name is not one we
 * make (no id can be read from it, so nothing can be served for it).
 */
export function videoIdOfPlayFile(dateFolder: string, file: string): string | undefined {
  if (!DATE_FOLDER_RE.test(dateFolder)) return undefined;
  return PLAY_NAME_RE.exec(file)?.[1];
}

/** The video id of a requested cover `<videoId>.jpg` (the address of `PicSavePath`), or undefined. */
export function videoIdOfCoverRequest(file: string): string | undefined {
  return COVER_REQUEST_RE.exec(file)?.[1];
}

/** Whether a directory entry of a date folder belongs to `videoId` (its files, or their temporary names). */
export function isPlayFileOf(videoId: string, name: string): boolean {
  return name.startsWith(`${videoId}_`) || name.startsWith(`.${videoId}_`);
}

/**
 * A formatter of the date folder (`YYYYMMDD`) of a moment, in `timeZone` or else the server's
 * local zone: the day the transcode ran, as people there count days.
 */
export function makeDateFolder(timeZone?: string): (ms: number) => string {
  if (!timeZone) {
    return (ms) => {
      const d = new Date(ms);
      return `${d.getFullYear()}${p2(d.getMonth() + 1)}${p2(d.getDate())}`;
    };
  }
  const fmt = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
  return (ms) => {
    const parts: Record<string, string> = {};
    for (const p of fmt.formatToParts(ms)) parts[p.type] = p.value;
    return `${parts.year}${parts.month}${parts.day}`;
  };
}

/**
 * The extension a kept source is served with, from ffprobe's container name, so that delivery
 * sends it with a content type a player recognises. The file is copied byte for byte.
 */
export function sourceExtension(formatName: string, videoCodec: string): string {
  const formats = formatName.split(',');
  // ffprobe names one demuxer for MP4 and QuickTime alike ("mov,mp4,m4a,3gp,3g2,mj2"); players take both as MP4.
  if (formats.includes('mp4') || formats.includes('mov')) return 'mp4';
  if (formats.includes('webm') || formats.includes('matroska')) return ['vp8', 'vp9', 'av1'].includes(videoCodec) && formats.includes('webm') ? 'webm' : 'mkv';
  const known: Record<string, string> = { avi: 'avi', flv: 'flv', mpegts: 'ts', mpeg: 'mpg', asf: 'wmv', ogg: 'ogv', '3gp': '3gp' };
  for (const f of formats) if (known[f]) return known[f];
  return 'bin';
}

function p2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}
