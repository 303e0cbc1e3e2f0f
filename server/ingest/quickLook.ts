/**
 * The upload page's quick look at a file the user chose, before a byte of it is sent: a file
 * that is obviously not a video (a name that never is one, text bytes, nothing at all) is refused
 * at once instead of after the whole upload. The page applies this rule to decide, and reports
 * the file to the server (`POST /widget/upload/not-a-video` with the file's first bytes), which
 * applies it again before recording the verdict: the video then ends as after ffprobe's verdict
 * on an uploaded file (7, `not a video: …`, its callback, 307), one rule whichever way it is found.
 */

/** How much of the file's start the page reads, and sends with its report. */
export const QUICK_LOOK_BYTES = 4096;

/**
 * Names that are never videos: documents, archives, programs, still images, sound. Names that
 * could be either (.ts is also TypeScript, .ogg may hold video, .gif moves) are left to ffprobe.
 */
export const NOT_VIDEO_EXTENSIONS: readonly string[] = (
  'txt md csv tsv json xml html htm log ini yaml yml pdf doc docx xls xlsx ppt pptx odt ods odp rtf epub ' +
  'zip rar 7z gz bz2 xz tar tgz exe msi dmg apk deb rpm iso jpg jpeg png bmp heic heif webp tif tiff svg psd ' +
  'mp3 wav flac m4a aac wma opus'
).split(' ');

const NOT_VIDEO = new Set(NOT_VIDEO_EXTENSIONS);

/** The same words as ffprobe's verdict on an empty file (media/probe.ts), so the reason does not depend on the way. */
export const EMPTY_FILE_REASON = 'the file is empty';

/**
 * Why a file named `name` whose first bytes are `head` (all of it, if it is shorter than
 * {@link QUICK_LOOK_BYTES}) is obviously not a video, or undefined: then only ffprobe can say.
 */
export function obviousNonVideo(name: string, head: Uint8Array): string | undefined {
  if (head.length === 0) return EMPTY_FILE_REASON;
  const ext = (/\.([^./\\]+)$/.exec(name)?.[1] ?? '').toLowerCase();
  if (NOT_VIDEO.has(ext)) return `"${name}" is a .${ext} file`;
  return looksLikeText(head) ? `"${name}" is a text file` : undefined;
}

/**
 * Text: no control bytes but tab, line feed, form feed, carriage return and escape, and valid
 * UTF-8 (a character cut at the end counts). Every video container has binary bytes in its first
 * 4 KiB (box sizes, sync words, NUL bytes).
 */
function looksLikeText(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b < 0x20 && b !== 9 && b !== 10 && b !== 12 && b !== 13 && b !== 27) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: true });
    return true;
  } catch {
    return false;
  }
}
