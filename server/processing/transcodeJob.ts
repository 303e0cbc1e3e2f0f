/**
 * The `transcode` job (issue 4): a stored source becomes a playable video, 5 → 6 → 1, or 7 with
 * the reason once the job gives up. It makes the video's first rendition (ladderPlan.ts: the
 * source's streams copied, or the lowest rung, or the whole ladder when the application asks);
 * the rest of the ladder is the `ladder` job's (ladderJob.ts), queued once the video is 1.
 *
 * Steps: the source made available as a local file (the media store's withLocalCopy); probe it;
 * the first rendition (or the kept source) with the covers made meanwhile; HLS over the
 * renditions; all of it in this node's scratch folder. Then the outputs
 * are stored (storeOutputs.ts), then the rows (renditions, duration, cover), then the move to 1.
 * Files come first and rows last, so a crash at any point leaves either the previous state or
 * objects nobody lists (which `recover` removes).
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { PermanentJobError, type JobContext, type JobTypeDefinition } from '../jobs/jobQueue.js';
import { hasAudioGroup } from '../media/audioTracks.js';
import { canRepackageAsHls, type TranscodeOptions } from '../media/transcodeArgs.js';
import type { VideoLifecycle } from '../videos/videoLifecycle.js';
import { NOT_A_VIDEO_REASON, VideoStatus } from '../core/videoStatus.js';
import type { MediaStore } from '../storage/media/mediaStore.js';
import type { Scratch } from '../storage/scratch.js';
import type { VideoRecord, VideoStore } from '../storage/types.js';
import { removeReplacedRenditions } from './attemptOutputs.js';
import { writeAudioRenditions } from './audioRenditions.js';
import { writeCovers } from './coverOutput.js';
import { replaceSourceTextTracks, storeTextTrack, writeSourceTextTracks } from './textTracks.js';
import type { FfmpegTools } from '../media/ffmpegTools.js';
import { cutFirstRendition, packageHls } from './hlsPackaging.js';
import type { HlsSegment } from '../media/hls.js';
import { planLadder } from './ladderPlan.js';
import { transcodeOptionsOf, type ProcessingOptions } from './processingOptions.js';
import { copyRendition, CopyRefused, keepSourceRendition, transcodeRenditions, type FfmpegRunContext } from './renditionOutputs.js';
import { pickRungs } from '../media/ladder.js';
import { recoverAttempt, runAttempt, type Attempt, type AttemptKind } from './runAttempt.js';
import { storeCovers, storeHls, storeRenditions } from './storeOutputs.js';
import { ffmpegRunContext, sourceKeyOf, toRecord, TRANSCODE_SHARE, transcodeProgress } from './transcodeAttempt.js';
import { CANCELLED_REASON } from '../core/jobTypes.js';

/**
 * Statuses a transcode job works from: 5 (queued by the move to 5, or retried by an admin, who
 * moves the video back from 7 to 5 first), 6 (run again after a crash, a stop or a failed attempt).
 */
const RUNNABLE_FROM: readonly number[] = [VideoStatus.WaitingForTranscoding, VideoStatus.Transcoding];

/** Its attempts (runAttempt.ts): scratch folders `<videoId>.<token>`; covers, HLS and text tracks stored besides renditions. */
const ATTEMPTS: AttemptKind = { label: 'Transcode', tag: '', areas: ['covers', 'hls', 'text'] };

export interface TranscodeJobDeps {
  videos: VideoStore;
  /** Where sources are read from and outputs stored. */
  objects: MediaStore;
  /** This node's working space: an attempt writes its outputs there first. */
  scratch: Scratch;
  lifecycle: VideoLifecycle;
  tools: FfmpegTools;
  options: ProcessingOptions;
  /** `YYYYMMDD` of a moment, in the server's zone. */
  dateFolder: (ms: number) => string;
  /** The live-ffmpeg record (killOrphans at start-up). */
  pidFile: string;
  /** Told when a video's HLS folder was written or removed, before the video moves on (HlsPresence). */
  hlsChanged?: (videoId: string) => void;
  /**
   * Whether the video's application wants every rung before status 1 (AppRecord.wholeLadderFirst);
   * absent: none does. Otherwise the first rendition makes the video playable and the ladder job
   * makes the rest (ladderPlan.ts).
   */
  wholeLadderFirst?: (appId: string) => Promise<boolean>;
  /**
   * Stops this node's ladder encodes until the returned release is called (PauseGroup.hold): a
   * video waiting to become playable gets every core. Absent: ladders run on at their niceness.
   */
  holdLadders?: () => () => void;
  log: (line: string) => void;
}

