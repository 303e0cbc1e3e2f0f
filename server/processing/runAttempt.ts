/**
 * One attempt of a job that works from a video's stored source (transcodeJob.ts, the first
 * rendition; ladderJob.ts, the rest of the ladder), around what the job itself makes and
 * publishes. The two jobs run their attempts alike, and a fix to one belongs to both:
 *  - a scratch folder of the attempt's own, made empty with a folder for each kind of output, and
 *    removed at the end however the attempt ends;
 *  - the source made available as a local file for the length of the work, a missing one being
 *    a permanent failure;
 *  - a deadline armed once the source's length is known (processing.jobTimeout), which stops
 *    ffmpeg as a cancel does;
 *  - on failure, what the attempt stored and no row names is removed (unless the job is another
 *    node's now), and the failure is made permanent when a limit caused it and cut of local paths
 *    before the queue records it;
 *  - `recover`: what an attempt cut off by a crash or a stop left behind.
 * Whether the video still wants the job, what is made and how it is stored and published are the
 * job's own.
 */
import crypto from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { PermanentJobError, type JobContext } from '../jobs/jobQueue.js';
import { LeaseLostError } from '../jobs/turnQueue.js';
import type { JobRecord } from '../storage/jobRecords.js';
import { MediaObjectNotFoundError, type MediaStore } from '../storage/media/mediaStore.js';
import type { Scratch } from '../storage/scratch.js';
import type { VideoRecord, VideoStore } from '../storage/types.js';
import { removeAttemptOutputs, removeCutOffOutputs } from './attemptOutputs.js';
import { transcodeTimeoutMs, type ProcessingOptions } from './processingOptions.js';
import { forPeople, limitFailure, sourceKeyOf, TranscodeTimeout } from './transcodeAttempt.js';

/** What a job's attempts are, for the scaffold: named in log lines and scratch, and where they store. */
export interface AttemptKind {
  /** The job as its log lines name it: `<label> of <videoId>: …`. */
  label: string;
  /**
   * What follows the video id in the attempt's scratch name (`<videoId><tag>.<token>`, under the
   * `transcode` kind). Each job's `recover` removes `<videoId><tag>.*`: one job's tag must not
   * make its names start with another's prefix.
   */
  tag: string;
  /** The video's areas the job stores into besides renditions: `recover` removes incomplete uploads there. */
  areas: ReadonlyArray<'hls' | 'covers' | 'text'>;
}

/** What the scaffold needs of the job's dependencies. */
export interface AttemptDeps {
  videos: Pick<VideoStore, 'renditions'>;
  objects: MediaStore;
  scratch: Scratch;
  options: ProcessingOptions;
  /** `YYYYMMDD` of a moment, in the server's zone. */
  dateFolder: (ms: number) => string;
  log: (line: string) => void;
}

/** One attempt's start, as the job hands it to runAttempt. */
export interface AttemptStart<D extends string> {
  job: JobRecord;
  ctx: JobContext;
  video: VideoRecord;
  /** The attempt's scratch folders, made in this order. */
  dirs: readonly D[];
  /**
   * The rendition files the rows name (`<date>/<file>`), which clean-up after a failure leaves
   * alone. Read at the failure: the job adds its new files once rows name them.
   */
  keep: ReadonlySet<string>;
  /** Read at a failure: whether no row names anything of the video, so its HLS and covers go too. */
  unnamed?: () => boolean;
  /** Taken as the attempt starts; what it returns is called first as the attempt ends. */
  hold?: () => (() => void) | undefined;
}

/** What the job's own work gets from the scaffold. */
export interface Attempt<D extends string> {
  /** The attempt's scratch folders by kind of output, made and empty. */
  dirs: Record<D, string>;
  /** The attempt's date folder (of the job's start), where its renditions go: `recover` looks there. */
  dateFolder: string;
  /** The job's signal and the deadline's, either of which stops ffmpeg. */
  signal: AbortSignal;
  /** Runs `work` on the source made available as a local file (MediaStore.withLocalCopy). */
  withSource<T>(work: (source: string) => Promise<T>): Promise<T>;
  /** Starts the deadline: its length depends on the source's, known once it is probed. */
  armDeadline(durationSeconds: number): void;
  /** Removes the scratch folder now (everything is stored), logging a failure; the end removes it again. */
  removeScratch(): Promise<void>;
}

