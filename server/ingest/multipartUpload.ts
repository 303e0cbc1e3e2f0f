import crypto from 'node:crypto';
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import { ApiError, ClientWentAwayError } from '../core/errors.js';
import { clientAddress } from '../http/clientAddress.js';
import { ParamBag } from '../http/params.js';
import { VideoStatus } from '../core/videoStatus.js';
import type { AuthService } from '../auth/authService.js';
import type { LocalMediaRoot } from '../storage/media/localMediaRoot.js';
import { formatBytes } from '../core/formatBytes.js';
import type { IngestService } from './ingestService.js';
import { receiveMeter } from './receiveMeter.js';
import { notAVideoError, type Arrival } from './sourceIntake.js';

/** Room for the form fields and part headers around the file, in the early Content-Length check. */
const FORM_OVERHEAD_BYTES = 64 * 1024;

/**
 * Buffering of the file's write stream. Node's default (16 KiB) is below the 64 KiB the socket
 * delivers at a time: the file was written 64 KiB per system call. With room for several chunks,
 * the socket keeps being read while a write is in flight, and the chunks that queued meanwhile go
 * to the file in one writev. busboy and its file stream keep their defaults: with 1 MiB there too
 * (and a size-guard Transform, now busboy's own 'limit'), the main thread spent about 1.1 s of
 * user CPU per GiB instead of 0.83 s, for the same wall time (1 GiB over loopback, 2 cores).
 */
const STREAM_HIGH_WATER_MARK = 1024 * 1024;

/** The fields `POST /Api/Video/Upload` reads, all before the file part. */
const REQUIRED_FIELDS = ['AppId', 'Timestamp', 'Token', 'VideoId'] as const;

export interface MultipartUploadDeps {
  ingest: IngestService;
  /** Checks the spec values as an API call, with the application's API networks. */
  auth: Pick<AuthService, 'authenticate'>;
  media: LocalMediaRoot;
}

/**
 * `POST /Api/Video/Upload` (issue 3 item 4): multipart/form-data with AppId, Timestamp, Token,
 * VideoId (and optionally NeedHandleSepcial) BEFORE the file part, so the caller and the video
 * are checked before a byte of the file is stored. The file streams to `incoming/<videoId>/`,
 * then takes the same path as a tus upload. Resolves with the video id once the file is stored
 * and checked; rejects with NOT_A_VIDEO if it is not a video.
 */
export async function receiveMultipartUpload(req: IncomingMessage, deps: MultipartUploadDeps): Promise<{ videoId: string }> {
  const { ingest, media } = deps;
  const maxBytes = ingest.options.multipartMaxBytes;
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  if (!type.startsWith('multipart/form-data')) throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'send multipart/form-data with the fields first, then the file');
  const declared = Number(req.headers['content-length'] ?? NaN);
  // Fail fast, before reading: the file alone cannot be smaller than the body minus the form.
  if (Number.isFinite(declared) && declared > maxBytes + FORM_OVERHEAD_BYTES) {
    throw new ApiError('PAYLOAD_TOO_LARGE', `the file may be at most ${formatBytes(maxBytes)}`);
  }

  let bb: busboy.Busboy;
  try {
    // busboy's limits default to unlimited: every one is set.
    bb = busboy({
      headers: req.headers,
      limits: { fieldNameSize: 100, fieldSize: 4096, fields: 20, files: 1, parts: 21, headerPairs: 50, fileSize: maxBytes },
    });
  } catch {
    throw new ApiError('MALFORMED_REQUEST', 'multipart boundary missing');
  }

  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    let failure: unknown;
    let received: Promise<{ videoId: string; file: string; keepSource: boolean; arrival: Arrival }> | undefined;

    const fail = (err: unknown) => {
      if (failure !== undefined) return;
      failure = err;
      // Stop parsing; the rest of the body is read and discarded by Node once we answer. The
      // parser is destroyed so that a file part it is still writing ends (storeFile removes it).
      req.unpipe(bb);
      req.resume();
      bb.destroy();
      // A file part already written (a second file part came, the connection was cut after it, the
      // intake refused it) is nobody's: removed before the answer, so a refusal leaves nothing.
      // One still being written is removed by storeFile when its stream fails.
      const written = received?.then(({ file }) => fs.promises.rm(file, { force: true }));
      void Promise.resolve(written)
        .catch(() => undefined)
        .finally(() => reject(err));
    };

    bb.on('field', (name, value, info) => {
      if (info.nameTruncated || info.valueTruncated) return fail(new ApiError('PAYLOAD_TOO_LARGE', `form field ${name.slice(0, 40)} is too long`));
      if (!(name in fields)) fields[name] = value;
    });
    bb.on('file', (_name, stream) => {
      // A part nobody writes is drained; the parser's destroy (fail) may end it with an error.
      const drain = () => void stream.on('error', () => undefined).resume();
      if (failure !== undefined || received) return drain();
      received = storeFile(stream, fields, req, deps);
      received.catch((err) => {
        drain();
        fail(err);
      });
    });
    bb.on('filesLimit', () => fail(new ApiError('MALFORMED_REQUEST', 'send one file per request')));
    bb.on('fieldsLimit', () => fail(new ApiError('PAYLOAD_TOO_LARGE', 'too many form fields')));
    bb.on('partsLimit', () => fail(new ApiError('PAYLOAD_TOO_LARGE', 'too many form parts')));
    // A body cut short by the client going away reads as a broken one: said as what it is.
    bb.on('error', () => fail(clientWentAway(req) ? new ClientWentAwayError() : new ApiError('MALFORMED_REQUEST', 'broken multipart body')));
    bb.on('close', () => {
      if (failure !== undefined) return;
      if (!received) return fail(new ApiError('MISSING_PARAMETER', 'file (send it as the last part of the form)'));
      received
        .then(async ({ videoId, file, keepSource, arrival }) => {
          const result = await ingest.intake.accept(videoId, file, { from: VideoStatus.NotUploaded, keepSource, arrival });
          // Not a video: refused (307), the file dropped; the video, in 7, takes another upload.
          const refused = notAVideoError(result);
          if (refused) throw refused;
          resolve({ videoId });
        })
        .catch(fail);
    });
    req.on('close', () => {
      if (!req.complete) fail(new ClientWentAwayError());
    });
    req.pipe(bb);
  });
}