export function transcodeJob(deps: TranscodeJobDeps): JobTypeDefinition<'transcode'> {
  const { videos, objects, lifecycle, options } = deps;
  const transcode = transcodeOptionsOf(options);

  return {
    concurrency: options.concurrency,
    // It needs ffmpeg: a cluster's API nodes leave it to the workers.
    runsOn: 'workers',
    retry: options.retry,

    async handle(job, ctx) {
      const videoId = job.videoId;
      const video = await videos.get(videoId);
      // Gone, or moved on (deleted, already playable): nothing to do.
      if (!video || !RUNNABLE_FROM.includes(video.status)) return;
      // Status 5 without a stored source was set by hand (ingest stores the file first): there is
      // nothing to transcode, and failing the video would report a failure nobody caused.
      if (video.sourceFile === '') return;
      if (video.status !== VideoStatus.Transcoding && !(await lifecycle.move(videoId, VideoStatus.Transcoding, { from: [VideoStatus.WaitingForTranscoding] }))) return;

      const previous = (await videos.renditions(videoId)).map((r) => r.file);
      // The rendition files the database lists, which clean-up after a failure must leave alone.
      const listed = new Set(previous);
      let rowsWritten = false;
      await runAttempt(deps, ATTEMPTS, {
        job, ctx, video,
        dirs: ['play', 'covers', 'hls', 'audio', 'text'],
        keep: listed,
        // With no rows naming anything of the video, what this attempt stored of HLS and covers
        // goes too (a full second copy of the video, in the bucket, for a video in 7).
        unnamed: () => !rowsWritten && previous.length === 0,
        // From here to the end of the attempt, this node's ladders wait: the first rendition is
        // the one a viewer waits for.
        hold: () => deps.holdLadders?.(),
      }, async (attempt) => {
        const made = await attempt.withSource((source) => makeOutputs(deps, { videoId, video, source, ctx, transcode, attempt }));
        await storeAndPublish(deps, { videoId, attempt, made, previous, listed, ctx, onRowsWritten: () => { rowsWritten = true; } });
      });
    },

    recover: (job) => recoverAttempt(deps, ATTEMPTS, job),

    async onGiveUp(job, reason) {
      if (reason.startsWith(NOT_A_VIDEO_REASON)) {
        // As intake refuses a file (ingest/sourceIntake.ts): the record first, then the file, and
        // the reason as intake gives it, so that an uploaded video takes another file. The job
        // is already recorded as failed: whoever sees the 7 sees a finished job.
        const video = await videos.get(job.videoId);
        const source = video?.sourceFile ? sourceKeyOf(video.sourceFile) : undefined;
        await videos.updateMedia(job.videoId, { sourceFile: '' });
        if (source) await objects.delete(source);
        await lifecycle.move(job.videoId, VideoStatus.TranscodingFailed, { from: [VideoStatus.WaitingForTranscoding, VideoStatus.Transcoding], reason });
        return;
      }
      await lifecycle.move(job.videoId, VideoStatus.TranscodingFailed, {
        from: [VideoStatus.WaitingForTranscoding, VideoStatus.Transcoding],
        reason: reason === CANCELLED_REASON ? 'transcoding cancelled' : `transcoding failed: ${reason}`,
      });
    },
  };
}

/** The attempt of a transcode, with a scratch folder for each kind of output. */
type TranscodeAttempt = Attempt<'play' | 'covers' | 'hls' | 'audio' | 'text'>;

/** One attempt's making of its outputs from the source's local file. */
interface MakeOutputsArgs {
  videoId: string;
  video: VideoRecord;
  /** The source's local file. */
  source: string;
  ctx: JobContext;
  transcode: TranscodeOptions;
  /** Its scratch folders, its date folder, its signal (the job's and the deadline's) and the deadline to arm. */
  attempt: TranscodeAttempt;
}

/**
 * Probes the source, then writes into the attempt's scratch folders the first rendition (or the
 * kept source) with its audio and text tracks and HLS, and the covers meanwhile. Nothing is
 * stored yet: a failure here leaves nothing anyone else sees.
 */
