/**
 * The clients of the upload benchmark (bench/uploadBench.ts): the application it uploads for,
 * tus-js-client, a streamed multipart form, and a plain PUT to the bare server. Each reads the
 * file {@link CLIENT_READ_BYTES} at a time.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { pipeline } from 'node:stream/promises';
import * as tus from 'tus-js-client';
import { tokenSource } from './lib.js';

/** Bytes each read of the clients takes from the file (fewer, larger writes to the socket). */
export const CLIENT_READ_BYTES = 1024 * 1024;

/** The admin token vop is started with. */
export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

/** The spec's three values (section 5), as the clients send them. */
export type SpecAuth = { appId: string; timestamp: string; token: string };

/** The application the benchmark uploads for. */
export interface BenchApp {
  /** Registers a video to be uploaded (SourceFileGetType 1); resolves with its id. */
  register(): Promise<string>;
  /** The video's Status from the detail call (spec 4.4). */
  status(videoId: string): Promise<number>;
  auth(): SpecAuth;
}

/** An application created through the admin API, registering its videos through the spec API. */
export async function benchApp(baseUrl: string): Promise<BenchApp> {
  const res = await fetch(`${baseUrl}/admin/api/apps`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench upload' }),
  });
  if (res.status !== 201) throw new Error(`creating the bench app failed: ${res.status} ${await res.text()}`);
  const { appId, appSecret } = (await res.json()) as { appId: string; appSecret: string };
  const tokens = tokenSource(appSecret);
  const auth = () => ({ appId, ...tokens() });
  return {
    auth,
    async register() {
      const a = auth();
      const body = new URLSearchParams({ AppId: a.appId, Timestamp: a.timestamp, Token: a.token, VideoTitle: 'bench upload', SourceFileGetType: '1' });
      const r = await fetch(`${baseUrl}/Api/Video/Post`, { method: 'POST', body });
      const parsed = (await r.json()) as { AuthMsg?: { ResultCode?: string }; VideoId?: string };
      if (parsed.AuthMsg?.ResultCode !== '1' || !parsed.VideoId) throw new Error(`registering a video failed: ${JSON.stringify(parsed)}`);
      return parsed.VideoId;
    },
    async status(videoId) {
      const a = auth();
      const q = new URLSearchParams({ AppId: a.appId, Timestamp: a.timestamp, Token: a.token, Id: videoId });
      const parsed = (await (await fetch(`${baseUrl}/Api/Video/Get?${q}`)).json()) as { VideoModel?: { Status?: number } };
      return parsed.VideoModel?.Status ?? NaN;
    },
  };
}

/**
 * tus-js-client, the reference client, in Node: a creation POST, then PATCHes of `chunkSize`
 * bytes. Its own file reader reads 64 KiB at a time through a progress Transform, which on a
 * shared two-core machine takes CPU from vop; {@link fileReader} gives it 1 MiB reads, as the
 * multipart client has, so that both clients cost about the same.
 */
export function tusUpload(baseUrl: string, source: string, size: number, videoId: string, auth: SpecAuth, chunkSize: number): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    let status = NaN;
    // The input goes to fileReader alone, which knows the file already.
    const upload = new tus.Upload(source as unknown as Buffer, {
      endpoint: `${baseUrl}/upload/tus/`,
      chunkSize,
      fileReader: fileReader(source, size),
      retryDelays: null,
      storeFingerprintForResuming: false,
      metadata: { ...auth, videoId, filename: 'bench.bin' },
      onAfterResponse: (_req, res) => {
        const s = res.getHeader('X-Video-Status');
        if (s) status = Number(s);
      },
      onSuccess: () => resolve({ status }),
      onError: reject,
    });
    upload.start();
  });
}

/** A tus-js-client file reader for one file that streams each PATCH's slice in {@link CLIENT_READ_BYTES} reads. */
function fileReader(file: string, size: number): NonNullable<tus.UploadOptions['fileReader']> {
  return {
    openFile: async () => ({
      size,
      async slice(start: number, end: number) {
        const last = Math.min(end, size);
        // The Node HTTP stack of tus-js-client sends a Readable with its `size` as Content-Length.
        const stream = Object.assign(fs.createReadStream(file, { start, end: last - 1, highWaterMark: CLIENT_READ_BYTES }), { size: last - start });
        return { value: stream, done: last >= size };
      },
      close: () => undefined,
    }),
  };
}

/**
 * `POST /Api/Video/Upload` as an application server would stream it: the form built on the fly,
 * fields first, then the file part straight from a read stream, with its Content-Length.
 */
export async function multipartUpload(baseUrl: string, source: string, size: number, videoId: string, auth: SpecAuth): Promise<{ status: number }> {
  const boundary = `----vop-bench-${crypto.randomBytes(12).toString('hex')}`;
  const fields = { AppId: auth.appId, Timestamp: auth.timestamp, Token: auth.token, VideoId: videoId };
  const head = Buffer.from(
    Object.entries(fields)
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join('') +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const res = await sendFile(new URL('/Api/Video/Upload', baseUrl), 'POST', `multipart/form-data; boundary=${boundary}`, source, size, head, tail);
  const parsed = JSON.parse(res.body) as { AuthMsg?: { ResultCode?: string } };
  if (res.status !== 200 || parsed.AuthMsg?.ResultCode !== '1') throw new Error(`multipart upload failed: ${res.status} ${res.body}`);
  return { status: NaN };
}

/** The same bytes as the body of a PUT to the bare server. */
export async function bareUpload(baseUrl: string, name: string, source: string, size: number): Promise<void> {
  const res = await sendFile(new URL(`/${name}`, baseUrl), 'PUT', 'application/octet-stream', source, size);
  if (res.status !== 204) throw new Error(`upload to the bare server failed: ${res.status} ${res.body}`);
}

/** One request whose body is `head`, the file read {@link CLIENT_READ_BYTES} at a time, then `tail`; resolves with the answer. */
function sendFile(
  url: URL,
  method: string,
  contentType: string,
  source: string,
  size: number,
  head = Buffer.alloc(0),
  tail = Buffer.alloc(0),
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { 'content-type': contentType, 'content-length': String(head.length + size + tail.length) } });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.write(head);
    pipeline(fs.createReadStream(source, { highWaterMark: CLIENT_READ_BYTES }), req, { end: false }).then(
      () => req.end(tail),
      (err) => req.destroy(err as Error),
    );
  });
}
