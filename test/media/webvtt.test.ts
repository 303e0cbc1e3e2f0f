/**
 * Captions and chapters as WebVTT: caption files uploaded as SRT or WebVTT read into cues (or
 * refused with the line to fix), cues and chapters written back, language tags checked, and the
 * segmented WebVTT of an HLS subtitle rendition.
 */
import { describe, expect, it } from 'vitest';
import { canonicalLanguage, languageName } from '../../server/media/languages.js';
import {
  buildChaptersVtt,
  buildVtt,
  formatVttTime,
  parseCaptionFile,
  segmentVtt,
  type CaptionParse,
} from '../../server/media/webvtt.js';

const utf8 = (text: string) => new TextEncoder().encode(text);
const parse = (text: string, o?: { maxBytes?: number; maxCues?: number }) => parseCaptionFile(utf8(text), o);
const refusal = (r: CaptionParse) => (r.ok ? 'accepted' : { problem: r.problem, detail: r.detail });

describe('formatVttTime', () => {
  it('writes hours, minutes, seconds and milliseconds, rounded to the millisecond', () => {
    expect(formatVttTime(0)).toBe('00:00:00.000');
    expect(formatVttTime(61.5)).toBe('00:01:01.500');
    expect(formatVttTime(3599.9996)).toBe('01:00:00.000');
    expect(formatVttTime(100 * 3600 + 0.001)).toBe('100:00:00.001');
  });

  it('refuses a time no cue can have', () => {
    expect(() => formatVttTime(-1)).toThrow(/≥ 0, not -1/);
    expect(() => formatVttTime(Number.NaN)).toThrow(RangeError);
  });
});

describe('buildVtt', () => {
  it('writes the header then each cue and its blank line', () => {
    expect(buildVtt([{ start: 1, end: 2.25, text: 'Hello\nworld' }, { start: 3, end: 4, text: 'Bye' }])).toBe(
      'WEBVTT\n\n00:00:01.000 --> 00:00:02.250\nHello\nworld\n\n00:00:03.000 --> 00:00:04.000\nBye\n\n',
    );
    expect(buildVtt([])).toBe('WEBVTT\n\n');
  });

  it('escapes plain text so that it can neither inject a tag nor end the cue', () => {
    expect(buildVtt([{ start: 0, end: 1, text: 'a <b> & c\n\n  \nx --> y\r\nz' }])).toBe(
      'WEBVTT\n\n00:00:00.000 --> 00:00:01.000\na &lt;b&gt; &amp; c\nx --&gt; y\nz\n\n',
    );
  });

  it('keeps markup when asked, still dropping blank lines and neutralising "-->"', () => {
    expect(buildVtt([{ start: 0, end: 1, text: '<i>a</i> &amp;\n\nb --> c' }], { keepMarkup: true })).toBe(
      'WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n<i>a</i> &amp;\nb --&gt; c\n\n',
    );
  });
});

describe('buildChaptersVtt', () => {
  it('names untitled chapters by their place, sorts them, and clips overlaps to the next start', () => {
    const text = buildChaptersVtt([
      { start: 300, end: 400, title: null },
      { start: 0, end: 120, title: 'Intro' },
      { start: 110, end: 310, title: '  ' },
    ]);
    expect(text).toBe(
      'WEBVTT\n\n' +
        '00:00:00.000 --> 00:01:50.000\nIntro\n\n' +
        '00:01:50.000 --> 00:05:00.000\nChapter 2\n\n' +
        '00:05:00.000 --> 00:06:40.000\nChapter 3\n\n',
    );
  });

  it('drops empty and negative chapters, clips to the duration, and escapes titles on one line', () => {
    const text = buildChaptersVtt(
      [
        { start: -5, end: 10, title: 'Cold open' },
        { start: 20, end: 20, title: 'Empty' },
        { start: 30, end: 25, title: 'Backwards' },
        { start: 40, end: 90, title: 'Q&A\n<live>' },
        { start: 70, end: 80, title: 'Past the end' },
      ],
      60,
    );
    expect(text).toBe('WEBVTT\n\n00:00:00.000 --> 00:00:10.000\nCold open\n\n00:00:40.000 --> 00:01:00.000\nQ&amp;A &lt;live&gt;\n\n');
  });

  it('is null when no chapter is left', () => {
    expect(buildChaptersVtt([])).toBeNull();
    expect(buildChaptersVtt([{ start: 5, end: 5 }, { start: 100, end: 200, title: 'After' }], 60)).toBeNull();
  });
});