async function makeOutputs(deps: TranscodeJobDeps, a: MakeOutputsArgs) {
  const { options, log } = deps;
  const { videoId, video, source, ctx, transcode } = a;
  const { dirs, dateFolder } = a.attempt;
  const ffmpeg = await ffmpegRunContext(deps.tools, options, { signal: a.attempt.signal, pidFile: deps.pidFile });
  // A probe that breaks is a failure to retry (a plain Error), never "not a video". The
  // source is judged again (allow-list, limits): the settings may have changed since it came.
  const info = await deps.tools.probe(source, { timeoutMs: ffmpeg.probeTimeoutMs });
  // Judged here, not at intake (its probe broke then and passed the file on, or the
  // settings changed): refused as intake refuses, by the job's onGiveUp.
  if (!info.isVideo) throw new PermanentJobError(`${NOT_A_VIDEO_REASON}${info.reason}`);
  a.attempt.armDeadline(info.durationSeconds);

  // What makes the video playable now, and what the ladder job makes after it.
  const split = !video.keepSource && !(await deps.wholeLadderFirst?.(video.appId));
  const plan = planLadder(info, options.ladder, { split, maxFrameRate: transcode.maxFrameRate });
  const first = plan.first;
  // The covers are taken from the source while the renditions encode: their runs are short
  // and spend most of their time starting and seeking, which the long encode hides.
  const job = { videoId, source, info, dateFolder, outDir: dirs.play };
  const hls = options.hls && (!video.keepSource || canRepackageAsHls(info));
  // HLS follows the renditions in the same branch: a copy is done long before the covers,
  // and its packaging then costs the video no time.
  // A source with several audio tracks: HLS offers each (audioRenditions.ts), made while
  // the first rendition is.
  const audioTracks = hls && !video.keepSource && hasAudioGroup(info) ? info.audioTracks! : [];
  let encodedInstead = false;
  // A copy that is not what the probe said (its picture changes mid-stream): the lowest
  // rung is encoded instead, as for any source browsers do not play, once its largest
  // picture passed the limits every source must pass.
  const encodeInstead = async (err: unknown, steps: FfmpegRunContext) => {
    if (!(err instanceof CopyRefused)) throw err;
    const largest = err.largest ?? { width: info.width, height: info.height };
    const refused = deps.tools.judge({ ...info, width: largest.width, height: largest.height, storedWidth: largest.width, storedHeight: largest.height });
    if (refused !== null) throw new PermanentJobError(`${NOT_A_VIDEO_REASON}${refused}`);
    log(`Transcode of ${videoId}: ${err.message}; its lowest rung is encoded instead.`);
    encodedInstead = true;
    return transcodeRenditions({ ...job, ffmpeg: steps }, options.ladder, transcode, transcodeProgress(ctx), pickRungs(info, options.ladder).slice(-1));
  };
  // Each output is handed to the store as soon as it is written (MediaStore.prepareMove): on local
  // disk it is flushed while the rest is made, and the store's fsync before each rename finds
  // little left (0.19 s of the path to playable for a 1-minute 1080p copy and its HLS).
  const flushing: Promise<void>[] = [];
  const flushSoon = (files: readonly string[]) => {
    for (const f of files) flushing.push(deps.objects.prepareMove(f));
  };
  const renditions = async (steps: FfmpegRunContext) => {
    // A copy's HLS cut starts as soon as the copy is judged faithful, while its other audio
    // tracks and its subtitles may still be written (a copy refused, and encoded instead, never
    // starts one).
    let firstCut: Promise<HlsSegment[]> | undefined;
    const cutEarly = (label: string) => (file: string) => {
      if (!hls) return;
      firstCut = cutFirstRendition(file, label, dirs.hls, steps, options.hlsSegmentSeconds, audioTracks.length > 0);
      firstCut.catch(() => undefined); // awaited below; a failure before then must not go unhandled
    };
    try {
      const [written, audio, text] = await Promise.all([
        video.keepSource
          ? keepSourceRendition({ ...job, ffmpeg: steps }).then((r) => [r])
          : first.kind === 'copy'
            ? copyRendition({ ...job, ffmpeg: steps }, first.rendition, first.audio, transcode, transcodeProgress(ctx), cutEarly(first.rendition.label)).then(
                (r) => [r],
                (err: unknown) => encodeInstead(err, steps),
              )
            : transcodeRenditions({ ...job, ffmpeg: steps }, options.ladder, transcode, transcodeProgress(ctx), first.rungs),
        audioTracks.length > 0 ? writeAudioRenditions({ ...job, outDir: dirs.audio, ffmpeg: steps }, audioTracks, { bitrateKbps: options.ladder.audioBitrateKbps, channels: transcode.audioChannels }) : [],
        // Its subtitles and chapters, as WebVTT (textTracks.ts).
        writeSourceTextTracks({ videoId, source, info, outDir: dirs.text, ffmpeg: steps }, log),
      ]);
      flushSoon(written.map((w) => w.path));
      if (hls) {
        await packageHls(written, dirs.hls, steps, options.hlsSegmentSeconds, { ...(audio.length > 0 ? { audio } : {}), ...(firstCut ? { firstCut } : {}) });
        flushSoon((await fsp.readdir(dirs.hls, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name)));
      }
      return { written, text };
    } finally {
      // Never leave its ffmpeg writing into a scratch folder about to be removed.
      await firstCut?.catch(() => undefined);
    }
  };
  const [{ written, text }, covers] = await bothOrAbort(ffmpeg, (steps) => [renditions(steps), writeCovers(source, info, dirs.covers, steps)]).finally(() => Promise.all(flushing));
  ctx.progress({ percent: TRANSCODE_SHARE });
  const ladderPending = !video.keepSource && (encodedInstead ? pickRungs(info, options.ladder).length > 1 : plan.rest.length > 0);
  return { info, written, text, covers, hls, ladderPending };
}

