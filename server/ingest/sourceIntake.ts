import fs from 'node:fs';
import path from 'node:path';
import { ApiError, ClientWentAwayError, RESULT_CODES } from '../core/errors.js';
import type { VopEventBus, VopEvents } from '../core/events.js';
import { defaultFfmpegBinaries } from '../media/ffmpegBinaries.js';
import { ProbeError, probe, type ProbeResult } from '../media/probe.js';
import type { VideoLifecycle } from '../videos/videoLifecycle.js';
import { NOT_A_VIDEO_REASON, SourceFileGetType, VIDEO_ID_RE, VideoStatus } from '../core/videoStatus.js';
import type { LocalMediaRoot } from '../storage/media/localMediaRoot.js';
import { mediaKey, type MediaStore } from '../storage/media/mediaStore.js';
import type { VideoRecord, VideoStore } from '../storage/types.js';
import { fsyncDir, fsyncFile } from '../storage/fsync.js';

/**
 * True if an upload may give `video` its file now: it was registered for upload (SourceFileGetType
 * 1), has no source, and is in 8 (nothing uploaded yet) or in 7 because the file it was sent was
 * not a video (that file was deleted). Any other 7 (a transcoding failure keeps its source), 1, 5,
 * 6 or 0 refuses: a video that has a good file never takes another one this way.
 */
export function awaitsUpload(video: VideoRecord): boolean {
  return video.sourceFile === '' && (video.status === VideoStatus.NotUploaded || refusedUpload(video)) && video.sourceType === SourceFileGetType.Upload;
}

/** An uploaded video in 7 because its file was not a video. */
function refusedUpload(video: VideoRecord): boolean {
  return video.sourceType === SourceFileGetType.Upload && video.status === VideoStatus.TranscodingFailed && video.statusReason.startsWith(NOT_A_VIDEO_REASON);
}

/**
 * The refusal an uploader gets for `result`: NOT_A_VIDEO when the file was not a video (the
 * video is in 7 and takes another upload), undefined when it was one.
 */
export function notAVideoError(result: IntakeResult): ApiError | undefined {
  if (result.status !== VideoStatus.TranscodingFailed || !result.reason.startsWith(NOT_A_VIDEO_REASON)) return undefined;
  return new ApiError('NOT_A_VIDEO', result.reason.slice(NOT_A_VIDEO_REASON.length));
}

/** How a file came, for the events that say it arrived or was refused (upload.received, upload.refused). */
export interface Arrival {
  via: VopEvents['upload.received'][0]['via'];
  appId: string;
  /** When its first byte came (Unix ms). */
  startedAt: number;
}

/** What {@link SourceIntake.accept} did with a file. */
export interface IntakeResult {
  /** The video's status afterwards: 5 (a video, waiting for transcoding) or 7 (not a video). */
  status: number;
  /** Why it is 7; empty otherwise. */
  reason: string;
}

export interface SourceIntakeDeps {
  videos: VideoStore;
  /** This node's disk: where a complete file is claimed (`sources/<videoId>/source`). */
  media: LocalMediaRoot;
  /**
   * Where sources are kept: on local disk the claimed file is already the object; elsewhere
   * (S3) it is handed over to the store once claimed.
   */
  objects: MediaStore;
  lifecycle: VideoLifecycle;
  probeTimeoutMs: number;
  log: (line: string) => void;
  /** Told of each file that arrives or is refused (this node's bus); absent, nobody is. */
  events?: VopEventBus;
  /** Swap point for tests; the ffmpeg layer's probe by default. */
  probe?: (file: string, opts: { timeoutMs: number }) => Promise<ProbeResult>;
}


/**
 * The one path every complete file takes, whether it came by tus, by multipart or by a pull:
 * it becomes `sources/<videoId>/source`, then its content is probed and the video moves to 5
 * (a video) or 7 (not a video, reason kept).
 *
 * The hard link into `sources` is the commit point: it fails if a source is already there, so
 * of two uploads of one video only one can complete. Everything after it can be redone from the
 * stored file, which is what {@link resumeStored} does after a crash. With media in object storage
 * the claimed file is then handed to the store ({@link store}), and a file a crash left claimed
 * but not handed over is handed over at the next start.
 */
export class SourceIntake {
  /** Per-video chains: completions of one video run one after another. */
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly probeFile: NonNullable<SourceIntakeDeps['probe']>;

