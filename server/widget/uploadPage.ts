import { escapeHtml } from '../core/htmlText.js';
import type { Request, Response } from 'express';
import { RESULT_CODES, type ApiError } from '../core/errors.js';
import { ERROR_PAGE_TEXT, errorPageSentence, type ErrorPageLanguage } from './errorPageText.js';

/** The two forms of spec 4.5: the page is the same, only where it posts its results differs. */
export type WidgetMode = 'window' | 'overlay';

/** What the upload page's script reads from its `#vop-session` block (widget/page/upload.js `Session`). */
export interface UploadPageData {
  videoId: string;
  /** Sent as X-Upload-Credential on every tus request: scoped to this video, expiring. */
  credential: string;
  expiresAt: number;
  maxBytes: number;
  uploadType: 'flash' | 'silverlight';
  needHandleSepcial: boolean;
  /** The only origin the page posts results to (empty: posts nothing). */
  hostOrigin: string;
  mode: WidgetMode;
  /** tus creation URL, relative to the page (so that a path prefix in front of vop still works). */
  endpoint: string;
  chunkSize: number;
  retryDelays: number[];
  /** The result code the page shows, and reports, for a file that is not a video. */
  notAVideo: { code: string; message: string };
  /**
   * The quick look at a chosen file before it is sent (ingest/quickLook.ts): the names that are
   * never videos, how many first bytes to read, and where to report such a file (relative to the page).
   */
  quickLook: { extensions: readonly string[]; bytes: number; report: string };
}

/** {@link UploadPageData.notAVideo}, from the one catalogue. */
export const NOT_A_VIDEO_FOR_PAGE = { code: RESULT_CODES.NOT_A_VIDEO.code, message: RESULT_CODES.NOT_A_VIDEO.message };

/** What the error page's script reads from its `#vop-error` block (widget/page/failed.js). */
export interface ErrorPageData {
  code: string;
  message: string;
  /** The origin the error is posted to; empty: posted nowhere (no valid origin was given). */
  hostOrigin: string;
  mode: WidgetMode;
}

/** The browser's language among the upload page's: any Chinese is zh-CN, else English. */
export function pageLanguage(req: Request): ErrorPageLanguage {
  const best = req.acceptsLanguages('en', 'zh', 'zh-CN', 'zh-Hans', 'zh-TW', 'zh-HK', 'zh-SG');
  return typeof best === 'string' && best.startsWith('zh') ? 'zh-CN' : 'en';
}

/** Where the template takes the session block. */
const SESSION_MARK = '<!--VOP_SESSION-->';

/**
 * JSON that is safe inside a `<script type="application/json">` element: `<`, `>` and `&` are
 * escaped so that no value (a file name, a reason) can close the element or open a comment, and
 * U+2028/2029 for old parsers. JSON.parse reads the escapes back as the same characters.
 */
export function jsonForScriptBlock(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Fills the page template (widget/page/upload.html) with the session block. */
export function renderUploadPage(template: string, data: UploadPageData): string {
  if (!template.includes(SESSION_MARK)) throw new Error(`upload page template lacks ${SESSION_MARK}`);
  return template.replace(SESSION_MARK, () => `<script type="application/json" id="vop-session">${jsonForScriptBlock(data)}</script>`);
}

/**
 * The upload page's Content-Security-Policy. Scripts and styles only from vop itself, no inline
 * script at all (the session is a JSON data block, which CSP does not execute), requests only to
 * vop (the tus endpoint).
 *
 * Framing: the overlay form shows the page in an iframe on the host's page, so `frame-ancestors *`
 * there; the window form forbids framing. Clickjacking the overlay gains an attacker nothing: the
 * page does one thing, upload a file that the user picks in the browser's own file chooser, to the
 * one video whose token the embedding application computed; whoever holds that token could upload
 * without the page anyway.
 */
export function uploadPageCsp(mode: WidgetMode): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    mode === 'overlay' ? 'frame-ancestors *' : "frame-ancestors 'none'",
  ].join('; ');
}

/** Headers every answer of `/widget/upload` carries: it holds a token and a credential. */
function commonPageHeaders(res: Response): void {
  res.set({
    'Cache-Control': 'no-store',
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
    // The window form needs window.opener to post its result: a COOP other than unsafe-none would cut it.
    'Cross-Origin-Opener-Policy': 'unsafe-none',
  });
}

/** Sends the upload page. */
export function sendUploadPage(res: Response, html: string, mode: WidgetMode): void {
  commonPageHeaders(res);
  res.set({ 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': uploadPageCsp(mode) });
  if (mode === 'window') res.set('X-Frame-Options', 'DENY');
  res.status(200).send(html);
}

/** Spec 4.5 and 7.2: the plain text the page shows when the values do not check out. */
export function widgetErrorText(err: ApiError): string {
  return `ErrorCode : ${err.code}, ErrorMessage : ${err.message}`;
}

/**
 * Sends the spec's error text, with the catalogue's HTTP status. It may be framed (the overlay
 * shows it in its layer).
 *
 * Spec 4.5 says the text appears as a plain-text page, and so it does to any client that does not
 * prefer HTML. A browser opening the widget asks for HTML: a person reads it, so it gets a
 * sentence in its language (errorPageText.ts) with the same line in small print under it, plus
 * one script of vop's (widget/page/failed.js) that posts the code and message to the host page's
 * origin, so that onFailure can say why instead of "closed". The message holds nothing the URL's
 * holder could not read by opening it.
 */
export function sendWidgetError(req: Request, res: Response, err: ApiError, page: Omit<ErrorPageData, 'code' | 'message'>): void {
  commonPageHeaders(res);
  res.vary('Accept');
  const text = widgetErrorText(err);
  if (req.accepts(['text/plain', 'text/html']) !== 'text/html') {
    res.set({ 'Content-Type': 'text/plain; charset=utf-8', 'Content-Security-Policy': "default-src 'none'; frame-ancestors *" });
    res.status(err.def.httpStatus).send(text);
    return;
  }
  const data: ErrorPageData = { code: err.code, message: err.message, ...page };
  const lang = pageLanguage(req);
  res.vary('Accept-Language');
  const html =
    `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><title>${ERROR_PAGE_TEXT[lang].title}</title>` +
    `<script type="application/json" id="vop-error">${jsonForScriptBlock(data)}</script>` +
    `<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="stylesheet" href="page/failed.css">` +
    `<script src="page/failed.js" defer></script></head>` +
    `<body><main class="failed"><p id="sentence">${escapeHtml(errorPageSentence(lang, err.code))}</p><small><pre>${escapeHtml(text)}</pre></small>` +
    // Shown by failed.js where it can close the page (the window the widget opened).
    `<button type="button" id="close" hidden>${ERROR_PAGE_TEXT[lang].close}</button></main></body></html>`;
  res.set({
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors *",
  });
  res.status(err.def.httpStatus).send(html);
}