describe('parseCaptionFile: SRT', () => {
  it('reads an SRT file with CRLF line ends and a UTF-8 byte order mark', () => {
    const r = parse('\uFEFF1\r\n00:00:01,000 --> 00:00:02,500\r\nHello\r\nthere\r\n\r\n2\r\n00:00:03,000 --> 00:00:04,000\r\nBye ✓\r\n');
    expect(r).toEqual({
      ok: true,
      format: 'srt',
      cues: [
        { start: 1, end: 2.5, text: 'Hello\nthere' },
        { start: 3, end: 4, text: 'Bye ✓' },
      ],
    });
  });

  it('accepts CR line ends, a missing index, "." before the milliseconds and coordinates', () => {
    const r = parse('00:00:01.000 --> 00:00:02.000 X1:10 X2:20 Y1:5 Y2:9\rOne\r\r2\r01:00:03,250 --> 01:00:04,000\rTwo\r');
    expect(r).toEqual({
      ok: true,
      format: 'srt',
      cues: [
        { start: 1, end: 2, text: 'One' },
        { start: 3603.25, end: 3604, text: 'Two' },
      ],
    });
  });

  it('keeps <i>, <b> and <u>, drops <font>, and escapes any other markup character', () => {
    const r = parse('1\n00:00:01,000 --> 00:00:02,000\n<font color="#ff0000">Red</font> <I>it</I> <b>b</b> <u>u</u>\nTom & Jerry <3 a>b\n');
    expect(r.ok && r.cues[0]?.text).toBe('Red <i>it</i> <b>b</b> <u>u</u>\nTom &amp; Jerry &lt;3 a&gt;b');
  });

  it('reads cues with no blank line between them, the index line going with the next cue', () => {
    const r = parse('1\n00:00:01,000 --> 00:00:02,000\nOne\n2\n00:00:03,000 --> 00:00:04,000\nTwo\n');
    expect(r.ok && r.cues).toEqual([
      { start: 1, end: 2, text: 'One' },
      { start: 3, end: 4, text: 'Two' },
    ]);
  });

  it('refuses a malformed timing, naming and quoting the line', () => {
    expect(refusal(parse('1\n00:00:01,000 --> 00:00:02,000\nOk\n\n2\n00:01:02 --> 00:01:03\nNo\n'))).toEqual({
      problem: 'syntax',
      detail: 'line 6: "00:01:02 --> 00:01:03" is not a cue timing ("hh:mm:ss,mmm --> hh:mm:ss,mmm").',
    });
    expect(refusal(parse('1\n00:00:61,000 --> 00:00:62,000\nx\n'))).toMatchObject({ problem: 'syntax', detail: expect.stringMatching(/^line 2: /) });
    expect(refusal(parse('00:60:00,000 --> 00:61:00,000\nx\n'))).toMatchObject({ problem: 'syntax', detail: expect.stringMatching(/^line 1: /) });
  });

  it('quotes at most 60 characters of the line', () => {
    const long = 'x'.repeat(100);
    expect(refusal(parse(`${long}\nsome text\n`))).toEqual({
      problem: 'syntax',
      detail: `line 1: "${'x'.repeat(60)}"… is not a cue timing ("hh:mm:ss,mmm --> hh:mm:ss,mmm").`,
    });
  });

  it('refuses a cue that does not end after it starts', () => {
    expect(refusal(parse('1\n00:00:01,000 --> 00:00:02,000\nOk\n\n2\n00:00:05,000 --> 00:00:04,000\nNo\n'))).toEqual({
      problem: 'syntax',
      detail: 'line 6: the cue ends at 00:00:04.000, not after it starts (00:00:05.000).',
    });
    expect(refusal(parse('00:00:05,000 --> 00:00:05,000\nNo\n'))).toMatchObject({ problem: 'syntax' });
  });

  it('refuses cues whose starts go backwards, but not cues starting together', () => {
    expect(refusal(parse('1\n00:00:05,000 --> 00:00:06,000\nA\n\n2\n00:00:01,000 --> 00:00:02,000\nB\n'))).toEqual({
      problem: 'order',
      detail: 'line 6: the cue starts at 00:00:01.000, before the cue above it (00:00:05.000): cues must be in the order they start.',
    });
    expect(parse('00:00:05,000 --> 00:00:06,000\nA\n\n00:00:05,000 --> 00:00:07,000\nB\n').ok).toBe(true);
  });
});

