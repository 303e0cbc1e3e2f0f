/**
 * Captions and chapters as WebVTT, the one text-track format every browser's <track> element and
 * HLS (RFC 8216) both play. Pure.
 *
 * An application uploads captions as SubRip (SRT) or WebVTT; {@link parseCaptionFile} reads either
 * into cues, refusing with a reason the integrating developer can act on (which line, which
 * rule), and {@link buildVtt} writes them back as WebVTT. Chapters come from the source's
 * container (ffprobe) and become a WebVTT chapters track. {@link segmentVtt} cuts captions at the
 * video's HLS segment boundaries for a subtitle rendition.
 */

/** One cue: times in seconds (start < end), text possibly several lines (no blank line inside). */
export interface Cue {
  start: number;
  end: number;
  text: string;
}

/**
 * A WebVTT timestamp "HH:MM:SS.mmm", to the millisecond (the format's resolution). Hours are always
 * written (two digits or more) so that a time reads the same in every cue. Throws on a negative or
 * non-finite time, which no cue can have.
 */
export function formatVttTime(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) throw new RangeError(`A WebVTT time is a finite number of seconds ≥ 0, not ${seconds}.`);
  const ms = Math.round(seconds * 1000);
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor(ms / 60_000) % 60;
  const s = Math.floor(ms / 1000) % 60;
  return `${pad(h, 2)}:${pad(m, 2)}:${pad(s, 2)}.${pad(ms % 1000, 3)}`;
}

