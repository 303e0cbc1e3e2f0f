/**
 * The `ladder` job: the rungs a playable video does not have yet, after its first rendition
 * (ladderPlan.ts). It runs while the video is in status 1 and is served, so it adds and never
 * takes away: the new rungs are encoded in one ffmpeg run (the source decoded once), at a lower
 * CPU priority than first renditions (LADDER_NICENESS), stopped outright while a first rendition
 * is made on this node (`pauseGroup`), packaged as HLS beside the variants
 * already there; then stored, the master playlist last, now listing every variant; then the rows
 * name the new files, and `video.renditions` tells the caches and the console.
 *
 * A crash or a stop at any step leaves the video as it was, playable with what its rows list:
 * files not yet listed are nobody's (`recover` removes them), and a master playlist stored just
 * before the crash lists only complete variants. The job runs again from the start.
 */
import type { VopEventBus } from '../core/events.js';
import { PermanentJobError, type JobTypeDefinition } from '../jobs/jobQueue.js';
import type { FfmpegTools } from '../media/ffmpegTools.js';
import type { PauseGroup } from '../media/pauseGroup.js';
import { bitRatesOfPlaylist, cutsOfDurations, MAX_ALIGNED_SEGMENT_SECONDS, parseMasterMedia, parseMasterPlaylist, parseVariantDurations, type MasterMedia, type MasterVariant } from '../media/hls.js';
import { timeList } from '../media/timeList.js';
import { VideoStatus } from '../core/videoStatus.js';
import { mediaKey, readSmallObject, type MediaStore } from '../storage/media/mediaStore.js';
import type { Scratch } from '../storage/scratch.js';
import type { LadderState, VideoRecord, VideoStore } from '../storage/types.js';
import { packageHls } from './hlsPackaging.js';
import { remainingRungs } from './ladderPlan.js';
import { HLS_MASTER } from './mediaNames.js';
import { transcodeOptionsOf, type ProcessingOptions } from './processingOptions.js';
import { transcodeRenditions } from './renditionOutputs.js';
import { recoverAttempt, runAttempt, type AttemptKind } from './runAttempt.js';
import { storeHls, storeRenditions } from './storeOutputs.js';
import { ffmpegRunContext, toRecord, TRANSCODE_SHARE, transcodeProgress } from './transcodeAttempt.js';
import { CANCELLED_REASON } from '../core/jobTypes.js';

/**
 * The niceness of the ladder's ffmpeg runs: a first rendition (the server's own niceness, 0) gets
 * some nine tenths of a core the two share (Linux's weights: 1024 against 110), so a video
 * uploaded while another's ladder encodes still becomes playable at the pace of the machine.
 */
export const LADDER_NICENESS = 10;

/**
 * Its attempts (runAttempt.ts): scratch folders `<videoId>-ladder.<token>`, named apart from the
 * transcode's (whose recover removes `<videoId>.*`); HLS stored besides renditions.
 */
const ATTEMPTS: AttemptKind = { label: 'Ladder', tag: '-ladder', areas: ['hls'] };

export interface LadderJobDeps {
  videos: VideoStore;
  objects: MediaStore;
  scratch: Scratch;
  tools: FfmpegTools;
  options: ProcessingOptions;
  events: VopEventBus;
  /** `YYYYMMDD` of a moment, in the server's zone. */
  dateFolder: (ms: number) => string;
  pidFile: string;
  /** Stops the ladder's ffmpeg while first renditions are made (held by the transcode job); absent: never stopped. */
  pauseGroup?: PauseGroup;
  log: (line: string) => void;
}