describe('parseCaptionFile: WebVTT', () => {
  it('skips the header, NOTE, STYLE and REGION blocks, ids and settings, and keeps markup', () => {
    const r = parse(
      [
        'WEBVTT - made by hand',
        'Kind: captions',
        '',
        'NOTE a comment',
        'over two lines',
        '',
        'STYLE',
        '::cue { color: yellow }',
        '',
        'REGION',
        'id:left width:40%',
        '',
        'intro',
        '00:01.000 --> 00:02.500 align:start position:10%',
        '<v Bob>Hi</v> &amp; <i>bye</i>',
        '',
        '01:00:00.000 --> 01:00:01.000',
        'Later',
        '',
      ].join('\n'),
    );
    expect(r).toEqual({
      ok: true,
      format: 'webvtt',
      cues: [
        { start: 1, end: 2.5, text: '<v Bob>Hi</v> &amp; <i>bye</i>' },
        { start: 3600, end: 3601, text: 'Later' },
      ],
    });
    if (r.ok) {
      expect(buildVtt(r.cues, { keepMarkup: true })).toBe(
        'WEBVTT\n\n00:00:01.000 --> 00:00:02.500\n<v Bob>Hi</v> &amp; <i>bye</i>\n\n01:00:00.000 --> 01:00:01.000\nLater\n\n',
      );
    }
  });

  it('is WebVTT only when the first line is WEBVTT alone or followed by a space or tab', () => {
    expect(parse('WEBVTT\t\n\n00:01.000 --> 00:02.000\nx\n')).toMatchObject({ ok: true, format: 'webvtt' });
    expect(parse('WEBVTTX\n\n00:00:01,000 --> 00:00:02,000\nx\n')).toMatchObject({ ok: false, problem: 'syntax' });
  });

  it('refuses SRT times in a WebVTT file, naming the line', () => {
    expect(refusal(parse('WEBVTT\n\n1\n00:00:01,000 --> 00:00:02,000\nx\n'))).toEqual({
      problem: 'syntax',
      detail: 'line 4: "00:00:01,000 --> 00:00:02,000" is not a cue timing ("mm:ss.ttt --> mm:ss.ttt" or "hh:mm:ss.ttt --> hh:mm:ss.ttt").',
    });
  });

  it('refuses a cue inside the header, whose blank line is missing', () => {
    expect(refusal(parse('WEBVTT\n00:01.000 --> 00:02.000\nx\n'))).toEqual({
      problem: 'syntax',
      detail: 'line 2: "00:01.000 --> 00:02.000" is a cue inside the header: leave a blank line after the WEBVTT line.',
    });
  });

  it('refuses a WebVTT file with only a header and notes as empty', () => {
    expect(refusal(parse('WEBVTT\n\nNOTE nothing yet\n'))).toEqual({ problem: 'empty', detail: 'The WebVTT file holds no cue.' });
  });
});

describe('parseCaptionFile: bytes', () => {
  it('refuses a file over the size limit before reading it', () => {
    expect(refusal(parseCaptionFile(new Uint8Array(11), { maxBytes: 10 }))).toEqual({
      problem: 'too-large',
      detail: 'The caption file is 11 bytes, over the limit of 10 bytes.',
    });
    expect(refusal(parseCaptionFile(new Uint8Array(2 * 1024 * 1024 + 1)))).toMatchObject({ problem: 'too-large' });
  });

  it('refuses more cues than the limit', () => {
    const cues = (n: number) => Array.from({ length: n }, (_, i) => `00:00:0${i},000 --> 00:00:0${i},500\nc${i}\n`).join('\n');
    expect(parse(cues(3), { maxCues: 3 }).ok).toBe(true);
    expect(refusal(parse(cues(4), { maxCues: 3 }))).toEqual({ problem: 'too-large', detail: 'The caption file has more than 3 cues.' });
  });

  it('refuses UTF-16, with or without its byte order mark', () => {
    const le = new Uint8Array([0xff, 0xfe, ...[...'1\n'].flatMap((c) => [c.charCodeAt(0), 0])]);
    expect(refusal(parseCaptionFile(le))).toEqual({ problem: 'encoding', detail: 'The caption file is UTF-16; save it as UTF-8.' });
    expect(refusal(parseCaptionFile(new Uint8Array([0xfe, 0xff, 0, 0x31])))).toMatchObject({ problem: 'encoding' });
  });

  it('refuses NUL and other control bytes as not text, but not tab or form feed', () => {
    expect(refusal(parseCaptionFile(utf8('1\n00:00:01,000 --> 00:00:02,000\nA\u0000B\n')))).toEqual({
      problem: 'not-text',
      detail: 'The caption file is not text: byte 33 (line 3) is the control character 0x00.',
    });
    expect(refusal(parse('00:00:01,000 --> 00:00:02,000\n\u001bx\n'))).toMatchObject({ problem: 'not-text' });
    expect(parse('00:00:01,000 --> 00:00:02,000\na\tb\fc\n')).toMatchObject({ ok: true, cues: [{ text: 'a\tb\fc' }] });
  });

  it('refuses Latin-1 bytes as not UTF-8, naming the first line that is not', () => {
    const bytes = new Uint8Array([...utf8('1\r\n00:00:01,000 --> 00:00:02,000\r\nCaf'), 0xe9, 0x0d, 0x0a]);
    expect(refusal(parseCaptionFile(bytes))).toEqual({
      problem: 'encoding',
      detail: 'The caption file is not UTF-8 (line 3 is not; Latin-1 or Windows-1252?); save it as UTF-8.',
    });
  });

  it('refuses a file with no cue at all', () => {
    expect(refusal(parse(''))).toEqual({ problem: 'empty', detail: 'The SRT file holds no cue.' });
    expect(refusal(parse('\r\n\r\n'))).toMatchObject({ problem: 'empty' });
  });
});