/** Whether `req`'s body was cut short by its client going away: its connection closed before the end. */
function clientWentAway(req: IncomingMessage): boolean {
  return !req.complete && (req.destroyed || req.socket.destroyed);
}

/** Checks the caller and the video from the fields read so far, then writes the file part to disk. */
async function storeFile(
  stream: NodeJS.ReadableStream & { truncated?: boolean },
  fields: Record<string, string>,
  req: IncomingMessage,
  { ingest, media, auth }: MultipartUploadDeps,
): Promise<{ videoId: string; file: string; keepSource: boolean; arrival: Arrival }> {
  const startedAt = Date.now();
  const params = new ParamBag(fields);
  const absent = REQUIRED_FIELDS.find((f) => !params.has(f));
  if (absent) throw new ApiError('MISSING_PARAMETER', `${absent} (form fields must come before the file part)`);
  const creds = { appId: params.get('AppId'), timestamp: params.get('Timestamp'), token: params.get('Token') };
  // An API call, from the application's server: its API networks apply (issue 12 item 1), which
  // targetFromToken, shared with the browser's paths, leaves out. A bad token fails here, once.
  await auth.authenticate({ appId: creds.appId?.trim(), timestamp: creds.timestamp?.trim(), token: creds.token?.trim() }, clientAddress(req), { apiCall: true });
  const target = await ingest.targetFromToken(creds, params.get('VideoId'), { needHandleSepcial: params.get('NeedHandleSepcial') }, clientAddress(req));
  const videoId = target.video.id;
  const arrival: Arrival = { via: 'multipart', appId: target.video.appId, startedAt };
  try {
    return await storeChecked(stream, req, { ingest, media }, videoId, target.keepSource, arrival);
  } catch (err) {
    // Refused once the video is known (no room, too large, cut off): the log names it.
    ingest.intake.refused(videoId, arrival, err);
    throw err;
  }
}

/** Writes the file part of a checked request to disk, within a reservation of room for it. */
async function storeChecked(
  stream: NodeJS.ReadableStream & { truncated?: boolean },
  req: IncomingMessage,
  { ingest, media }: Pick<MultipartUploadDeps, 'ingest' | 'media'>,
  videoId: string,
  keepSource: boolean,
  arrival: Arrival,
): Promise<{ videoId: string; file: string; keepSource: boolean; arrival: Arrival }> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  const maxBytes = ingest.options.multipartMaxBytes;
  const key = `multipart:${crypto.randomBytes(8).toString('hex')}`;
  // Reserved while the body arrives (issue 12, item 7): the body's size, or the largest file when
  // it is sent chunked; refused with 303 while the video has another upload under way. The body
  // lands whole in the media folder: the shared one in a cluster that mounts one, this node's own
  // with media in a bucket (until intake hands it over), and the reservation counts against it.
  await ingest.room.reserveRoom(key, { kind: 'multipart', videoId, appId: arrival.appId, size: Number.isFinite(declared) ? declared : maxBytes }, clientAddress(req), 'media');
  try {
    const file = media.path('incoming', videoId, `upload-${crypto.randomBytes(8).toString('hex')}.part`);
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    let over = false;
    const out = fs.createWriteStream(file, { flags: 'wx', mode: 0o600, highWaterMark: STREAM_HIGH_WATER_MARK });
    // busboy truncates silently at fileSize: its 'limit' stops the write as soon as the limit is passed.
    stream.on('limit', () => {
      over = true;
      out.destroy(new ApiError('PAYLOAD_TOO_LARGE', `the file may be at most ${formatBytes(maxBytes)}`));
    });
    // A disk that fills up meanwhile stops the body with 507; the partial file is removed below.
    const meter = receiveMeter({ onBytes: (n) => ingest.room.progress(key, n), check: () => ingest.room.checkRoomWhileReceiving(), everyBytes: ingest.options.spaceCheckIntervalBytes });
    try {
      await pipeline(stream, meter, out);
      if (over || stream.truncated) throw new ApiError('PAYLOAD_TOO_LARGE', `the file may be at most ${formatBytes(maxBytes)}`);
    } catch (err) {
      await fs.promises.rm(file, { force: true });
      if (err instanceof ApiError) throw err;
      // The client went away mid-file: cut off, not malformed.
      throw clientWentAway(req) ? new ClientWentAwayError() : new ApiError('MALFORMED_REQUEST', 'the file part could not be read to its end');
    }
    return { videoId, file, keepSource, arrival };
  } finally {
    // The file is on disk (or gone): nothing more is promised to it.
    await ingest.room.release(key);
  }
}
