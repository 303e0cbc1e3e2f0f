/**
 * Helpers of the processing and delivery tests: a source placed the way ingest leaves it (file at
 * `sources/<id>/source`, `sourceFile` set, then the move to 5), small ladders. Waits are in wait.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { VopServer } from '../../server/app.js';
import type { VideoInfo } from '../../server/media/probe.js';
import { probe } from './probe.js';
import type { ProcessingOptionsInput } from '../../server/processing/processingOptions.js';

/** Two small rungs and the fastest preset: real ffmpeg work, in a fraction of a second per clip. */
export const TINY_PROCESSING: ProcessingOptionsInput = {
  preset: 'ultrafast',
  concurrency: 1,
  hlsSegmentSeconds: 1,
  ladder: {
    rungs: [
      { label: '180p', shortSide: 180, videoBitrateKbps: 300 },
      { label: '120p', shortSide: 120, videoBitrateKbps: 200 },
    ],
    audioBitrateKbps: 64,
  },
  retry: { maxRetries: 0 },
};

/** Stores `file` as the video's source, as ingest would, without moving the video. */
export async function storeSource(vop: VopServer, videoId: string, file: string, keepSource = false): Promise<string> {
  const dest = vop.media.path('sources', videoId, 'source');
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.copyFileSync(file, dest);
  await vop.stores.videos.updateMedia(videoId, { sourceFile: `${videoId}/source`, keepSource });
  return dest;
}

/** Stores the source and moves the video to 5 (which queues its transcode). */
export async function placeSource(vop: VopServer, videoId: string, file: string, keepSource = false): Promise<string> {
  const dest = await storeSource(vop, videoId, file, keepSource);
  if (!(await vop.services.lifecycle.move(videoId, 5))) throw new Error(`could not move ${videoId} to 5`);
  return dest;
}

/** ffprobe's view of a file that must be a video. */
export async function probeVideo(file: string): Promise<VideoInfo> {
  const info = await probe(file);
  if (!info.isVideo) throw new Error(`${file}: ${info.reason}`);
  return info;
}

/** Every file under `dir`, relative to it (for "nothing temporary left" checks). */
export function listFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(dir, f)).isFile()).sort();
}