describe('caption languages', () => {
  it('canonicalises well-formed tags of known languages', () => {
    expect(canonicalLanguage('eng')).toBe('en');
    expect(canonicalLanguage('pt-br')).toBe('pt-BR');
    expect(canonicalLanguage('zh-Hans')).toBe('zh-Hans');
    expect(canonicalLanguage('EN-us')).toBe('en-US');
  });

  it('refuses unknown languages, "und", malformed and overlong tags', () => {
    expect(canonicalLanguage('xx')).toBeNull();
    expect(canonicalLanguage('und')).toBeNull();
    expect(canonicalLanguage('not a tag')).toBeNull();
    expect(canonicalLanguage('')).toBeNull();
    const overlong = 'en-US-u-ca-gregory-nu-latn-hc-h23-kf-upper';
    expect(Intl.getCanonicalLocales(overlong)).toHaveLength(1);
    expect(canonicalLanguage(overlong)).toBeNull();
  });

  it('names a tag in English, or gives the tag back when it has no name', () => {
    expect(languageName('en')).toBe('English');
    expect(languageName('pt-BR')).toBe('Brazilian Portuguese');
    expect(languageName('xx')).toBe('xx');
    expect(languageName('not a tag')).toBe('not a tag');
  });
});

describe('segmentVtt', () => {
  const cues = [
    { start: 1, end: 2, text: 'first' },
    { start: 5, end: 7, text: 'over the cut <b>' },
    { start: 12, end: 13, text: 'last' },
  ];

  it('writes one file per segment, a cue over a boundary in both, with the MPEG-TS timestamp map', () => {
    const files = segmentVtt(cues, [6, 12], 14, { timestampOffsetSeconds: 1.4 });
    const header = 'WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n\n';
    expect(files).toEqual([
      {
        text: `${header}00:00:01.000 --> 00:00:02.000\nfirst\n\n00:00:05.000 --> 00:00:07.000\nover the cut &lt;b&gt;\n\n`,
        seconds: 6,
      },
      { text: `${header}00:00:05.000 --> 00:00:07.000\nover the cut &lt;b&gt;\n\n`, seconds: 6 },
      { text: `${header}00:00:12.000 --> 00:00:13.000\nlast\n\n`, seconds: 2 },
    ]);
  });

  it('maps to MPEG-TS 0 by default, keeps markup when asked, and writes empty segments', () => {
    const files = segmentVtt([{ start: 0.5, end: 1, text: '<i>a</i>' }], [4], 8, { keepMarkup: true });
    expect(files).toEqual([
      { text: 'WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n00:00:00.500 --> 00:00:01.000\n<i>a</i>\n\n', seconds: 4 },
      { text: 'WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n', seconds: 4 },
    ]);
    expect(segmentVtt([], [], 3)).toEqual([{ text: 'WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n', seconds: 3 }]);
  });

  it('refuses cuts that are not increasing inside the duration', () => {
    expect(() => segmentVtt(cues, [6, 4], 14)).toThrow(/cuts increasing inside \(0, 14\): 6, 4/);
    expect(() => segmentVtt(cues, [14], 14)).toThrow(RangeError);
  });
});
