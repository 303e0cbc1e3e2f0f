import crypto from 'node:crypto';
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import type { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ReadableStream } from 'node:stream/web';
import { FileStore } from '@tus/file-store';
import { ERRORS, EVENTS, EXPOSED_HEADERS, Server, type ServerOptions as TusServerOptions, type Upload } from '@tus/server';
import type { RequestHandler } from 'express';
import { sendNodeResponse } from 'srvx/node';
import { ApiError } from '../errors.js';
import { clientAddress } from '../http/clientAddress.js';
import { VideoStatus } from '../services/videoStatus.js';
import type { LocalMediaStore } from '../storage/mediaStore.js';
import { widgetErrorText } from '../widget/uploadPage.js';
import { formatBytes } from './formatBytes.js';
import type { IngestService, UploadTarget } from './ingestService.js';
import { receiveMeter } from './receiveMeter.js';
import { notAVideoError, type IntakeResult } from './sourceIntake.js';

/** Where the tus endpoint answers (spec 4.5 leaves the receiving address open). */
export const TUS_PATH = '/upload/tus';

/** The header an upload page sends on every tus request, with the credential of openUploadSession. */
export const CREDENTIAL_HEADER = 'X-Upload-Credential';

/**
 * Response header of the final PATCH: the video's status once its file was checked (5). A file
 * that is not a video gets a 422 refusal instead (the video stays in 7 and takes another file).
 */
export const VIDEO_STATUS_HEADER = 'X-Video-Status';

/**
 * The CORS headers @tus/server puts on its own answers, given no allowedOrigins (any origin), no
 * allowedCredentials and our exposedHeaders, for the answers this module makes itself. They must
 * follow those options of the Server below.
 */
const TUS_CORS_HEADERS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': `${EXPOSED_HEADERS}, ${VIDEO_STATUS_HEADER}`,
};

/** tus upload ids as @tus/server names them (16 random bytes, hex). */
const UPLOAD_ID_RE = /^[0-9a-f]{32}$/;

/**
 * How old a ledger entry of a tus upload must be before a sweep that finds no upload of that id
 * in the store drops it: between onUploadCreate (the reservation) and the store's create (the
 * file), the upload is in the ledger and not yet on disk.
 */
const LEDGER_GRACE_MS = 60_000;

type TusRequest = Parameters<NonNullable<TusServerOptions['onUploadCreate']>>[0];

/**
 * Bytes the write stream of a PATCH buffers. FileStore's own stream keeps Node's default (16 KiB),
 * below the 64 KiB a socket read delivers: every chunk then waited for the previous one to reach
 * the file, one pwrite each. With room for several, the chunks that arrive during a write go to
 * the file together in one writev.
 */
const WRITE_HIGH_WATER_MARK = 1024 * 1024;

/** What BufferedFileStore asks of TusUploads. */
interface StoreHooks {
  /** The upload's data file, through the media store's containment check. */
  fileOf(id: string): string;
  /** The meter the bytes of a write pass through (reservation, free-space checks). */
  meter(id: string, offset: number): Transform;
  /** A write starts (+1) or ends (-1). */
  receiving(id: string, delta: 1 | -1): void;
}

/**
 * @tus/file-store's FileStore with a write stream that buffers {@link WRITE_HIGH_WATER_MARK}
 * bytes, whose path goes through the media store's containment check, and whose bytes pass
 * through the upload's meter (a disk that fills up meanwhile stops the write with 507, the bytes
 * before it kept). Otherwise as FileStore.write: the stream's bytes at `offset`, resolving with
 * the new offset.
 */
class BufferedFileStore extends FileStore {
  constructor(
    options: ConstructorParameters<typeof FileStore>[0],
    private readonly hooks: StoreHooks,
  ) {
    super(options);
  }

  override async write(readable: Readable, id: string, offset: number): Promise<number> {
    const out = fs.createWriteStream(this.hooks.fileOf(id), { flags: 'r+', start: offset, highWaterMark: WRITE_HIGH_WATER_MARK });
    this.hooks.receiving(id, 1);
    try {
      await pipeline(readable, this.hooks.meter(id, offset), out);
    } catch (err) {
      // A refusal from the meter (the disk filled up): the bytes before it are on disk, and the
      // upload's offset (its file's size) keeps them.
      if (typeof (err as { status_code?: unknown }).status_code === 'number') throw err;
      throw ERRORS.FILE_WRITE_ERROR;
    } finally {
      this.hooks.receiving(id, -1);
    }
    return offset + out.bytesWritten;
  }
}