function pad(n: number, digits: number): string {
  return n.toString().padStart(digits, '0');
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/**
 * The lines a cue's text is written as. A blank line would end the cue early, and a line holding
 * "-->" would be read as the next cue's timing: the first are dropped, the second neutralised.
 * Plain text is escaped so that it shows as written instead of being read as markup.
 */
function cueTextLines(text: string, keepMarkup: boolean): string[] {
  return text
    .split(/\r\n|\r|\n/)
    .filter((line) => line.trim() !== '')
    .map((line) => (keepMarkup ? line.replaceAll('-->', '--&gt;') : line.replace(/[&<>]/g, (c) => ESCAPES[c] ?? c)));
}

/** The cues of a WebVTT file, each followed by the blank line that ends it. */
function cueBlocks(cues: readonly Cue[], keepMarkup: boolean): string {
  return cues
    .map((cue) => {
      const lines = cueTextLines(cue.text, keepMarkup);
      return `${formatVttTime(cue.start)} --> ${formatVttTime(cue.end)}\n${lines.map((l) => `${l}\n`).join('')}\n`;
    })
    .join('');
}

/**
 * A whole WebVTT file of `cues`, in the order given. Their text is plain text unless `keepMarkup`
 * (text that is already WebVTT cue text, such as {@link parseCaptionFile}'s), so that a caption
 * can neither end its cue nor inject a tag.
 */
export function buildVtt(cues: readonly Cue[], o: { keepMarkup?: boolean } = {}): string {
  return `WEBVTT\n\n${cueBlocks(cues, o.keepMarkup ?? false)}`;
}

/**
 * A WebVTT chapters track (`<track kind="chapters">`) from the chapters ffprobe found in the source
 * (`-show_chapters`). Containers carry chapters that players would refuse or show oddly: unsorted,
 * empty, overlapping, or past the end of the video. So the chapters are sorted by start, clipped to
 * [0, durationSeconds] (when given) and to the next chapter's start, and those left with no length
 * are dropped. A chapter with no title is named "Chapter N", N its place among the chapters kept.
 * Null when no chapter is left: the video then has no chapters track.
 */
export function buildChaptersVtt(
  chapters: ReadonlyArray<{ start: number; end: number; title?: string | null }>,
  durationSeconds?: number,
): string | null {
  const limit = durationSeconds ?? Infinity;
  const clipped = chapters
    .map((c) => ({ start: Math.min(Math.max(c.start, 0), limit), end: Math.min(c.end, limit), title: c.title }))
    .filter((c) => Number.isFinite(c.start) && Number.isFinite(c.end) && c.end > c.start)
    .sort((a, b) => a.start - b.start);
  const kept = clipped
    .map((c, i) => ({ ...c, end: Math.min(c.end, clipped[i + 1]?.start ?? Infinity) }))
    .filter((c) => c.end > c.start);
  if (kept.length === 0) return null;
  // A cue of a chapters track is a single line: the title's line breaks become spaces.
  return buildVtt(
    kept.map((c, i) => ({ start: c.start, end: c.end, text: c.title?.replace(/\s+/g, ' ').trim() || `Chapter ${i + 1}` })),
  );
}

/** The outcome of reading a caption file uploaded by an application. */
export type CaptionProblem = 'too-large' | 'not-text' | 'encoding' | 'syntax' | 'order' | 'empty';
export type CaptionParse = { ok: true; format: 'srt' | 'webvtt'; cues: Cue[] } | { ok: false; problem: CaptionProblem; detail: string };

/** Default of `maxBytes`: hours of dense captions stay well under it. */
const DEFAULT_MAX_CAPTION_BYTES = 2 * 1024 * 1024;
/** Default of `maxCues`: a cue every second for more than five hours. */
const DEFAULT_MAX_CUES = 20_000;

/** A refusal of {@link parseCaptionFile}, thrown inside the parser and returned by it. */
class CaptionRefusal extends Error {
  readonly problem: CaptionProblem;
  constructor(problem: CaptionProblem, detail: string) {
    super(detail);
    this.problem = problem;
  }
}

/**
 * Reads an SRT or WebVTT caption file uploaded by an application into cues whose text is WebVTT
 * cue text (build the track with `buildVtt(cues, { keepMarkup: true })`). Refuses, with a detail
 * naming the line, what a player would misread or silently drop:
 *  - over `maxBytes` (default 2 MiB): 'too-large', before anything is decoded;
 *  - UTF-16 (a UTF-16 byte order mark): 'encoding';
 *  - NUL or other control bytes than tab, line feed, form feed and carriage return: 'not-text';
 *  - not UTF-8 (Latin-1, Windows-1252): 'encoding' (a UTF-8 byte order mark is allowed);
 *  - a malformed cue timing, or a cue not ending after it starts: 'syntax';
 *  - a cue starting before the previous one: 'order';
 *  - no cue: 'empty'; more than `maxCues` (default 20,000): 'too-large'.
 * The format is WebVTT when the first line is "WEBVTT" (alone or followed by a space or tab), SRT
 * otherwise. WebVTT cues keep their markup, and lose their id and settings (positions chosen for
 * another player). SRT cues may lack their index line, and may use "." before the milliseconds;
 * their <i>, <b> and <u> tags are kept, <font> tags dropped, and any other "<", ">" or "&"
 * escaped, being text in SRT.
 */
export function parseCaptionFile(bytes: Uint8Array, o: { maxBytes?: number; maxCues?: number } = {}): CaptionParse {
  try {
    const text = decodeCaptionBytes(bytes, o.maxBytes ?? DEFAULT_MAX_CAPTION_BYTES);
    const lines = text.split(/\r\n|\r|\n/);
    const format = /^WEBVTT(?:[ \t]|$)/.test(lines[0] ?? '') ? 'webvtt' : 'srt';
    const cues = readCues(lines, format, o.maxCues ?? DEFAULT_MAX_CUES);
    if (cues.length === 0) throw new CaptionRefusal('empty', `The ${format === 'srt' ? 'SRT' : 'WebVTT'} file holds no cue.`);
    return { ok: true, format, cues };
  } catch (e) {
    if (e instanceof CaptionRefusal) return { ok: false, problem: e.problem, detail: e.message };
    throw e;
  }
}

/** The file's text, checked to be UTF-8 text, without its byte order mark. */
function decodeCaptionBytes(bytes: Uint8Array, maxBytes: number): string {
  if (bytes.length > maxBytes) {
    throw new CaptionRefusal('too-large', `The caption file is ${bytes.length} bytes, over the limit of ${maxBytes} bytes.`);
  }
  // Checked before control bytes: UTF-16 text is full of NUL bytes, but the fix is not the same.
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    throw new CaptionRefusal('encoding', 'The caption file is UTF-16; save it as UTF-8.');
  }
  const control = bytes.findIndex((b) => (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d) || b === 0x7f);
  if (control !== -1) {
    const code = `0x${(bytes[control] ?? 0).toString(16).padStart(2, '0')}`;
    const where = `byte ${control} (line ${lineOfByte(bytes, control)})`;
    throw new CaptionRefusal('not-text', `The caption file is not text: ${where} is the control character ${code}.`);
  }
  try {
    // The decoder drops a leading UTF-8 byte order mark.
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new CaptionRefusal(
      'encoding',
      `The caption file is not UTF-8 (line ${firstBadUtf8Line(bytes)} is not; Latin-1 or Windows-1252?); save it as UTF-8.`,
    );
  }
}

