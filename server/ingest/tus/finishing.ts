import type { Upload } from '@tus/server';
import { ApiError } from '../../core/errors.js';
import { VideoStatus } from '../../core/videoStatus.js';
import { notAVideoError, type IntakeResult } from '../sourceIntake.js';
import { isComplete } from './tusStorage.js';
import type { TusContext } from './context.js';
import type { TusLocks } from './locks.js';
import { tusRefusal, VIDEO_STATUS_HEADER } from './protocol.js';
import type { VideoMarks } from './videoMarks.js';

/**
 * A complete upload becomes its video's source (SourceIntake.accept), then is forgotten: on the
 * last PATCH (onUploadFinish), or by a sweep for one the last PATCH did not finish.
 */
export class TusFinishing {
  /**
   * @param marks Cluster mode's marks of each video's upload, removed with the upload; absent
   *   in the embedded mode.
   */
  constructor(
    private readonly ctx: TusContext,
    private readonly locks: TusLocks,
    private readonly marks: VideoMarks | undefined,
  ) {}

  /**
   * onUploadFinish: {@link accept}, answered with the video's status, or as a tus refusal. A file
   * that is not a video is refused (422, NOT_A_VIDEO) on this last PATCH: the upload does not
   * count as done, and the video takes another file.
   */
  async finish(upload: Upload): Promise<{ headers: Record<string, string> }> {
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
   * Uploads whose every byte arrived but which were not finished (the server stopped between
   * the last write and onUploadFinish, or the finish failed): finished now, once untouched for
   * `settleMs` (a finish in progress is not raced).
   */
  async finishComplete(ids: string[], settleMs: number): Promise<void> {
    for (const id of ids) {
      let upload: Upload;
      try {
        upload = await this.ctx.store.getUpload(id);
        if (!isComplete(upload)) continue;
        const written = await this.ctx.storage.lastWriteMs(id);
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
        if (!(err instanceof ApiError)) this.ctx.log(`tus: finishing upload ${id} failed (kept for the next sweep): ${(err as Error)?.stack ?? String(err)}`);
      }
    }
  }

  /**
   * The file becomes the video's source, is probed, and the upload is forgotten; resolves with
   * what intake made of it. Refused (another upload of the video won, or it is gone): the data is
   * dropped and the ApiError thrown. Any other failure keeps the complete upload for the next
   * sweep to finish.
   */
  private async accept(upload: Upload): Promise<IntakeResult> {
    if (this.ctx.storage.kind === 'file') return this.acceptNow(upload);
    // With the bucket, any node may finish an upload: the final PATCH's node (@tus/server calls
    // onUploadFinish after releasing the PATCH's lock) and every node's sweep. Under the upload's
    // lock, and only if it is still there and complete, it is finished exactly once; requests on
    // it meanwhile wait (bounded), then find it gone (404).
    return this.locks.under(upload.id, async () => {
      const now = await this.ctx.store.getUpload(upload.id).catch(() => undefined);
      if (!now || !isComplete(now)) throw new ApiError('VIDEO_STATE_CONFLICT', "the video's file was already received");
      return this.acceptNow(now);
    });
  }

  private async acceptNow(upload: Upload): Promise<IntakeResult> {
    const meta = upload.metadata ?? {};
    let result: IntakeResult;
    try {
      result = await this.ctx.storage.withLocalFile(upload.id, (file) =>
        this.ctx.ingest.intake.accept(meta.videoId ?? '', file, {
          from: VideoStatus.NotUploaded,
          keepSource: meta.needHandleSepcial === 'true',
          // Its first byte came after its creation: the upload's age is how long it took.
          arrival: { via: 'tus', appId: meta.appId ?? '', startedAt: Date.parse(upload.creation_date ?? '') || Date.now() },
        }),
      );
    } catch (err) {
      if (err instanceof ApiError) await this.forget(upload.id, meta.videoId);
      throw err;
    }
    await this.forget(upload.id, meta.videoId);
    return result;
  }

  /** Drops an upload's data (if still there) and its metadata, so its URL answers 404; and its video's mark in the bucket. */
  private async forget(id: string, videoId: string | null | undefined): Promise<void> {
    await this.ctx.storage.forget(id);
    if (this.marks && videoId) await this.marks.unmark(videoId, id);
    await this.ctx.ingest.room.release(id);
  }
}
