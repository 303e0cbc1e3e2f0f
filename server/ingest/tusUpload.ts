import crypto from 'node:crypto';
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ReadableStream } from 'node:stream/web';
import { EVENTS, EXPOSED_HEADERS, Server, type DataStore, type Locker, type ServerOptions as TusServerOptions, type Upload } from '@tus/server';
import type { RequestHandler } from 'express';
import { sendNodeResponse } from 'srvx/node';
import { ApiError } from '../core/errors.js';
import { clientAddress } from '../http/clientAddress.js';
import { VideoStatus } from '../core/videoStatus.js';
import type { LocalMediaStore } from '../storage/mediaStore.js';
import type { S3MediaStoreOptions } from '../storage/media/s3Options.js';
import type { UploadReservation } from '../storage/types.js';
import { widgetErrorText } from '../widget/uploadPage.js';
import { formatBytes } from '../core/formatBytes.js';
import type { IngestService, UploadLanding, UploadTarget } from './ingestService.js';
import { receiveMeter } from './receiveMeter.js';
import { notAVideoError, type IntakeResult } from './sourceIntake.js';
import type { S3TusStorage } from './tusS3Storage.js';
import { FileTusStorage, UPLOAD_ID_RE, type StoreHooks, type TusStorage } from './tusStorage.js';

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

/**
 * How old a ledger entry of a tus upload must be before a sweep that finds no upload of that id
 * in the store drops it: between onUploadCreate (the reservation) and the store's create (the
 * file), the upload is in the ledger and not yet on disk.
 */
const LEDGER_GRACE_MS = 60_000;

type TusRequest = Parameters<NonNullable<TusServerOptions['onUploadCreate']>>[0];

export interface TusUploadsDeps {
  ingest: IngestService;
  media: LocalMediaStore;
  /** Absolute base URL for Location headers; absent: relative Locations. */
  publicUrl?: string;
  /**
   * Cluster mode's object storage: uploads under way live in its bucket (@tus/s3-store), and a
   * finished one is fetched to `scratchDir` for intake. Absent: the media folder (@tus/file-store).
   * `S3TusStorage` is the class, loaded by the caller only then: the embedded default never loads
   * the S3 client (start-up time, memory).
   */
  objectStorage?: { s3: S3MediaStoreOptions; scratchDir: string; S3TusStorage: typeof S3TusStorage };
  /**
   * A lock every node sees (PostgreSQL advisory locks), opened by {@link TusUploads.start} and
   * closed by {@link TusUploads.stop}. Absent: @tus/server's MemoryLocker, this process only.
   */
  openLocker?: () => Promise<Locker & { close(): Promise<void> }>;
  log: (line: string) => void;
}