/** The 1-based line holding byte `index`, lines ended by LF, CR or CRLF as the parser reads them. */
function lineOfByte(bytes: Uint8Array, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) {
    if (bytes[i] === 0x0a || (bytes[i] === 0x0d && bytes[i + 1] !== 0x0a)) line++;
  }
  return line;
}

/** The first line that is not UTF-8 (no UTF-8 sequence holds a CR or LF byte, so lines decode apart). */
function firstBadUtf8Line(bytes: Uint8Array): number {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let line = 1;
  let start = 0;
  for (let i = 0; i <= bytes.length; i++) {
    const b = bytes[i];
    if (i < bytes.length && b !== 0x0a && b !== 0x0d) continue;
    try {
      decoder.decode(bytes.subarray(start, i));
    } catch {
      return line;
    }
    if (b === 0x0d && bytes[i + 1] === 0x0a) i++;
    start = i + 1;
    line++;
  }
  return line;
}

const VTT_TIME = /^(?:(\d{2,}):)?([0-5]\d):([0-5]\d)\.(\d{3})$/;
const SRT_TIME = /^(\d+):([0-5]\d):([0-5]\d)[,.](\d{3})$/;
/** A timing line: two times around "-->", then (after white space) WebVTT settings or SRT coordinates. */
const TIMING = /^(\S+?)[ \t]*-->[ \t]*(\S+)(?:[ \t].*)?$/;
const SHAPE = { webvtt: '"mm:ss.ttt --> mm:ss.ttt" or "hh:mm:ss.ttt --> hh:mm:ss.ttt"', srt: '"hh:mm:ss,mmm --> hh:mm:ss,mmm"' };

function isBlank(line: string): boolean {
  return line.trim() === '';
}

function quote(line: string): string {
  return line.length > 60 ? `"${line.slice(0, 60)}"…` : `"${line}"`;
}

/**
 * The cues of a caption file's lines. Blocks are separated by blank lines; inside a block, a line
 * holding "-->" after the timing starts another cue, as in WebVTT players, which also reads SRT
 * files whose cues have no blank line between them.
 */
function readCues(lines: readonly string[], format: 'srt' | 'webvtt', maxCues: number): Cue[] {
  const cues: Cue[] = [];
  let i = 0;
  if (format === 'webvtt') {
    // The header (the WEBVTT line and metadata lines) ends at the first blank line.
    for (; i < lines.length && !isBlank(lines[i] ?? ''); i++) {
      if ((lines[i] ?? '').includes('-->')) {
        throw new CaptionRefusal(
          'syntax',
          `line ${i + 1}: ${quote(lines[i] ?? '')} is a cue inside the header: leave a blank line after the WEBVTT line.`,
        );
      }
    }
  }
  while (i < lines.length) {
    if (isBlank(lines[i] ?? '')) {
      i++;
      continue;
    }
    let end = i;
    while (end < lines.length && !isBlank(lines[end] ?? '')) end++;
    if (!(format === 'webvtt' && /^(?:NOTE|STYLE|REGION)(?:[ \t]|$)/.test(lines[i] ?? ''))) {
      readBlock(lines, i, end, format, cues, maxCues);
    }
    i = end;
  }
  return cues;
}

/** The cues of the block lines[from, to), appended to `cues`. */
function readBlock(lines: readonly string[], from: number, to: number, format: 'srt' | 'webvtt', cues: Cue[], maxCues: number): void {
  const line = (n: number) => lines[n] ?? '';
  let j = from;
  while (j < to) {
    // A first line without "-->" is the cue's id (WebVTT) or index (SRT), when a line follows it.
    const isId = format === 'webvtt' ? !line(j).includes('-->') : /^\s*\d+\s*$/.test(line(j));
    const t = isId && j + 1 < to ? j + 1 : j;
    const { start, end } = readTiming(line(t), t + 1, format);
    let next = t + 1;
    while (next < to && !line(next).includes('-->')) next++;
    // An SRT index line right before the next cue's timing is that cue's, not this one's text.
    const textEnd = format === 'srt' && next < to && next - 1 > t && /^\s*\d+\s*$/.test(line(next - 1)) ? next - 1 : next;
    const textLines = lines.slice(t + 1, textEnd);
    const previous = cues.at(-1);
    if (previous && start < previous.start) {
      throw new CaptionRefusal(
        'order',
        `line ${t + 1}: the cue starts at ${formatVttTime(start)}, before the cue above it (${formatVttTime(previous.start)}): cues must be in the order they start.`,
      );
    }
    if (cues.length >= maxCues) throw new CaptionRefusal('too-large', `The caption file has more than ${maxCues} cues.`);
    cues.push({ start, end, text: (format === 'srt' ? textLines.map(srtToVttText) : textLines).join('\n') });
    j = textEnd;
  }
}

