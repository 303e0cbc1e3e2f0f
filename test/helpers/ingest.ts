import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { VopServer } from '../../server/app.js';
import type { SpecClient } from './client.js';
import { notYet, waitUntil } from './wait.js';

/** sha256 of a file, hex. */
export function sha256File(file: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

export function sha256(data: Buffer): string {
  return crypto.createHash('sha256').update(data).digest('hex');
}

/** Statuses that end ingest: download failed, waiting for transcoding, not a video. */
const INGEST_OUTCOMES = [4, 5, 7];

/**
 * Resolves with how ingest ended for the video (4, 5 or 7), read from its status history: the
 * transcoder may already have moved it on from 5.
 */
export async function waitForIngest(vop: VopServer, videoId: string, timeoutMs = 20_000): Promise<number> {
  return waitUntil(`the end of ingest of ${videoId}`, async () => {
    const path = await ingestPath(vop, videoId);
    const last = path.at(-1);
    return path.length > 1 && last !== undefined && INGEST_OUTCOMES.includes(last) ? last : notYet(`statuses so far: ${path.join(' → ')}`);
  }, { timeoutMs, pollMs: 25 });
}

/** The statuses of ingest, oldest first: the history up to the first of 4, 5 or 7. */
export async function ingestPath(vop: VopServer, videoId: string): Promise<number[]> {
  const all = await statusPath(vop, videoId);
  const end = all.findIndex((s, i) => i > 0 && INGEST_OUTCOMES.includes(s));
  return end === -1 ? all : all.slice(0, end + 1);
}

/** The statuses a video went through, oldest first (the registration's first row included). */
export async function statusPath(vop: VopServer, videoId: string): Promise<number[]> {
  return (await vop.stores.videos.statusHistory(videoId)).map((c) => c.to);
}

/** tus Upload-Metadata: `key base64(value)` pairs. */
export function tusMetadata(values: Record<string, string>): string {
  return Object.entries(values)
    .map(([k, v]) => `${k} ${Buffer.from(v).toString('base64')}`)
    .join(',');
}

/** The widget's auth values as tus metadata keys, for `videoId`. */
export function tokenMetadata(client: SpecClient, videoId: string, extra: Record<string, string> = {}): Record<string, string> {
  const a = client.auth();
  return { appId: a.AppId!, timestamp: a.Timestamp!, token: a.Token!, videoId, filename: 'clip.mp4', ...extra };
}

/** Raw tus creation (POST); resolves with the response and the absolute upload URL, if any. */
export async function tusCreate(baseUrl: string, length: number, headers: Record<string, string>): Promise<{ res: Response; url: string | undefined; body: string }> {
  const res = await fetch(`${baseUrl}/upload/tus/`, {
    method: 'POST',
    headers: { 'Tus-Resumable': '1.0.0', 'Upload-Length': String(length), ...headers },
  });
  const location = res.headers.get('location');
  return { res, url: location ? new URL(location, baseUrl).toString() : undefined, body: await res.text() };
}

/** An upload's id: the last part of its URL, which is also its file's name under incoming/tus. */
export function tusUploadId(url: string): string {
  return new URL(url).pathname.split('/').pop()!;
}

/**
 * A PATCH from offset 0 that announces `length` bytes in Content-Length and sends none yet: the
 * caller writes part of the body and then stalls or drops it (a slow or vanished client).
 */
export function openTusPatch(url: string, length: number): http.ClientRequest {
  const target = new URL(url);
  return http.request({
    host: target.hostname,
    port: target.port,
    path: target.pathname,
    method: 'PATCH',
    headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream', 'Content-Length': String(length) },
  });
}

/** Raw tus PATCH of `data` at `offset`. */
export async function tusPatch(url: string, offset: number, data: Buffer, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'PATCH',
    headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream', ...headers },
    body: Uint8Array.from(data),
  });
}

/** Raw tus HEAD. */
export async function tusHead(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'HEAD', headers: { 'Tus-Resumable': '1.0.0', ...headers } });
}

/** A multipart upload (`POST /Api/Video/Upload`, the form a server-side uploader sends) of `data` for `videoId`; resolves with the ResultCode. */
export async function multipartUpload(client: SpecClient, videoId: string, data: Buffer, filename = 'clip.mp4'): Promise<string> {
  const form = new FormData();
  for (const [k, v] of Object.entries({ ...client.auth(), VideoId: videoId })) form.append(k, v);
  form.append('file', new Blob([Uint8Array.from(data)], { type: 'video/mp4' }), filename);
  const res = await fetch(`${client.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form });
  return (await res.json()).AuthMsg.ResultCode;
}

/** Bytes in the data files under `dir`, recursively (tus's small .json metadata files left out, for exact sums). */
export function bytesUnder(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && !e.name.endsWith('.json')) total += fs.statSync(path.join(e.parentPath, e.name)).size;
  }
  return total;
}