/**
 * tus 1.0 (core, creation, creation-with-upload, termination, expiration) on @tus/server with
 * its FileStore under the media store's `incoming/tus`, or in cluster mode its S3Store in the
 * media bucket with a lock every node sees, so that an upload begun on one API node resumes on
 * another. Each request is authorised for the upload's own video; the finished file goes through
 * {@link SourceIntake.accept}.
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
  /** Where uploads under way are kept: the media folder, or the bucket in cluster mode. */
  readonly storage: TusStorage;
  readonly store: DataStore;
  /** The embedded mode's folder of uploads under way (empty with object storage). */
  readonly directory: string;
  private timer: NodeJS.Timeout | undefined;
  private locker: (Locker & { close(): Promise<void> }) | undefined;

  constructor(private readonly deps: TusUploadsDeps) {
    const opts = deps.ingest.options;
    this.directory = deps.media.path('incoming', 'tus');
    fs.mkdirSync(this.directory, { recursive: true });
    const ledger = deps.ingest.uploads;
    const hooks: StoreHooks = {
      meter: (id, offset) =>
        receiveMeter({
          onBytes: (n) => deps.ingest.progress(id, offset + n),
          // The meter's error also reaches @tus/server through its own pipeline, which answers
          // with the status_code and body of what it caught: the refusal is an Error that has them.
          // With the bucket the bytes do not fill this node's disk (one part at a time in the
          // temporary folder): its free space stops nothing, as it refused no creation.
          check: deps.objectStorage
            ? async () => undefined
            : () =>
                deps.ingest.checkRoomWhileReceiving().catch((err: unknown) => {
                  throw Object.assign(new Error((err as Error).message), tusRefusal(err));
                }),
          everyBytes: opts.spaceCheckIntervalBytes,
        }),
      receiving: (id, delta) => ledger.receiving(id, delta),
      // With the bucket, one live upload per video holds across nodes (the ledger is this node's).
      aroundCreate: deps.objectStorage ? (upload, create) => this.createAlone(upload, create) : undefined,
    };
    this.storage = deps.objectStorage
      ? new deps.objectStorage.S3TusStorage({ s3: deps.objectStorage.s3, scratchDir: deps.objectStorage.scratchDir, expiryMs: opts.uploadExpiryMs }, hooks)
      : new FileTusStorage(deps.media, opts.uploadExpiryMs, hooks);
    this.store = this.storage.store;
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
    // Termination (DELETE): the upload's reservation goes with it (release never rejects).
    this.server.on(EVENTS.POST_TERMINATE, (_req, _res, id) => void deps.ingest.release(id));
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

  /**
   * Opens the cluster's lock (if any), then removes expired uploads now and every
   * `expirySweepMs` from now on.
   */
  async start(): Promise<void> {
    if (this.deps.openLocker && !this.locker) {
      this.locker = await this.deps.openLocker();
      // Read per request by @tus/server (BaseHandler.getLocker); no request arrives before start.
      this.server.options.locker = this.locker;
    }
    await this.sweepExpired(0);
    // A finish in progress (its probe included) must not be raced by the sweep.
    const settleMs = this.deps.ingest.options.probeTimeoutMs + 60_000;
    this.timer = setInterval(() => void this.sweepExpired(settleMs), this.deps.ingest.options.expirySweepMs);
    this.timer.unref();
  }

  /** Stops the sweep, and closes the cluster's lock (once no request is in flight). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    const locker = this.locker;
    this.locker = undefined;
    await locker?.close();
  }

  /**
   * Removes unfinished uploads past their expiry (the store's deleteExpired), and leftovers of
   * an interrupted finish (a metadata file without its data, or data without metadata); and
   * finishes complete uploads untouched for `settleMs`. Resolves with how many were removed.
   */
  async sweepExpired(settleMs = 0): Promise<number> {
    let removed = 0;
    try {
      const listed = await this.storage.listUploadIds();
      await this.finishComplete(listed, settleMs);
      removed += await this.storage.removeStale();
      await this.reconcileLedger(listed);
    } catch (err) {
      this.deps.log(`tus: removing expired uploads failed: ${String((err as { body?: string }).body ?? err)}`);
    }
    return removed;
  }

  /**
   * The ids of the uploads in the embedded mode's folder (those with a metadata file), checked
   * against @tus/server's id format: a path built from one stays inside the folder. Rejects if
   * the folder cannot be read. (The console's upload monitor reads these; with object storage
   * the folder stays empty.)
   */
  async listUploadIds(): Promise<string[]> {
    const names = await fs.promises.readdir(this.directory);
    return names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5)).filter((id) => UPLOAD_ID_RE.test(id));
  }

  /**
   * Brings the ledger of uploads under way (IngestService.uploads) in line with the store: at
   * start (the uploads a restart found), and after each sweep (expired and removed uploads go;
   * offsets are read again). Entries being written are left alone. With object storage, or a
   * media folder every node mounts, the store holds every node's uploads, so each node learns of
   * the others' at its sweep; and in cluster mode the reservations every node sees follow the
   * store too ({@link reconcileShared}). `listedBefore`: the uploads the store held before this
   * sweep removed the stale ones.
   */
  async reconcileLedger(listedBefore: string[] = []): Promise<void> {
    const ledger = this.deps.ingest.uploads;
    const ids = new Set(await this.storage.listUploadIds());
    const now = Date.now();
    for (const key of ledger.keys()) {
      const entry = ledger.get(key);
      if (!UPLOAD_ID_RE.test(key) || !entry) continue; // not a tus upload (multipart)
      if (!ids.has(key) && entry.receiving === 0 && now - entry.since > LEDGER_GRACE_MS) ledger.release(key);
    }
    const found: UploadReservation[] = [];
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
        this.deps.ingest.progress(id, upload.offset);
        continue;
      }
      const created = Date.parse(upload.creation_date ?? '');
      const r: UploadReservation = {
        key: id,
        kind: 'tus',
        videoId: upload.metadata?.videoId ?? '',
        disk: this.deps.ingest.diskFor(this.landing),
        size: upload.size ?? 0,
        written: upload.offset,
        expiresAt: Number.isFinite(created) ? created + this.deps.ingest.options.uploadExpiryMs : undefined,
        owner: upload.metadata?.owner || undefined,
      };
      const { key: _key, ...entryOf } = r;
      ledger.add(id, entryOf);
      found.push(r);
    }
    await this.reconcileShared(listedBefore.filter((id) => !ids.has(id)), ids, found, now);
  }

  /**
   * Cluster mode: the reservations of uploads gone from the store since this sweep listed it
   * (removed as stale: a node may take an upload for expired before its reservation is, when nodes
   * are given other expiries) go at once; those of other uploads the store does not hold (an
   * admin's cancel, a creation cut off before its upload was made, a release that failed) go once
   * older than the grace a creation needs; uploads this node had not seen are reserved if they
   * were not (uploads begun before reservations were shared). One taken back just as another
   * node forgets it is released again: that node removes the upload before its reservation, so
   * either its release comes after ours, or the upload is already gone when we look again.
   */
  private async reconcileShared(gone: string[], ids: Set<string>, found: UploadReservation[], now: number): Promise<void> {
    const shared = this.deps.ingest.shared;
    if (!shared) return;
    for (const id of gone) await shared.release(id);
    await shared.store.releaseAbsent('tus', [...ids], now - LEDGER_GRACE_MS);
    for (const r of found) {
      await shared.store.reserve(r, now);
      if (!(await this.storage.info(r.key))) await this.deps.ingest.release(r.key);
    }
  }

  /** Where a tus upload's bytes land: the bucket with media in object storage, else the media folder. */
  private get landing(): UploadLanding {
    return this.storage.kind === 's3' ? 'bucket' : 'media';
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
      // One upload under way per video, its declared bytes reserved (issue 12, item 7) against
      // the disk they land on: the media folder's, or none with the bucket.
      await this.deps.ingest.reserveRoom(
        upload.id,
        { kind: 'tus', videoId: target.video.id, size, owner, expiresAt: Date.now() + this.deps.ingest.options.uploadExpiryMs },
        this.landing,
      );
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
    await this.deps.ingest.release(id);
    this.deps.log(`tus: upload ${id} of video ${videoId} replaced by a new one from the same upload page`);
  }

  /**
   * Creates an upload in the bucket unless another upload of its video, begun on any node, is
   * live. Under the video's lock, the upload the video's mark names is checked, then the new one
   * created and marked, so of two nodes' concurrent creations one is refused (303, as
   * reserveRoom's). With a shared database reserveRoom already refuses it across nodes (the
   * reservations every node sees); the mark still covers an upload that has no reservation (one
   * begun by a node of an earlier version, until a sweep takes it back). Replacing one's own
   * upload (replaceOwnUpload) works for an upload this node knows of.
   */
  private async createAlone(upload: Upload, create: () => Promise<Upload>): Promise<Upload> {
    const storage = this.storage as S3TusStorage;
    const videoId = upload.metadata?.videoId ?? '';
    return this.underLock(`video:${videoId}`, async () => {
      const other = await storage.uploadOfVideo(videoId);
      if (other !== undefined && other !== upload.id && (await this.isLive(other))) {
        await this.deps.ingest.release(upload.id);
        throw tusRefusal(
          new ApiError('VIDEO_STATE_CONFLICT', 'another upload of this video is under way (through another server): resume it, end it (tus DELETE), or wait until it expires'),
        );
      }
      const created = await create();
      await storage.markVideo(videoId, upload.id);
      return created;
    });
  }

  /** Whether an upload is still there and not past its expiry. */
  private async isLive(id: string): Promise<boolean> {
    const info = await this.storage.info(id);
    if (!info) return false;
    const created = Date.parse(info.creation_date ?? '');
    return !Number.isFinite(created) || created + this.deps.ingest.options.uploadExpiryMs > Date.now();
  }

  /** onIncomingRequest: HEAD, PATCH and DELETE must be authorised for the upload's own video. */
  private async authorizeExisting(req: TusRequest, id: string): Promise<void> {
    if (req.method === 'POST') return; // checked in onUploadCreate, with the metadata parsed
    if (!UPLOAD_ID_RE.test(id)) throw { status_code: 404, body: 'The file for this url was not found\n' };
    const info = await this.storage.info(id);
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
    if (this.storage.kind === 'file') return this.acceptNow(upload);
    // With the bucket, any node may finish an upload: the final PATCH's node (@tus/server calls
    // onUploadFinish after releasing the PATCH's lock) and every node's sweep. Under the upload's
    // lock, and only if it is still there and complete, it is finished exactly once; requests on
    // it meanwhile wait (bounded), then find it gone (404).
    return this.underLock(upload.id, async () => {
      const now = await this.store.getUpload(upload.id).catch(() => undefined);
      if (!now || now.size === undefined || now.offset !== now.size) {
        throw new ApiError('VIDEO_STATE_CONFLICT', "the video's file was already received");
      }
      return this.acceptNow(now);
    });
  }

  private async acceptNow(upload: Upload): Promise<IntakeResult> {
    const meta = upload.metadata ?? {};
    let result: IntakeResult;
    try {
      result = await this.storage.withLocalFile(upload.id, (file) =>
        this.deps.ingest.intake.accept(meta.videoId ?? '', file, {
          from: VideoStatus.NotUploaded,
          keepSource: meta.needHandleSepcial === 'true',
        }),
      );
    } catch (err) {
      if (err instanceof ApiError) await this.forget(upload.id, meta.videoId);
      throw err;
    }
    await this.forget(upload.id, meta.videoId);
    return result;
  }

  /** Runs `fn` holding the upload's lock, as @tus/server's handlers hold it; a finish is not asked to stop early. */
  private async underLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const configured = this.server.options.locker;
    const locker = await (typeof configured === 'function' ? configured(new Request('http://localhost/')) : configured);
    const lock = locker.newLock(id);
    await lock.lock(new AbortController().signal, () => undefined);
    try {
      return await fn();
    } finally {
      await lock.unlock();
    }
  }

  /** Drops an upload's data (if still there) and its metadata, so its URL answers 404; and its video's mark in the bucket. */
  private async forget(id: string, videoId: string | null | undefined): Promise<void> {
    await this.storage.forget(id);
    const storage = this.storage;
    // Under the video's lock, as createAlone marks: a newer upload's mark is never removed.
    if (this.deps.objectStorage && storage instanceof this.deps.objectStorage.S3TusStorage && videoId) await this.underLock(`video:${videoId}`, () => storage.unmarkVideo(videoId, id));
    await this.deps.ingest.release(id);
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
        const written = await this.storage.lastWriteMs(id);
        if (written === undefined) throw new Error('no data');
        if (Date.now() - written < settleMs) continue;
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
