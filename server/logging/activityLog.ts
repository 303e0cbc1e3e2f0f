/**
 * What an operator reads in the log: one line per event of a video's life on this node, each
 * naming the application (`appId`) and the video (`videoId`). Every event-to-line rule is here,
 * listening on the bus, so that the features emit events and never format log lines.
 */
import { RESULT_CODES } from '../core/errors.js';
import type { VopEventBus, VopEvents } from '../core/events.js';
import { VideoStatus } from '../core/videoStatus.js';
import type { VopLogger } from './logger.js';

export interface ActivityLogDeps {
  /** This node's bus: only what happened here is logged here (each node logs its own). */
  events: VopEventBus;
  logger: VopLogger;
  /** The application of a video, for events that do not carry it (a job's); undefined if gone. */
  appOf(videoId: string): Promise<string | undefined>;
}

/** The settings that let a pull reach a loopback or link-local address, as a refused pull's line names them. */
export const PULL_ALLOW_SETTING = 'ingest.pull.allow (--pull-allow, VOP_PULL_ALLOW), a CIDR such as 127.0.0.1/32 or 10.0.0.0/8';

/**
 * The result code of a pull that the pull policy refused for an address only an `allow` entry
 * opts in (ACCESS_DENIED; ingest/downloadJob.ts): its line names {@link PULL_ALLOW_SETTING}.
 */
export const PULL_ALLOW_REFUSAL_CODE = RESULT_CODES.ACCESS_DENIED.code;

/** Jobs whose start is worth a line, as the operator says it. */
const STARTED: Record<string, string> = { download: 'pull started', transcode: 'transcode started', ladder: 'ladder started' };

/** How many videos' timings are remembered at most (a video that never finishes must not grow this forever). */
const MAX_REMEMBERED = 10_000;

/** Jobs whose duration a later line gives: the transcode's on the first playable line, the ladder's on its end. */
const TIMED = new Set(['transcode', 'ladder']);