export function ladderJob(deps: LadderJobDeps): JobTypeDefinition<'ladder'> {
  const { videos, objects, options, log } = deps;
  const transcode = transcodeOptionsOf(options);
  const told = (video: VideoRecord, ladder: LadderState, labels: string[]) =>
    deps.events.emit('video.renditions', { videoId: video.id, appId: video.appId, ladder, labels });

  return {
    concurrency: options.ladderConcurrency,
    // It needs ffmpeg: a cluster's API nodes leave it to the workers.
    runsOn: 'workers',
    retry: options.retry,
    // First renditions go first: no ladder starts while a video waits to become playable.
    yieldsTo: ['transcode'],

    async handle(job, ctx) {
      const videoId = job.videoId;
      const video = await videos.get(videoId);
      // Gone, being deleted, or nothing to come (a retry after it completed).
      if (!video || video.status !== VideoStatus.Normal || !video.ladder) return;
      const listed = await videos.renditions(videoId);
      const listedLabels = listed.map((r) => r.label);
      if (video.sourceFile === '') {
        // The source went (a needHandleSepcial change, a hand edit): the video keeps what it has.
        await videos.updateMedia(videoId, { ladder: '' });
        told(video, '', listedLabels);
        return;
      }
      const keep = new Set(listed.map((r) => r.file));
      await runAttempt(deps, ATTEMPTS, { job, ctx, video, dirs: ['play', 'hls'], keep }, async (attempt) => {
        const { dirs } = attempt;
        const master = await readMaster(objects, videoId);
        const made = await attempt.withSource(async (source) => {
          const ffmpeg = await ffmpegRunContext(deps.tools, options, { signal: attempt.signal, pidFile: deps.pidFile, niceness: LADDER_NICENESS, ...(deps.pauseGroup ? { pauseGroup: deps.pauseGroup } : {}) });
          // Judged as a file, not as a source: it was taken on once, and the video is served.
          const info = await deps.tools.probe(source, { timeoutMs: options.probeTimeoutMs, source: false });
          if (!info.isVideo) throw new PermanentJobError(`the source is no longer readable as a video: ${info.reason}`);
          const rungs = remainingRungs(info, options.ladder, new Set(listedLabels));
          if (rungs.length === 0) return undefined;
          attempt.armDeadline(info.durationSeconds);
          // HLS only where the first rendition made it (options.hls then), beside its variants:
          // those of the listed renditions only. An attempt cut off after storing its master
          // playlist (before the rows) left one that also lists the rungs made again now.
          const alongside = master?.variants.filter((v) => listedLabels.includes(v.uri.split('/')[0]!));
          // The new rungs get keyframes where the listed variants' segments start, and are cut
          // there: every variant of the master then switches cleanly (media/hls.ts).
          const cuts = alongside && alongside.length > 0 ? await sharedCuts(objects, videoId, alongside[0]!, log) : undefined;
          const job = { videoId, source, info, dateFolder: attempt.dateFolder, outDir: dirs.play, ffmpeg };
          const written = await transcodeRenditions(job, options.ladder, transcode, transcodeProgress(ctx), rungs, cuts ? { at: cuts } : {});
          ctx.progress({ percent: TRANSCODE_SHARE });
          if (alongside && master) {
            const hlsLog = (line: string) => log(`Ladder of ${videoId}: ${line}`);
            // The master's audio tracks and subtitles stay; the new variants play with its audio group.
            const kept = { media: master.media, ...(master.audioRates ? { audioRates: master.audioRates } : {}) };
            await packageHls(written, dirs.hls, ffmpeg, options.hlsSegmentSeconds, cuts ? { ...kept, alongside, cuts, log: hlsLog } : { ...kept, log: hlsLog });
          }
          return { written, hls: master !== undefined };
        });
        await ctx.fence();
        if (made) {
          // Variants, then the master playlist that lists them with the ones there; then the files
          // the rows will name. Nothing is removed: what was listed stays served.
          if (made.hls) await storeHls(objects, videoId, dirs.hls, ctx.signal, { add: true });
          await storeRenditions(objects, made.written, ctx.signal);
          await ctx.fence();
          const all = [...listed, ...made.written.map((w) => toRecord(videoId, w))];
          await videos.setRenditions(videoId, all);
          for (const w of made.written) keep.add(w.file);
        }
        await videos.updateMedia(videoId, { ladder: '' });
        told(video, '', (await videos.renditions(videoId)).map((r) => r.label));
      });
    },

    recover: (job) => recoverAttempt(deps, ATTEMPTS, job),

    async onGiveUp(job, reason) {
      // The video stays playable with what it has; the console shows why, and a retry of the job
      // (or of the video's transcode) makes the rest.
      const video = await videos.get(job.videoId);
      // A video being deleted had its jobs cancelled: nothing of it is playable any more.
      if (!video || video.status !== VideoStatus.Normal || video.ladder !== 'pending') return;
      await videos.updateMedia(job.videoId, { ladder: 'failed' });
      const labels = (await videos.renditions(job.videoId)).map((r) => r.label);
      log(`Ladder of ${job.videoId}: ${reason === CANCELLED_REASON ? 'cancelled' : `failed: ${reason}`}; the video stays playable with ${labels.length} rendition(s).`);
      told(video, 'failed', labels);
    },
  };
}

