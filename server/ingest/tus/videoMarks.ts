import type { Upload } from '@tus/server';
import { ApiError } from '../../core/errors.js';
import type { S3TusStorage } from './tusS3Storage.js';
import { expiresAt } from './tusStorage.js';
import type { TusContext } from './context.js';
import type { TusLocks } from './locks.js';
import { tusRefusal } from './protocol.js';

/**
 * Cluster mode's rule of one live upload per video across nodes (the ledger is one node's): the
 * bucket keeps a mark naming each video's upload, written and removed under the video's lock.
 */
export class VideoMarks {
  constructor(
    private readonly ctx: TusContext,
    private readonly storage: S3TusStorage,
    private readonly locks: TusLocks,
  ) {}

  /**
   * Creates an upload in the bucket unless another upload of its video, begun on any node, is
   * live. Under the video's lock, the upload the video's mark names is checked, then the new one
   * created and marked, so of two nodes' concurrent creations one is refused (303, as
   * reserveRoom's). With a shared database reserveRoom already refuses it across nodes (the
   * reservations every node sees); the mark still covers an upload that has no reservation (one
   * begun by a node of an earlier version, until a sweep takes it back). Replacing one's own
   * upload (TusAuthorization's replaceOwnUpload) works for an upload this node knows of.
   */
  async createAlone(upload: Upload, create: () => Promise<Upload>): Promise<Upload> {
    const videoId = upload.metadata?.videoId ?? '';
    return this.locks.under(`video:${videoId}`, async () => {
      const other = await this.storage.uploadOfVideo(videoId);
      if (other !== undefined && other !== upload.id && (await this.isLive(other))) {
        await this.ctx.ingest.room.release(upload.id);
        throw tusRefusal(
          new ApiError('VIDEO_STATE_CONFLICT', 'another upload of this video is under way (through another server): resume it, end it (tus DELETE), or wait until it expires'),
        );
      }
      const created = await create();
      await this.storage.markVideo(videoId, upload.id);
      return created;
    });
  }

  /** Removes the video's mark if it still names upload `id`; under the video's lock, as createAlone marks: a newer upload's mark is never removed. */
  async unmark(videoId: string, id: string): Promise<void> {
    await this.locks.under(`video:${videoId}`, () => this.storage.unmarkVideo(videoId, id));
  }

  /** Whether an upload is still there and not past its expiry. */
  private async isLive(id: string): Promise<boolean> {
    const info = await this.storage.info(id);
    if (!info) return false;
    const expires = expiresAt(info, this.ctx.ingest.options.uploadExpiryMs);
    return expires === undefined || expires > Date.now();
  }
}