/** An attempt's making and where its outputs are, as storeAndPublish takes them. */
interface StoreArgs {
  videoId: string;
  /** The attempt: its scratch folders, removed once everything is stored. */
  attempt: TranscodeAttempt;
  made: Awaited<ReturnType<typeof makeOutputs>>;
  /** The rendition files the rows named before this attempt. */
  previous: string[];
  /** The rendition files the rows name, which clean-up after a failure leaves alone: the new ones join once written. */
  listed: Set<string>;
  ctx: JobContext;
  /** Called once the rendition rows name the new files: from then on a failure must not delete them. */
  onRowsWritten: () => void;
}

/**
 * Stores an attempt's outputs, then writes the rows that name them, then moves the video to 1:
 * files first and rows last, so that a crash leaves the previous state or unlisted objects.
 */
async function storeAndPublish(deps: TranscodeJobDeps, a: StoreArgs): Promise<void> {
  const { videos, objects, lifecycle, log } = deps;
  const { videoId, attempt, made, previous, listed, ctx } = a;
  const { dirs } = attempt;
  // A node paused past its lease (cluster mode) stores nothing: the job is another node's now.
  await ctx.fence();

  // Stored before any row names them: HLS, covers, renditions (storeOutputs.ts); a cancel
  // is heard between two objects, not only once all are stored.
  if (made.hls) await storeHls(objects, videoId, dirs.hls, ctx.signal);
  else await objects.deletePrefix(`hls/${videoId}`);
  deps.hlsChanged?.(videoId);
  const coverFile = await storeCovers(objects, videoId, dirs.covers, made.covers, ctx.signal);
  await storeRenditions(objects, made.written, ctx.signal);
  for (const t of made.text) await storeTextTrack(objects, t.record, { file: t.path });
  // Everything is stored: the scratch folder goes before the video is said to be ready, so
  // that a node holds nothing of an attempt once its video is in status 1 (runAttempt removes it
  // again at the end, or on failure, and logs a failure to).
  await attempt.removeScratch();
  await ctx.fence();

  const { written, info } = made;
  await videos.setRenditions(videoId, written.map((w) => toRecord(videoId, w)));
  a.onRowsWritten();
  // From here the rows name the new files: a failure of a later step must not delete them.
  for (const w of written) listed.add(w.file);
  await replaceSourceTextTracks({ videos, objects }, videoId, made.text, made.hls, log);
  // 'pending' before the move to 1: a crash between the two leaves a ladder start-up queues.
  await videos.updateMedia(videoId, { duration: Math.max(1, Math.round(info.durationSeconds)), coverFile, ladder: made.ladderPending ? 'pending' : '' });
  await removeReplacedRenditions(objects, previous, new Set(written.map((w) => w.file)));
  await lifecycle.move(videoId, VideoStatus.Normal, { from: [VideoStatus.Transcoding] });
}

/**
 * Runs two steps at once on a shared signal: when one fails, the other is stopped, and both have
 * finished (their temporary outputs removed) before the failure is thrown.
 */
async function bothOrAbort<A, B>(ffmpeg: FfmpegRunContext, start: (steps: FfmpegRunContext) => [Promise<A>, Promise<B>]): Promise<[A, B]> {
  const failed = new AbortController();
  const steps = { ...ffmpeg, signal: AbortSignal.any([ffmpeg.signal, failed.signal]) };
  const settled = await Promise.allSettled(
    start(steps).map((p) =>
      p.catch((err: unknown) => {
        if (!failed.signal.aborted) failed.abort(err); // the first failure, not the other's abort
        throw err;
      }),
    ),
  );
  if (failed.signal.aborted) throw failed.signal.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as [A, B];
}
