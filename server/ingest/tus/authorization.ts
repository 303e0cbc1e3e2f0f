import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Upload } from '@tus/server';
import { ApiError } from '../../core/errors.js';
import { clientAddress } from '../../http/clientAddress.js';
import { formatBytes } from '../../core/formatBytes.js';
import type { UploadTarget } from '../ingestService.js';
import { expiresAt, UPLOAD_ID_RE } from './tusStorage.js';
import type { TusContext } from './context.js';
import { CREDENTIAL_HEADER, tusRefusal, type TusRequest } from './protocol.js';

/**
 * Who may do what on the tus endpoint: each request is authorised for the upload's own video.
 *
 * Creation takes either `X-Upload-Credential` (the upload page) or the spec's values as
 * Upload-Metadata (`appId`, `timestamp`, `token`, `videoId`). Later requests on an upload created
 * with a credential must carry a credential for that upload's video; on an upload created with
 * the spec's values, a credential, if sent, must be for that video, and otherwise the upload URL
 * (128 random bits, known only to its creator) is the capability, as tus clients resume with
 * nothing but that URL.
 */
export class TusAuthorization {
  constructor(private readonly ctx: TusContext) {}

  /** onUploadCreate: who may create this upload, for which video, of what size; resolves with the metadata kept. */
  async creation(req: TusRequest, upload: Upload): Promise<{ metadata: Record<string, string> }> {
    const { ingest } = this.ctx;
    const meta = upload.metadata ?? {};
    const credential = req.headers.get(CREDENTIAL_HEADER);
    let target: UploadTarget;
    try {
      target = credential
        ? await ingest.targetFromCredential(credential, meta.videoId ?? undefined)
        : await ingest.targetFromToken(
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
      // the disk they land on (the media folder's, or none with the bucket), within the shares
      // of that disk one application's and one address's uploads may hold.
      await ingest.room.reserveRoom(
        upload.id,
        { kind: 'tus', videoId: target.video.id, appId: target.video.appId, size, owner, expiresAt: Date.now() + ingest.options.uploadExpiryMs },
        addressOf(req),
        this.ctx.landing,
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

  /** onIncomingRequest: HEAD, PATCH and DELETE must be authorised for the upload's own video. */
  async existing(req: TusRequest, id: string): Promise<void> {
    if (req.method === 'POST') return; // checked in onUploadCreate, with the metadata parsed
    if (!UPLOAD_ID_RE.test(id)) throw { status_code: 404, body: 'The file for this url was not found\n' };
    const info = await this.ctx.storage.info(id);
    if (!info) return; // @tus/server answers 404 (or 410 if only the metadata is left)
    const videoId = info.metadata?.videoId ?? '';
    const credential = req.headers.get(CREDENTIAL_HEADER);
    try {
      if (credential) await this.ctx.ingest.checkCredential(credential, videoId);
      else if (info.metadata?.auth === 'credential') throw new ApiError('UPLOAD_CREDENTIAL_INVALID', `send the upload page's credential as ${CREDENTIAL_HEADER}`);
      if (req.method === 'PATCH') {
        // Bytes for a video that got its file meanwhile (or was deleted, or its app disabled) are refused early.
        await this.ctx.ingest.stillUploadable(info.metadata?.appId ?? '', videoId);
        await this.reserveAgain(req, id);
      }
    } catch (err) {
      throw tusRefusal(err);
    }
  }

  /**
   * Before a PATCH writes: the upload's reservation counts on, or, if it went idle (its space
   * given back), its remaining bytes must fit again (UploadRoom.resumeRoom), else 507. An
   * upload already complete or past its expiry is left to @tus/server, which answers for it.
   */
  private async reserveAgain(req: TusRequest, id: string): Promise<void> {
    const { ingest } = this.ctx;
    let upload: Upload;
    try {
      upload = await this.ctx.store.getUpload(id);
    } catch {
      return; // gone meanwhile: @tus/server answers 404 or 410
    }
    const expiry = expiresAt(upload, ingest.options.uploadExpiryMs);
    if (upload.size === undefined || upload.offset >= upload.size || (expiry !== undefined && expiry <= Date.now())) return;
    const meta = upload.metadata ?? {};
    await ingest.room.resumeRoom(
      id,
      { kind: 'tus', videoId: meta.videoId ?? '', appId: meta.appId ?? '', size: upload.size, written: upload.offset, owner: meta.owner || undefined, expiresAt: expiry },
      addressOf(req),
      this.ctx.landing,
    );
  }

  /**
   * A page that starts another upload of its video, with the credential it created the first
   * with (the user picked another file, or reloaded the page and did), replaces the first: it is
   * terminated, as the page's own Cancel would, unless bytes are arriving on it right now. Any
   * other second creation for the video is refused by reserveRoom (303) until the first ends,
   * finishes or expires; a client holding its URL can end it with DELETE (tus termination).
   */
  private async replaceOwnUpload(videoId: string, owner: string | undefined, newId: string): Promise<void> {
    const live = this.ctx.ingest.room.uploads.liveFor(videoId);
    if (!live || owner === undefined) return;
    const [id, entry] = live;
    if (id === newId || entry.owner !== owner || entry.receiving > 0 || entry.written >= entry.size || !UPLOAD_ID_RE.test(id)) return;
    // The store's remove releases the upload's room with its bytes (tusUpload.ts wraps it, for
    // termination). When it fails, the upload is already gone: its room is released here.
    const removed = await this.ctx.store.remove(id).then(
      () => true,
      () => false,
    );
    if (!removed) await this.ctx.ingest.room.release(id);
    this.ctx.log(`tus: upload ${id} of video ${videoId} replaced by a new one from the same upload page`);
  }
}

/** Who created an upload with a page's credential: a digest of it (the upload's metadata is echoed by HEAD). */
function ownerOf(credential: string): string {
  return crypto.createHash('sha256').update(credential.trim()).digest('base64url').slice(0, 22);
}

/** The client's address of a tus request (the Node request rides along as srvx's `runtime.node`). */
function addressOf(req: TusRequest): string {
  const node = (req as unknown as { runtime?: { node?: { req?: IncomingMessage } } }).runtime?.node?.req;
  return node ? clientAddress(node) : 'unknown';
}