/** What the ladder keeps of a video's stored master playlist. */
interface StoredMaster {
  variants: MasterVariant[];
  /** Its audio tracks and subtitles. */
  media: MasterMedia[];
  /** The audio group's rates, from its tracks' playlists (the highest of them); absent without a group. */
  audioRates?: { peakBps: number; averageBps: number };
}

/** The video's stored master playlist; undefined when it has none (no HLS). */
async function readMaster(objects: MediaStore, videoId: string): Promise<StoredMaster | undefined> {
  const text = await readText(objects, mediaKey('hls', videoId, HLS_MASTER));
  const variants = text === undefined ? [] : parseMasterPlaylist(text);
  if (text === undefined || variants.length === 0) return undefined;
  const media = parseMasterMedia(text);
  let audioRates: StoredMaster['audioRates'];
  for (const m of media.filter((x) => x.type === 'AUDIO')) {
    const parts = m.uri.split('/');
    const playlist = parts.length === 2 ? await readText(objects, mediaKey('hls', videoId, parts[0]!, parts[1]!)).catch(() => undefined) : undefined;
    const rates = playlist === undefined ? null : bitRatesOfPlaylist(playlist);
    if (rates) audioRates = { peakBps: Math.max(audioRates?.peakBps ?? 0, rates.peakBps), averageBps: Math.max(audioRates?.averageBps ?? 0, rates.averageBps) };
  }
  return { variants, media, ...(audioRates ? { audioRates } : {}) };
}

/**
 * Where the stored `variant`'s segments after the first start (every listed variant shares
 * them); undefined when the new rungs are to be cut at their own keyframes and the listed
 * variants leave the master: their segments are longer than MAX_ALIGNED_SEGMENT_SECONDS (a copied
 * source with keyframes far apart), too many to hand to ffmpeg, or unreadable.
 */
async function sharedCuts(objects: MediaStore, videoId: string, variant: MasterVariant, log: (line: string) => void): Promise<number[] | undefined> {
  const parts = variant.uri.split('/');
  const text = parts.length === 2 ? await readText(objects, mediaKey('hls', videoId, parts[0]!, parts[1]!)).catch(() => undefined) : undefined;
  const durations = text === undefined ? [] : parseVariantDurations(text);
  const longest = Math.max(0, ...durations);
  const cuts = cutsOfDurations(durations);
  if (durations.length > 0 && longest <= MAX_ALIGNED_SEGMENT_SECONDS && timeList(cuts) !== null) return cuts;
  const why = durations.length === 0 ? 'its playlist could not be read' : longest > MAX_ALIGNED_SEGMENT_SECONDS ? `its segments last up to ${longest.toFixed(1)} s (keyframes far apart)` : `it has too many segments (${durations.length}) to cut others alike`;
  log(`Ladder of ${videoId}: the HLS variant ${parts[0]} leaves the master playlist, ${why}; the ladder's variants are cut at their own keyframes.`);
  return undefined;
}

/** The text of a stored object; undefined when there is none. */
async function readText(objects: MediaStore, key: string): Promise<string | undefined> {
  return (await readSmallObject(objects, key))?.toString('utf8');
}