export interface TusUploadsDeps {
  ingest: IngestService;
  media: LocalMediaStore;
  /** Absolute base URL for Location headers; absent: relative Locations. */
  publicUrl?: string;
  log: (line: string) => void;
}

/**
 * tus 1.0 (core, creation, creation-with-upload, termination, expiration) on @tus/server with
 * its FileStore under the media store's `incoming/tus`. Each request is authorised for the
 * upload's own video; the finished file goes through {@link SourceIntake.accept}.
 *
 * Authorisation: creation takes either `X-Upload-Credential` (the upload page) or the spec's
 * values as Upload-Metadata (`appId`, `timestamp`, `token`, `videoId`). Later requests on an
 * upload created with a credential must carry a credential for that upload's video; on an
 * upload created with the spec's values, a credential, if sent, must be for that video, and
 * otherwise the upload URL (128 random bits, known only to its creator) is the capability, as
 * tus clients resume with nothing but that URL.
 */
export class TusUploads {
  readonly server: Server;
  readonly store: FileStore;
  readonly directory: string;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: TusUploadsDeps) {
    const opts = deps.ingest.options;
    this.directory = deps.media.path('incoming', 'tus');
    fs.mkdirSync(this.directory, { recursive: true });
    const ledger = deps.ingest.uploads;
    this.store = new BufferedFileStore(
      { directory: this.directory, expirationPeriodInMilliseconds: opts.uploadExpiryMs },
      {
        fileOf: (id) => deps.media.path('incoming', 'tus', id),
        meter: (id, offset) =>
          receiveMeter({
            onBytes: (n) => ledger.progress(id, offset + n),
            // The meter's error also reaches @tus/server through its own pipeline, which answers
            // with the status_code and body of what it caught: the refusal is an Error that has them.
            check: () =>
              deps.ingest.checkRoomWhileReceiving().catch((err: unknown) => {
                throw Object.assign(new Error((err as Error).message), tusRefusal(err));
              }),
            everyBytes: opts.spaceCheckIntervalBytes,
          }),
        receiving: (id, delta) => ledger.receiving(id, delta),
      },
    );
    // Deferred length would let an upload start before its size is checked against its
    // uploadType and the free space: without the extension, such a POST gets 501.
    this.store.extensions = this.store.extensions.filter((e) => e !== 'creation-defer-length');
    this.server = new Server({
      path: TUS_PATH,
      datastore: this.store,
      maxSize: Math.max(opts.maxUploadBytes.flash, opts.maxUploadBytes.silverlight),
      relativeLocation: deps.publicUrl === undefined,
      generateUrl: deps.publicUrl === undefined ? undefined : (_req, { id }) => `${deps.publicUrl}${TUS_PATH}/${id}`,
      allowedHeaders: [CREDENTIAL_HEADER],
      // TUS_CORS_HEADERS follow these (and allowedOrigins and allowedCredentials, unset).
      exposedHeaders: [VIDEO_STATUS_HEADER],
      disableTerminationForFinishedUploads: true,
      onIncomingRequest: (req, id) => this.authorizeExisting(req, id),
      onUploadCreate: (req, upload) => this.authorizeCreation(req, upload),
      onUploadFinish: (_req, upload) => this.finish(upload),
    });
    // Termination (DELETE): the upload's reservation goes with it.
    this.server.on(EVENTS.POST_TERMINATE, (_req, _res, id) => ledger.release(id));
  }

  /**
   * The Express handler for `/upload/tus{/*rest}`. It must be mounted before any body parser:
   * @tus/server reads the request stream itself.
   */
  readonly handler: RequestHandler = async (req, res) => {
    // tus 1.0 core: "The Request MUST include a Content-Type: application/offset+octet-stream
    // header"; @tus/server answers other types with 400, the protocol's answer is 415.
    if (req.method === 'PATCH') {
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== 'application/offset+octet-stream') {
        // With @tus/server's CORS headers: a page on another origin must be able to read the answer.
        res.status(415).set({ 'Tus-Resumable': '1.0.0', ...TUS_CORS_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' });
        res.send('Content-Type must be application/offset+octet-stream\n');
        return;
      }
      await sendNodeResponse(res, await this.server.handleWeb(patchRequest(req, res)));
      return;
    }
    await this.server.handle(req, res);
  };

  /** Removes expired uploads now and every `expirySweepMs` from now on. */
  async start(): Promise<void> {
    await this.sweepExpired(0);
    // A finish in progress (its probe included) must not be raced by the sweep.
    const settleMs = this.deps.ingest.options.probeTimeoutMs + 60_000;
    this.timer = setInterval(() => void this.sweepExpired(settleMs), this.deps.ingest.options.expirySweepMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Removes unfinished uploads past their expiry (the store's deleteExpired), and leftovers of
   * an interrupted finish (a metadata file without its data, or data without metadata); and
   * finishes complete uploads untouched for `settleMs`. Resolves with how many were removed.
   */
  async sweepExpired(settleMs = 0): Promise<number> {
    let removed = 0;
    try {
      await this.finishComplete(await this.listUploadIds(), settleMs);
      removed += await this.removeOrphans();
      removed += await this.store.deleteExpired();
      await this.reconcileLedger();
    } catch (err) {
      this.deps.log(`tus: removing expired uploads failed: ${String((err as { body?: string }).body ?? err)}`);
    }
    return removed;
  }

  /**
   * The ids of the uploads in the store's folder (those with a metadata file), checked against
   * @tus/server's id format: a path built from one stays inside the folder. Rejects if the
   * folder cannot be read.
   */
  async listUploadIds(): Promise<string[]> {
    const names = await fs.promises.readdir(this.directory);
    return names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5)).filter((id) => UPLOAD_ID_RE.test(id));
  }

  /**
   * Brings the ledger of uploads under way (IngestService.uploads) in line with the store's
   * folder: at start (the uploads a restart found), and after each sweep (expired and removed
   * uploads go; offsets are read again from the files). Entries being written are left alone.
   */
  async reconcileLedger(): Promise<void> {
    const ledger = this.deps.ingest.uploads;
    const ids = new Set(await this.listUploadIds());
    const now = Date.now();
    for (const key of ledger.keys()) {
      const entry = ledger.get(key);
      if (!UPLOAD_ID_RE.test(key) || !entry) continue; // not a tus upload (multipart)
      if (!ids.has(key) && entry.receiving === 0 && now - entry.since > LEDGER_GRACE_MS) ledger.release(key);
    }
    for (const id of ids) {
      const entry = ledger.get(id);
      if (entry?.receiving) continue;
      let upload: Upload;
      try {
        upload = await this.store.getUpload(id);
      } catch {
        continue; // no data file: removeOrphans deals with it
      }
      if (entry) {
        ledger.progress(id, upload.offset);
        continue;
      }
      const created = Date.parse(upload.creation_date ?? '');
      ledger.add(id, {
        videoId: upload.metadata?.videoId ?? '',
        size: upload.size ?? 0,
        written: upload.offset,
        expiresAt: Number.isFinite(created) ? created + this.deps.ingest.options.uploadExpiryMs : undefined,
        owner: upload.metadata?.owner || undefined,
      });
    }
  }

  private async removeOrphans(): Promise<number> {
    const names = new Set(await fs.promises.readdir(this.directory));
    const cutoff = Date.now() - this.deps.ingest.options.uploadExpiryMs;
    let n = 0;
    for (const name of names) {
      const id = name.endsWith('.json') ? name.slice(0, -5) : name;
      if (!UPLOAD_ID_RE.test(id)) continue;
      const file = path.join(this.directory, name);
      if (name.endsWith('.json') && !names.has(id)) {
        await fs.promises.rm(file, { force: true });
        n++;
      } else if (!name.endsWith('.json') && !names.has(`${id}.json`)) {
        const stat = await fs.promises.stat(file).catch(() => undefined);
        if (stat && stat.mtimeMs < cutoff) {
          await fs.promises.rm(file, { force: true });
          n++;
        }
      }
    }
    return n;
  }

  /** onUploadCreate: who may create this upload, for which video, of what size. */
  private async authorizeCreation(req: TusRequest, upload: Upload): Promise<{ metadata: Record<string, string> }> {
    const meta = upload.metadata ?? {};
    const credential = req.headers.get(CREDENTIAL_HEADER);
    let target: UploadTarget;
    try {
      target = credential
        ? await this.deps.ingest.targetFromCredential(credential, meta.videoId ?? undefined)
        : await this.deps.ingest.targetFromToken(
            { appId: meta.appId ?? undefined, timestamp: meta.timestamp ?? undefined, token: meta.token ?? undefined },
            meta.videoId ?? undefined,
            { uploadType: meta.uploadType ?? undefined, needHandleSepcial: meta.needHandleSepcial ?? undefined },
            addressOf(req),
          );
      const size = upload.size ?? 0;
      if (size > target.maxBytes) {
        throw new ApiError('PAYLOAD_TOO_LARGE', `the file is ${formatBytes(size)}; ${target.uploadType} uploads take at most ${formatBytes(target.maxBytes)}`);
      }
      const owner = credential ? ownerOf(credential) : undefined;
      await this.replaceOwnUpload(target.video.id, owner, upload.id);
      // One upload under way per video, its declared bytes reserved (issue 12, item 7).
      await this.deps.ingest.reserveRoom(upload.id, {
        videoId: target.video.id,
        size,
        owner,
        expiresAt: Date.now() + this.deps.ingest.options.uploadExpiryMs,
      });
    } catch (err) {
      throw tusRefusal(err);
    }
    // Stored server-side and echoed by HEAD: the spec's token and timestamp are not kept.
    return {
      metadata: {
        videoId: target.video.id,
        appId: target.video.appId,
        filename: (meta.filename ?? '').slice(0, 255),
        uploadType: target.uploadType,
        needHandleSepcial: String(target.keepSource),
        auth: target.auth,
        // So that after a restart the same page may still replace it (replaceOwnUpload).
        ...(credential ? { owner: ownerOf(credential) } : {}),
      },
    };
  }

  /**
   * A page that starts another upload of its video, with the credential it created the first
   * with (the user picked another file, or reloaded the page and did), replaces the first: it is
   * terminated, as the page's own Cancel would, unless bytes are arriving on it right now. Any
   * other second creation for the video is refused by reserveRoom (303) until the first ends,
   * finishes or expires; a client holding its URL can end it with DELETE (tus termination).
   */
  private async replaceOwnUpload(videoId: string, owner: string | undefined, newId: string): Promise<void> {
    const live = this.deps.ingest.uploads.liveFor(videoId);
    if (!live || owner === undefined) return;
    const [id, entry] = live;
    if (id === newId || entry.owner !== owner || entry.receiving > 0 || entry.written >= entry.size || !UPLOAD_ID_RE.test(id)) return;
    await this.store.remove(id).catch(() => undefined); // already gone: nothing to replace
    this.deps.ingest.uploads.release(id);
    this.deps.log(`tus: upload ${id} of video ${videoId} replaced by a new one from the same upload page`);
  }

  /** onIncomingRequest: HEAD, PATCH and DELETE must be authorised for the upload's own video. */
  private async authorizeExisting(req: TusRequest, id: string): Promise<void> {
    if (req.method === 'POST') return; // checked in onUploadCreate, with the metadata parsed
    if (!UPLOAD_ID_RE.test(id)) throw { status_code: 404, body: 'The file for this url was not found\n' };
    const info = await this.store.configstore.get(id);
    if (!info) return; // @tus/server answers 404 (or 410 if only the metadata is left)
    const videoId = info.metadata?.videoId ?? '';
    const credential = req.headers.get(CREDENTIAL_HEADER);
    try {
      if (credential) this.deps.ingest.verifyCredential(credential, videoId);
      else if (info.metadata?.auth === 'credential') throw new ApiError('UPLOAD_CREDENTIAL_INVALID', `send the upload page's credential as ${CREDENTIAL_HEADER}`);
      // Bytes for a video that got its file meanwhile (or was deleted, or its app disabled) are refused early.
      if (req.method === 'PATCH') await this.deps.ingest.stillUploadable(info.metadata?.appId ?? '', videoId);
    } catch (err) {
      throw tusRefusal(err);
    }
  }

  /**
   * onUploadFinish: {@link accept}, answered with the video's status, or as a tus refusal. A file
   * that is not a video is refused (422, NOT_A_VIDEO) on this last PATCH: the upload does not
   * count as done, and the video takes another file.
   */
  private async finish(upload: Upload): Promise<{ headers: Record<string, string> }> {
    let result: IntakeResult;
    try {
      result = await this.accept(upload);
      const refused = notAVideoError(result);
      if (refused) throw refused;
    } catch (err) {
      throw tusRefusal(err);
    }
    return { headers: { [VIDEO_STATUS_HEADER]: String(result.status) } };
  }

  /**
   * The file becomes the video's source, is probed, and the upload is forgotten; resolves with
   * what intake made of it. Refused (another upload of the video won, or it is gone): the data is
   * dropped and the ApiError thrown. Any other failure keeps the complete upload for the next
   * sweep to finish.
   */
  private async accept(upload: Upload): Promise<IntakeResult> {
    const meta = upload.metadata ?? {};
    const file = this.deps.media.path('incoming', 'tus', upload.id);
    let result: IntakeResult;
    try {
      result = await this.deps.ingest.intake.accept(meta.videoId ?? '', file, {
        from: VideoStatus.NotUploaded,
        keepSource: meta.needHandleSepcial === 'true',
      });
    } catch (err) {
      if (err instanceof ApiError) await this.forget(upload.id, file);
      throw err;
    }
    await this.forget(upload.id, file);
    return result;
  }

  /** Drops an upload's data (if still there) and its metadata, so its URL answers 404. */
  private async forget(id: string, file: string): Promise<void> {
    await fs.promises.rm(file, { force: true });
    await this.store.configstore.delete(id).catch(() => undefined);
    this.deps.ingest.uploads.release(id);
  }

  /**
   * Uploads whose every byte arrived but which were not finished (the server stopped between
   * the last write and onUploadFinish, or the finish failed): finished now.
   */
  private async finishComplete(ids: string[], settleMs: number): Promise<void> {
    for (const id of ids) {
      let upload: Upload;
      try {
        upload = await this.store.getUpload(id);
        if (upload.size === undefined || upload.offset !== upload.size) continue;
        const stat = await fs.promises.stat(this.deps.media.path('incoming', 'tus', id));
        if (Date.now() - stat.mtimeMs < settleMs) continue;
      } catch {
        continue; // gone meanwhile, or no data file: removeOrphans deals with it
      }
      try {
        await this.accept(upload);
      } catch (err) {
        // A refusal dropped the upload, as a client's last PATCH would have seen; anything else
        // (a disk error, the probe) kept it for the next sweep, and is worth a line in the log.
        if (!(err instanceof ApiError)) this.deps.log(`tus: finishing upload ${id} failed (kept for the next sweep): ${(err as Error)?.stack ?? String(err)}`);
      }
    }
  }
}

/**
 * An ApiError as a tus answer: the catalogue's HTTP status, except 409 (tus clients take 409
 * as an offset conflict and retry) which becomes 403; the body is the spec's widget error text.
 * NOT_A_VIDEO's 422 is a 4xx that tus-js-client does not retry.
 */
function tusRefusal(err: unknown): { status_code: number; body: string } {
  if (!(err instanceof ApiError)) throw err;
  const status = err.def.httpStatus === 409 ? 403 : err.def.httpStatus;
  return { status_code: status, body: `${widgetErrorText(err)}\n` };
}

/** Who created an upload with a page's credential: a digest of it (the upload's metadata is echoed by HEAD). */
function ownerOf(credential: string): string {
  return crypto.createHash('sha256').update(credential.trim()).digest('base64url').slice(0, 22);
}

/**
 * A PATCH as the web Request that @tus/server's handleWeb takes, its body the Node request's own
 * chunks (Buffers, hence Uint8Arrays). `handle` would wrap the request in srvx's NodeRequest, whose
 * body is `Readable.toWeb(req)`: on Node 20 that copies every chunk into a new Uint8Array and
 * pauses the request after each one.
 *
 * req and res ride along as srvx's `runtime.node`, as `handle` passes them: @tus/server listens
 * there for the request's 'error' (the client gone mid-PATCH), then ends the write with the bytes
 * that arrived and releases the upload's lock. The signal aborts as srvx's does (@tus/server 2.4
 * does not read it; a later one may). The URL's origin is a placeholder: @tus/server takes only
 * the upload id from a PATCH's URL.
 */
function patchRequest(req: IncomingMessage, res: ServerResponse): Request {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const aborted = new AbortController();
  res.once('close', () => {
    if (req.errored) aborted.abort(req.errored);
    else if (!res.writableEnded) aborted.abort();
  });
  // `duplex` (required with a stream body) is undici's, not in the DOM typings; nor is `from`.
  const init: RequestInit & { duplex: 'half' } = {
    method: 'PATCH',
    headers,
    // Pulled one chunk at a time, so the socket is read only as fast as the file is written.
    body: ReadableStream.from<Uint8Array>(req) as globalThis.ReadableStream<Uint8Array>,
    duplex: 'half',
    signal: aborted.signal,
  };
  // Resolved against the placeholder, so an absolute-form request target keeps its path as well.
  const request = new Request(new URL(req.url ?? '/', 'http://localhost'), init);
  return Object.assign(request, { runtime: { name: 'node', node: { req, res } } });
}

/** The client's address of a tus request (the Node request rides along as srvx's `runtime.node`). */
function addressOf(req: TusRequest): string {
  const node = (req as unknown as { runtime?: { node?: { req?: IncomingMessage } } }).runtime?.node?.req;
  return node ? clientAddress(node) : 'unknown';
}