  constructor(private readonly deps: SourceIntakeDeps) {
    this.probeFile = deps.probe ?? (async (file, o) => probe(file, { ...o, ffprobePath: (await defaultFfmpegBinaries()).ffprobe.path }));
  }

  /** Where a video's source is claimed on this node's disk (on the local store: where it is kept). */
  sourcePath(videoId: string): string {
    return this.deps.media.path('sources', videoId, 'source');
  }

  /** The media key of a video's source (VideoRecord.sourceFile is `<videoId>/source`). */
  private sourceKey(videoId: string): string {
    return mediaKey('sources', videoId, 'source');
  }

  /**
   * Hands a file a crash left claimed to a store that is not this disk (S3); on local disk the
   * claimed file is the object already. (The database's claim, taken before, kept other nodes'
   * uploads of the video out meanwhile.)
   */
  private async store(videoId: string): Promise<void> {
    if (this.deps.objects.kind === 'local') return;
    const file = this.sourcePath(videoId);
    if (!fs.existsSync(file)) return;
    await this.deps.objects.put(this.sourceKey(videoId), { file, move: true });
  }

  /** Object storage: hands the claimed file over (its claim in the database is taken already). */
  private async handOver(videoId: string): Promise<void> {
    await this.deps.objects.put(this.sourceKey(videoId), { file: this.sourcePath(videoId), move: true });
  }

  /** Whether the video's source is stored (handing over first a file a crash left claimed here). */
  private async stored(videoId: string): Promise<boolean> {
    await this.store(videoId);
    return (await this.deps.objects.stat(this.sourceKey(videoId))) !== undefined;
  }

  /**
   * Makes `file` the source of `videoId` if the video is in status `from` with no source yet,
   * then probes it. The file is moved (or removed, if refused). Throws VIDEO_STATE_CONFLICT if
   * the video is gone, in another state, or another file got there first. `from` 8 (an upload)
   * also takes a video that {@link awaitsUpload} after a file that was not a video.
   */
  async accept(videoId: string, file: string, opts: { from: number; keepSource: boolean; arrival?: Arrival }): Promise<IntakeResult> {
    const { arrival } = opts;
    // Measured before the file is moved (claimed) or removed (refused).
    const bytes = arrival ? await fs.promises.stat(file).then((st) => st.size, () => 0) : 0;
    let result: IntakeResult;
    try {
      result = await this.acceptFile(videoId, file, opts);
    } catch (err) {
      if (arrival) this.refused(videoId, arrival, err);
      throw err;
    }
    if (arrival) {
      const refusal = notAVideoError(result);
      if (refusal) this.refused(videoId, arrival, refusal);
      else this.deps.events?.emit('upload.received', { videoId, appId: arrival.appId, via: arrival.via, bytes, durationMs: Date.now() - arrival.startedAt });
    }
    return result;
  }

  /**
   * Tells the bus that `videoId`'s file was refused (upload.refused): `err`'s result code and
   * message; an error that is no ApiError is the server's own failure (500), its text kept out.
   */
  refused(videoId: string, arrival: Arrival, err: unknown): void {
    if (err instanceof ClientWentAwayError) {
      this.deps.events?.emit('upload.cut', { videoId, appId: arrival.appId, via: arrival.via, durationMs: Date.now() - arrival.startedAt });
      return;
    }
    const code = err instanceof ApiError ? err.def.code : RESULT_CODES.SERVER_ERROR.code;
    const reason = err instanceof ApiError ? err.message : 'the file could not be stored';
    this.deps.events?.emit('upload.refused', { videoId, appId: arrival.appId, via: arrival.via, code, reason });
  }