/** The times of a cue timing line (`number` is its 1-based line number, for the error). */
function readTiming(text: string, number: number, format: 'srt' | 'webvtt'): { start: number; end: number } {
  const m = TIMING.exec(text.trim());
  const start = m?.[1] === undefined ? null : readTime(m[1], format);
  const end = m?.[2] === undefined ? null : readTime(m[2], format);
  if (start === null || end === null) {
    throw new CaptionRefusal('syntax', `line ${number}: ${quote(text)} is not a cue timing (${SHAPE[format]}).`);
  }
  if (end <= start) {
    throw new CaptionRefusal('syntax', `line ${number}: the cue ends at ${formatVttTime(end)}, not after it starts (${formatVttTime(start)}).`);
  }
  return { start, end };
}

function readTime(text: string, format: 'srt' | 'webvtt'): number | null {
  const m = (format === 'srt' ? SRT_TIME : VTT_TIME).exec(text);
  if (!m) return null;
  const [, h = '0', min = '0', s = '0', ms = '0'] = m;
  return Number(h) * 3600 + Number(min) * 60 + Number(s) + Number(ms) / 1000;
}

/**
 * A line of SRT text as WebVTT cue text: SRT's <i>, <b> and <u> are WebVTT's too (in lower case,
 * as WebVTT reads tag names), <font> has no WebVTT equivalent and goes, and any other "<", ">" or
 * "&" is text and is escaped.
 */
function srtToVttText(line: string): string {
  return line.replace(/<(\/?)([ibu])>|<\/?font(?:\s[^>]*)?>|[&<>]/gi, (match, slash: string | undefined, tag: string | undefined) => {
    if (tag !== undefined) return `<${slash ?? ''}${tag.toLowerCase()}>`;
    return ESCAPES[match] ?? '';
  });
}

/**
 * The WebVTT files of an HLS subtitle rendition (RFC 8216 3.5), one per segment of the video so
 * that a player loads captions as it loads the video: segment i spans [cuts[i-1] or 0, cuts[i] or
 * durationSeconds]. Each file holds every cue that overlaps its segment, with its original times
 * (a cue over a boundary is in both files; players show it once), and maps its times to the video
 * segments' MPEG-TS clock with X-TIMESTAMP-MAP: MPEGTS is `timestampOffsetSeconds` (default 0) on
 * the 90 kHz clock, the timestamp that the segments' time 0 has. Returns each file's text and its
 * segment's length, for the playlist's EXTINF. Throws when the cuts are not increasing times
 * inside (0, durationSeconds).
 */
export function segmentVtt(
  cues: readonly Cue[],
  cuts: readonly number[],
  durationSeconds: number,
  o: { timestampOffsetSeconds?: number; keepMarkup?: boolean } = {},
): Array<{ text: string; seconds: number }> {
  const bounds = [0, ...cuts, durationSeconds];
  for (let i = 1; i < bounds.length; i++) {
    const [before, at] = [bounds[i - 1] ?? 0, bounds[i] ?? 0];
    if (!(at > before) || !Number.isFinite(at)) {
      throw new RangeError(`segmentVtt needs cuts increasing inside (0, ${durationSeconds}): ${cuts.join(', ')}.`);
    }
  }
  const header = `WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:${Math.round((o.timestampOffsetSeconds ?? 0) * 90000)},LOCAL:00:00:00.000\n\n`;
  return bounds.slice(1).map((segmentEnd, i) => {
    const segmentStart = bounds[i] ?? 0;
    const inside = cues.filter((c) => c.start < segmentEnd && c.end > segmentStart);
    return { text: header + cueBlocks(inside, o.keepMarkup ?? false), seconds: segmentEnd - segmentStart };
  });
}
