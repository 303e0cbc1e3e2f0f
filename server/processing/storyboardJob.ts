/**
 * The storyboard job (docs/watch.md, "Seek previews"): once a video's ladder is whole, its seek
 * previews are made from its smallest rendition (media/storyboard.ts) and kept as a text track of
 * kind `storyboard`: its WebVTT at `text/<videoId>/<id>.vtt`, its sprites at
 * `text/<videoId>/<id>/<n>.jpg`. It yields to first renditions, runs niced, and its ffmpeg pauses
 * with the ladders' while a first rendition is made on this node. A storyboard that cannot be made
 * leaves the video as it is (it plays; the seek bar shows no tiles).
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { VopEventBus } from '../core/events.js';
import { VideoStatus } from '../core/videoStatus.js';
import type { JobTypeDefinition } from '../jobs/jobQueue.js';
import type { FfmpegTools } from '../media/ffmpegTools.js';
import { run } from '../media/ffmpegRunner.js';
import type { PauseGroup } from '../media/pauseGroup.js';
import { spriteCount, SPRITE_COLUMNS, SPRITE_ROWS, storyboardArgs, storyboardPlan, storyboardVtt } from '../media/storyboard.js';
import { mediaKey, type MediaStore } from '../storage/media/mediaStore.js';
import type { Scratch } from '../storage/scratch.js';
import type { VideoStore } from '../storage/types.js';
import { LADDER_NICENESS } from './ladderJob.js';
import type { ProcessingOptions } from './processingOptions.js';
import { runOptions } from './renditionOutputs.js';
import { newTextTrackId, removeTextTrackFiles, storeTextTrack } from './textTracks.js';
import { ffmpegRunContext } from './transcodeAttempt.js';

export interface StoryboardJobDeps {
  videos: Pick<VideoStore, 'get' | 'renditions' | 'textTracks' | 'addTextTrack' | 'removeTextTrack'>;
  objects: MediaStore;
  scratch: Scratch;
  tools: FfmpegTools;
  options: ProcessingOptions;
  events: VopEventBus;
  pidFile: string;
  /** The ladders' group: paused while a first rendition is made on this node. */
  pauseGroup: PauseGroup;
  log: (line: string) => void;
  now?: () => number;
}

export function storyboardJob(deps: StoryboardJobDeps): JobTypeDefinition<'storyboard'> {
  const { videos, objects, scratch, tools, options, log } = deps;
  return {
    concurrency: 1,
    // It needs ffmpeg: a cluster's API nodes leave it to the workers.
    runsOn: 'workers',
    yieldsTo: ['transcode'],
    retry: { maxRetries: 1, baseDelayMs: 5_000, maxDelayMs: 30_000, jitter: true },

    async handle(job, ctx) {
      const { videoId } = job.payload;
      const video = await videos.get(videoId);
      // Gone, or no longer playable: nothing to preview.
      if (!video || video.status !== VideoStatus.Normal) return;
      const smallest = (await videos.renditions(videoId)).filter((r) => r.file.endsWith('.mp4')).sort((a, b) => a.width * a.height - b.width * b.height)[0];
      if (!smallest) return;
      const duration = Math.max(1, video.duration);
      const plan = storyboardPlan(duration, smallest.width, smallest.height);
      const attempt = `${videoId}.${job.id.slice(0, 8)}`;
      const dir = await scratch.fresh('storyboard', attempt);
      try {
        const ffmpeg = await ffmpegRunContext(tools, options, { signal: ctx.signal, pidFile: deps.pidFile, niceness: LADDER_NICENESS, pauseGroup: deps.pauseGroup });
        const [date, name] = smallest.file.split('/');
        await objects.withLocalCopy(
          mediaKey('play', date!, name!),
          (file) => run(storyboardArgs(file, plan, path.join(dir, '%d.jpg')), { ...runOptions(ffmpeg), durationSeconds: duration, onProgress: (p) => ctx.progress({ percent: Math.min(95, p.percent ?? 0) }) }),
          { signal: ctx.signal },
        );
        const sprites = (await fsp.readdir(dir)).filter((f) => /^\d{1,4}\.jpg$/.test(f)).sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
        if (sprites.length === 0) throw new Error('ffmpeg made no storyboard image');
        // Cues only for tiles that were made: ffmpeg may end a tile short of the plan.
        const made = { ...plan, tiles: Math.min(plan.tiles, Math.min(sprites.length, spriteCount(plan)) * SPRITE_COLUMNS * SPRITE_ROWS) };
        const id = newTextTrackId();
        const vtt = storyboardVtt(made, duration, id);
        await ctx.fence();
        let bytes = Buffer.byteLength(vtt);
        for (const s of sprites) {
          bytes += (await fsp.stat(path.join(dir, s))).size;
          await objects.put(mediaKey('text', videoId, id, s), { file: path.join(dir, s), move: true }, { contentType: 'image/jpeg' });
        }
        await storeTextTrack(objects, { videoId, id }, vtt);
        // The storyboard made before (a ladder retried, a transcode again) goes.
        for (const old of (await videos.textTracks(videoId)).filter((t) => t.kind === 'storyboard')) {
          await videos.removeTextTrack(videoId, old.id);
          await removeTextTrackFiles(objects, old);
        }
        const track = { videoId, id, kind: 'storyboard' as const, origin: 'source' as const, language: '', label: 'Storyboard', forced: false, bytes, createdAt: (deps.now ?? Date.now)() };
        if (!(await videos.addTextTrack(track, 1))) {
          await removeTextTrackFiles(objects, track);
          return;
        }
        deps.events.emit('video.textTracks', { videoId, appId: video.appId, ids: (await videos.textTracks(videoId)).map((t) => t.id) });
        log(`Storyboard of ${videoId}: ${made.tiles} tiles every ${plan.interval} s in ${sprites.length} image(s).`);
      } finally {
        await scratch.remove('storyboard', attempt).catch((e) => log(`Storyboard of ${videoId}: removing its scratch folder failed: ${String(e)}`));
      }
    },
  };
}