/** `YYYYMMDD` of the job's start: an attempt's renditions go there, so `recover` finds what it wrote. */
export function attemptDateFolder(deps: Pick<AttemptDeps, 'dateFolder'>, job: JobRecord): string {
  return deps.dateFolder(job.startedAt ?? Date.now());
}

/**
 * Runs one attempt: its scratch folder, the source and the deadline around `work`, then on
 * failure the clean-up and the failure as the queue records it (rethrown), and at the end the
 * scratch folder removed.
 */
export async function runAttempt<D extends string>(deps: AttemptDeps, kind: AttemptKind, start: AttemptStart<D>, work: (a: Attempt<D>) => Promise<void>): Promise<void> {
  const { objects, scratch, options, log } = deps;
  const { ctx, video } = start;
  const videoId = video.id;
  const dateFolder = attemptDateFolder(deps, start.job);
  const deadline = new AbortController();
  let deadlineTimer: NodeJS.Timeout | undefined;
  // Where the source's local file is (ffmpeg's messages name it): cut from failure reasons.
  let sourceDir: string | undefined;
  // This attempt's own scratch folder: another attempt on the video never shares it.
  const name = `${videoId}${kind.tag}.${crypto.randomBytes(4).toString('hex')}`;
  const removeScratch = () => scratch.remove('transcode', name).catch((e) => log(`${kind.label} of ${videoId}: removing its scratch folder failed: ${String(e)}`));
  const release = start.hold?.();
  try {
    const folder = await scratch.fresh('transcode', name);
    const dirs = {} as Record<D, string>;
    for (const d of start.dirs) {
      dirs[d] = path.join(folder, d);
      await fsp.mkdir(dirs[d]);
    }
    const sourceKey = sourceKeyOf(video.sourceFile);
    await work({
      dirs,
      dateFolder,
      signal: AbortSignal.any([ctx.signal, deadline.signal]),
      withSource: (use) =>
        objects
          .withLocalCopy(sourceKey, (source) => {
            sourceDir = path.dirname(source);
            return use(source);
          }, { signal: ctx.signal })
          .catch((err: unknown) => {
            if (err instanceof MediaObjectNotFoundError && err.key === sourceKey) throw new PermanentJobError('the stored source file is missing');
            throw err;
          }),
      armDeadline: (durationSeconds) => {
        const timeoutMs = transcodeTimeoutMs(options, durationSeconds);
        deadlineTimer = setTimeout(() => deadline.abort(new TranscodeTimeout(timeoutMs, durationSeconds)), timeoutMs);
      },
      removeScratch,
    });
  } catch (err) {
    // Unless the job is another node's now (cluster mode): the outputs under the video's names
    // are that node's, and only its own scratch folder is this attempt's to remove.
    if (!(ctx.signal.reason instanceof LeaseLostError)) {
      await removeAttemptOutputs(objects, videoId, dateFolder, start.keep, { unnamed: start.unnamed?.() }).catch((e) => log(`${kind.label} of ${videoId}: clean-up failed: ${String(e)}`));
    }
    throw forPeople(limitFailure(err, deadline.signal, ctx.signal), [scratch.path('transcode', name), ...(sourceDir ? [sourceDir] : []), path.dirname(scratch.root)]);
  } finally {
    release?.();
    clearTimeout(deadlineTimer);
    await removeScratch();
  }
}

/**
 * A job's `recover` for an attempt a crash or a stop cut off, before it runs again: its scratch
 * folders on this node, then what it stored and no row names (removeCutOffOutputs), logged.
 */
export async function recoverAttempt(deps: AttemptDeps, kind: AttemptKind, job: JobRecord): Promise<void> {
  const { videos, objects, scratch, log } = deps;
  const keep = new Set((await videos.renditions(job.videoId)).map((r) => r.file));
  await scratch.removeStartingWith('transcode', `${job.videoId}${kind.tag}.`);
  const removed = await removeCutOffOutputs(objects, job.videoId, attemptDateFolder(deps, job), keep, kind.areas);
  if (removed.length > 0) log(`${kind.label} of ${job.videoId}: removed ${removed.length} output(s) of the attempt cut off: ${removed.join(', ')}`);
}