  private acceptFile(videoId: string, file: string, opts: { from: number; keepSource: boolean }): Promise<IntakeResult> {
    return this.exclusive(videoId, async () => {
      const { videos } = this.deps;
      const video = await videos.get(videoId);
      const takesFile = opts.from === VideoStatus.NotUploaded ? video !== undefined && awaitsUpload(video) : video?.status === opts.from && video.sourceFile === '';
      if (!video || !takesFile) {
        await fs.promises.rm(file, { force: true });
        throw new ApiError('VIDEO_STATE_CONFLICT', video ? "the video's file was already received" : 'the video no longer exists');
      }
      // keepSource first: after the link, a crash must not lose it (resumeStored starts from the link).
      await videos.updateMedia(videoId, { keepSource: opts.keepSource });
      const dest = this.sourcePath(videoId);
      await fs.promises.mkdir(path.dirname(dest), { recursive: true });
      // The upload's success is acknowledged after this: the bytes must be on disk, not only in
      // the page cache, before the source is recorded (about 0.5 s per GiB here).
      await fsyncFile(file);
      await claim(file, dest);
      await fsyncDir(path.dirname(dest));
      if (this.deps.objects.kind === 'local') {
        await videos.updateMedia(videoId, { sourceFile: `${videoId}/source` });
        return this.check(videoId, video.status);
      }
      // Object storage, where nodes share the video: the link above is on this node's disk only,
      // so the claim every node sees is the database's, one step that one upload wins.
      const sourceFile = `${videoId}/source`;
      if (!(await videos.claimSource(videoId, sourceFile))) {
        await unclaim(dest);
        throw new ApiError('VIDEO_STATE_CONFLICT', "the video's file was already received");
      }
      // Judged on the claimed file here, so that a file that is not a video never travels to the
      // bucket; a good one is then handed over. If that fails, both claims are undone, so the
      // upload can be sent again (the video is still waiting for it).
      try {
        return await this.check(videoId, video.status, dest);
      } catch (err) {
        if (fs.existsSync(dest)) {
          await videos.releaseSource(videoId, sourceFile);
          await unclaim(dest);
        }
        throw err;
      }
    });
  }

  /**
   * Records that the file sent for `videoId` is not a video without storing it (the upload page's
   * quick look found it out before a byte was sent, quickLook.ts): the video moves to 7 with
   * `reason`, exactly as after ffprobe's verdict on a stored file, and takes another upload.
   * Throws VIDEO_STATE_CONFLICT unless the video {@link awaitsUpload}.
   */
  refuse(videoId: string, reason: string): Promise<IntakeResult> {
    return this.exclusive(videoId, async () => {
      const video = await this.deps.videos.get(videoId);
      if (!video || !awaitsUpload(video)) throw new ApiError('VIDEO_STATE_CONFLICT', video ? "the video's file was already received" : 'the video no longer exists');
      const why = `${NOT_A_VIDEO_REASON}${reason}`;
      if (await this.deps.lifecycle.move(videoId, VideoStatus.TranscodingFailed, { from: [video.status], reason: why })) return { status: VideoStatus.TranscodingFailed, reason: why };
      const now = await this.deps.videos.get(videoId);
      return { status: now?.status ?? -1, reason: now?.statusReason ?? '' };
    });
  }

  /**
   * Finishes sources stored before a crash: a video still in status `from` (8, or 3 for a pull)
   * whose source file exists is probed and moved on; `from` 8 includes a video in 7 whose
   * earlier file was not a video (the new one was stored). Resolves with the outcome, or
   * undefined if there was nothing stored.
   */
  finishStored(videoId: string, from: number): Promise<IntakeResult | undefined> {
    return this.exclusive(videoId, async () => {
      const video = await this.deps.videos.get(videoId);
      const waiting = video !== undefined && (video.status === from || (from === VideoStatus.NotUploaded && refusedUpload(video)));
      if (!video || !waiting || !(await this.stored(videoId))) return undefined;
      if (video.sourceFile === '') await this.deps.videos.updateMedia(videoId, { sourceFile: `${videoId}/source` });
      return this.check(videoId, video.status);
    });
  }

  /** On start: every upload whose file was stored but not yet checked when the server stopped. */
  async resumeStored(): Promise<number> {
    let n = 0;
    // The store's sources, and (media elsewhere) files a crash left claimed here but not handed over.
    const local = this.deps.objects.kind === 'local' ? [] : await fs.promises.readdir(this.deps.media.path('sources')).catch(() => [] as string[]);
    const names = [...new Set([...(await this.deps.objects.listNames('sources')), ...local])];
    for (const name of names) {
      if (!VIDEO_ID_RE.test(name)) continue;
      try {
        if (await this.finishStored(name, VideoStatus.NotUploaded)) n++;
      } catch (err) {
        this.deps.log(`Ingest: finishing the stored source of ${name} failed: ${String(err)}`);
      }
    }
    return n;
  }