/** Starts logging the bus's events; returns the function that stops it. */
export function listenActivity(deps: ActivityLogDeps): () => void {
  const { events, logger } = deps;
  // When each video's file arrived, became playable, and its current job started: for the durations.
  const arrived = new Bounded<number>();
  const playable = new Bounded<number>();
  const jobStarted = new Bounded<number>();

  const withApp = (videoId: string, line: (appId: string) => void) => {
    deps.appOf(videoId).then(
      (appId) => line(appId ?? ''),
      () => line(''),
    );
  };

  const onRegistered = (e: VopEvents['video.registered'][0]) => logger.debug({ appId: e.appId, videoId: e.videoId, sourceType: e.sourceType }, 'video registered');

  const onReceived = (e: VopEvents['upload.received'][0]) => {
    logger.info({ appId: e.appId, videoId: e.videoId, via: e.via, bytes: e.bytes, durationMs: e.durationMs }, 'upload received');
  };

  const onRefused = (e: VopEvents['upload.refused'][0]) => {
    const fields = { appId: e.appId, videoId: e.videoId, via: e.via, code: e.code, reason: withoutQueries(e.reason) };
    if (e.via === 'pull' && e.code === PULL_ALLOW_REFUSAL_CODE) logger.warn({ ...fields, setting: PULL_ALLOW_SETTING }, 'pull refused');
    else if (e.via === 'pull') logger.error(fields, 'pull failed');
    else logger.warn(fields, 'upload refused');
  };

  const onCut = (e: VopEvents['upload.cut'][0]) => logger.info({ appId: e.appId, videoId: e.videoId, via: e.via, durationMs: e.durationMs }, 'upload cut off by its client');

  const onStatus = (e: VopEvents['video.status'][0]) => {
    if (e.to === VideoStatus.WaitingForTranscoding) arrived.set(e.videoId, e.at);
    if (e.to === VideoStatus.Normal && e.from !== VideoStatus.Normal) {
      const since = arrived.take(e.videoId);
      const started = jobStarted.take(e.videoId);
      playable.set(e.videoId, e.at);
      logger.info(
        { appId: e.appId, videoId: e.videoId, sinceArrivalMs: since === undefined ? undefined : e.at - since, transcodeMs: started === undefined ? undefined : e.at - started },
        'first playable',
      );
    }
    // A file that was not a video (from 8, 7 after an earlier one, or 3 for a pull) is the upload's refusal, logged as such.
    if (e.to === VideoStatus.TranscodingFailed && e.from !== VideoStatus.NotUploaded && e.from !== VideoStatus.Downloading && e.from !== VideoStatus.TranscodingFailed) {
      arrived.take(e.videoId);
      jobStarted.take(e.videoId);
      logger.error({ appId: e.appId, videoId: e.videoId, from: e.from, reason: withoutQueries(e.reason) }, 'transcode failed');
    }
  };

  const onRenditions = (e: VopEvents['video.renditions'][0]) => {
    if (e.ladder === 'pending') return;
    const now = Date.now();
    const started = jobStarted.take(e.videoId);
    const since = playable.take(e.videoId);
    const fields = { appId: e.appId, videoId: e.videoId, renditions: e.labels.join(','), ladderMs: started === undefined ? undefined : now - started, sincePlayableMs: since === undefined ? undefined : now - since };
    if (e.ladder === '') logger.info(fields, 'ladder done');
    else logger.warn(fields, 'ladder failed; the video stays playable');
  };

  const onJob = (e: VopEvents['job.state'][0]) => {
    const started = STARTED[e.type];
    if (!started || e.videoId === '') return;
    if (e.state === 'running') {
      if (TIMED.has(e.type)) jobStarted.set(e.videoId, Date.now());
      withApp(e.videoId, (appId) => logger.info({ appId, videoId: e.videoId, jobId: e.jobId }, started));
    } else if (e.state === 'queued' && e.error !== '') {
      // An attempt failed and the queue tries again: worth a warning, not yet a failure.
      withApp(e.videoId, (appId) => logger.warn({ appId, videoId: e.videoId, jobId: e.jobId, job: e.type, error: withoutQueries(e.error) }, 'attempt failed; tried again'));
    }
  };

  const onCallback = (e: VopEvents['callback.attempt'][0]) => {
    const fields = { appId: e.appId, videoId: e.videoId, deliveryId: e.deliveryId, status: e.status, httpStatus: e.httpStatus, durationMs: e.durationMs };
    if (e.outcome === 'delivered') logger.info(fields, 'callback delivered');
    else if (e.outcome === 'failed') logger.warn({ ...fields, error: withoutQueries(e.error) }, 'callback failed; tried again');
    else logger.error({ ...fields, error: withoutQueries(e.error) }, 'callback given up');
  };

  // Each event with its line; attached now, detached by the function returned.
  const listeners = [
    ['video.registered', onRegistered],
    ['upload.received', onReceived],
    ['upload.refused', onRefused],
    ['upload.cut', onCut],
    ['video.status', onStatus],
    ['video.renditions', onRenditions],
    ['job.state', onJob],
    ['callback.attempt', onCallback],
  ] as const;
  type Listener = (...args: unknown[]) => void;
  for (const [name, fn] of listeners) events.on(name, fn as Listener);
  return () => {
    for (const [name, fn] of listeners) events.off(name, fn as Listener);
  };
}

/**
 * A reason for people may quote an address (a callback's redirect, a source's URL); its query
 * string is where credentials travel (`?token=…`), so it is left out of the log.
 */
export function withoutQueries(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s?#"']*)[?#][^\s"']*/gi, '$1?…');
}

/** A map of at most {@link MAX_REMEMBERED} entries, the oldest dropped first. */
class Bounded<V> {
  private readonly map = new Map<string, V>();

  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > MAX_REMEMBERED) this.map.delete(this.map.keys().next().value!);
  }

  take(key: string): V | undefined {
    const v = this.map.get(key);
    this.map.delete(key);
    return v;
  }
}
