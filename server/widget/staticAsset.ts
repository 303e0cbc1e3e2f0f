import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Answer } from '../http/hotPaths.js';

/** A file served from memory with a strong validator: the widget scripts and the page's assets. */
export interface StaticAsset {
  body: Buffer;
  contentType: string;
  /** Quoted strong ETag, from the content. */
  etag: string;
  /** Extra response headers (cross-origin policy, CORS). */
  headers: Record<string, string>;
}

/**
 * Reads `file` once. The files are small (the largest is tus-js-client's build, under 100 KB) and
 * change only with a new release, so memory and one hash at start-up are the whole cost.
 */
export function loadAsset(file: string, contentType: string, headers: Record<string, string> = {}): StaticAsset {
  return assetOf(fs.readFileSync(file), contentType, headers);
}

/**
 * One script made of several source files, read once like {@link loadAsset}: the files in order,
 * each as it is, inside one strict-mode function scope, so that their top-level names are shared
 * between them and private to the script (a host page sees only what they put on `window`). The
 * widget scripts are made this way: spec 4.5 wants each a self-contained script at its own
 * address, and the code both forms share is kept once (widget/src/shared.js).
 */
export function loadScriptBundle(files: string[], contentType: string, headers: Record<string, string> = {}): StaticAsset {
  const parts = files.map((f) => `// ---- ${path.basename(f)} ----\n${fs.readFileSync(f, 'utf8')}`);
  const body = `// Assembled by vop at start-up from ${files.map((f) => path.basename(f)).join(', ')}.\n(function () {\n'use strict';\n\n${parts.join('\n')}\n})();\n`;
  return assetOf(Buffer.from(body, 'utf8'), contentType, headers);
}

function assetOf(body: Buffer, contentType: string, headers: Record<string, string>): StaticAsset {
  const etag = `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  return { body, contentType, etag, headers };
}

/** True if an If-None-Match header names `etag` (weak comparison, as RFC 9110 13.1.2 says for GET). */
export function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/**
 * Sends the asset with a short max-age: a host page picks up a new widget release within
 * minutes, and revalidation is a 304 thanks to the ETag. Answered on the hot paths
 * (http/hotPaths.ts, whose `answer` writes it), with the headers Express's res.send gave it.
 */
export function sendAsset(req: IncomingMessage, res: ServerResponse, asset: StaticAsset, maxAgeSeconds: number, answer: Answer): void {
  const headers = {
    'Content-Type': asset.contentType,
    'Cache-Control': `public, max-age=${maxAgeSeconds}`,
    ETag: asset.etag,
    'X-Content-Type-Options': 'nosniff',
    ...asset.headers,
  };
  if (matches(req.headers['if-none-match'], asset.etag)) {
    answer(res, 304, headers);
    return;
  }
  answer(res, 200, { ...headers, 'Content-Length': asset.body.length }, asset.body);
}