  /**
   * Probes the stored source and moves the video from `from` to 5 or 7. `claimed`: the source is
   * still the file claimed on this node (object storage), probed there and handed over to the
   * store (and recorded) unless it is refused.
   */
  private async check(videoId: string, from: number, claimed?: string): Promise<IntakeResult> {
    const { videos, lifecycle, log } = this.deps;
    const timeout = { timeoutMs: this.deps.probeTimeoutMs };
    let verdict: ProbeResult;
    try {
      verdict = claimed ? await this.probeFile(claimed, timeout) : await this.deps.objects.withLocalCopy(this.sourceKey(videoId), (file) => this.probeFile(file, timeout));
    } catch (err) {
      // The stored file is not there to read: nothing to pass on.
      if (!(err instanceof ProbeError) || err.failed === 'file') throw err;
      // No verdict: every ffprobe broke on the file (or none runs). That is the tool's failure,
      // never the file's (issue 10, item 1): the video goes on to the transcode, whose probe
      // fails as a job that is retried, and ends in 7 with the tool's failure as its reason,
      // from where an admin can retry it once ffmpeg is mended.
      log(`Ingest: probing the source of ${videoId} failed (passed on to the transcode): ${err.message}`);
      if (claimed) await this.handOver(videoId);
      if (await lifecycle.move(videoId, VideoStatus.WaitingForTranscoding, { from: [from] })) return { status: VideoStatus.WaitingForTranscoding, reason: '' };
      const now = await videos.get(videoId);
      return { status: now?.status ?? -1, reason: now?.statusReason ?? '' };
    }
    const to = verdict.isVideo ? VideoStatus.WaitingForTranscoding : VideoStatus.TranscodingFailed;
    const reason = verdict.isVideo ? '' : `${NOT_A_VIDEO_REASON}${verdict.reason}`;
    if (claimed && verdict.isVideo) await this.handOver(videoId);
    if (verdict.isVideo) await videos.updateMedia(videoId, { duration: Math.max(1, Math.round(verdict.durationSeconds)) });
    else await this.dropRefused(videoId);
    // The transcoder may take the video on at once: report the move, not what a re-read shows.
    if (await lifecycle.move(videoId, to, { from: [from], reason })) return { status: to, reason };
    const now = await videos.get(videoId);
    return { status: now?.status ?? -1, reason: now?.statusReason ?? '' };
  }

  /**
   * A file that is not a video is deleted before the video moves to 7: an uploaded video then
   * takes another upload ({@link awaitsUpload}), and a pulled one keeps nothing a source sent
   * (an endless body of gigabytes, say; issue 12, item 6). The record first: a crash before the
   * file is gone leaves a video in 8 (or 3) with a stored file, which is probed again at start.
   */
  private async dropRefused(videoId: string): Promise<void> {
    await this.deps.videos.updateMedia(videoId, { sourceFile: '' });
    await this.deps.objects.delete(this.sourceKey(videoId));
    const file = this.sourcePath(videoId);
    await fs.promises.rm(file, { force: true });
    await fsyncDir(path.dirname(file));
  }

  private exclusive<T>(videoId: string, work: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(videoId) ?? Promise.resolve();
    const next = prev.then(work, work);
    const settled = next.catch(() => undefined);
    this.chains.set(videoId, settled);
    void settled.then(() => {
      if (this.chains.get(videoId) === settled) this.chains.delete(videoId);
    });
    return next;
  }
}

/** Undoes a {@link claim}: the claimed file goes, so another upload of the video can claim. */
async function unclaim(dest: string): Promise<void> {
  await fs.promises.rm(dest, { force: true });
  await fsyncDir(path.dirname(dest));
}

/**
 * Moves `file` to `dest` unless `dest` exists. A hard link does the check and the move in one
 * step; on file systems without hard links (FAT, some network shares) the caller's per-video
 * chain is what keeps the check and the rename together.
 */
async function claim(file: string, dest: string): Promise<void> {
  try {
    await fs.promises.link(file, dest);
    await fs.promises.unlink(file);
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      await fs.promises.rm(file, { force: true });
      throw new ApiError('VIDEO_STATE_CONFLICT', "the video's file was already received");
    }
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV' && code !== 'ENOSYS') throw err;
  }
  if (fs.existsSync(dest)) {
    await fs.promises.rm(file, { force: true });
    throw new ApiError('VIDEO_STATE_CONFLICT', "the video's file was already received");
  }
  await fs.promises.rename(file, dest);
}
