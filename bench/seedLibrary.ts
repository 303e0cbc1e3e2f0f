/**
 * Fills a data directory with a large library quickly: through the store layer directly, while no
 * server has it open (the data-dir lock would refuse a second opener anyway). Registering 100,000
 * videos over HTTP would take minutes and measure nothing the registration figure does not.
 */
import crypto from 'node:crypto';
import { createServer } from '../server/app.js';
import { progress } from './lib.js';
import { AppService } from '../server/services/appService.js';
import { VideoStatus } from '../server/core/videoStatus.js';
import { openSqlJsStores } from '../server/storage/sqljs/openSqlJsStores.js';
import type { RenditionRecord, VideoRecord } from '../server/storage/types.js';

/** What the benchmarks need to know about a seeded library. */
export interface SeededLibrary {
  appId: string;
  secret: string;
  /** Ids of the seeded videos, for detail calls. */
  videoIds: string[];
}

/** Options of {@link seedLibrary}. */
export interface SeedOptions {
  /** The data directory; must not be open by a server. */
  dir: string;
  /** How many videos to insert. */
  count: number;
  /** Inserts in flight at once: they share the journal's fsyncs (group commit). */
  concurrency?: number;
  /**
   * Give every published video the renditions a transcode leaves (a 720p and a 360p file), as a
   * library vop grew itself has: a detail call reads them. Default false (the api bench's library).
   */
  renditions?: boolean;
}

const WORDS = ['river', 'lecture', 'match', 'recipe', 'interview', 'concert', 'trailer', 'lesson', 'review', 'tour', 'summit', 'garden'];
const USERS = 2_000;

/**
 * Creates one application (as the admin API would) and `count` videos of that application,
 * newest last, with fields of realistic length and a mix of statuses.
 */
export async function seedLibrary(opts: SeedOptions): Promise<SeededLibrary> {
  const stores = await openSqlJsStores({ dir: opts.dir });
  try {
    const app = await new AppService(stores.apps).create({ name: 'bench application' });
    const videoIds: string[] = [];
    const concurrency = opts.concurrency ?? 2_000;
    const now = Date.now();
    // A year of registrations, evenly spaced, ending a few minutes ago.
    const step = Math.max(1, Math.floor((365 * 86_400_000) / opts.count));
    let inFlight: Array<Promise<void>> = [];
    for (let i = 0; i < opts.count; i++) {
      const video = sampleVideo(app.appId, i, now - 600_000 - (opts.count - i) * step);
      videoIds.push(video.id);
      const renditions = opts.renditions && video.status === VideoStatus.Normal ? sampleRenditions(video) : [];
      inFlight.push(stores.videos.insert(video).then(() => (renditions.length > 0 ? stores.videos.setRenditions(video.id, renditions) : undefined)));
      if (inFlight.length >= concurrency) {
        await Promise.all(inFlight);
        inFlight = [];
      }
    }
    await Promise.all(inFlight);
    await stores.close();
    await settle(opts.dir, opts.count);
    return { appId: app.appId, secret: app.appSecret, videoIds };
  } finally {
    await stores.close(); // a second close does nothing
  }
}

/**
 * Runs vop once over the seeded library, until its start-up catch-up is done, and stops it. The
 * store layer writes videos and their status history but not what vop's services add as videos
 * reach an end state: a status delivery each (spec section 6; 'skipped' here, as the application
 * has no callback address). A library vop grew itself has them, so the measured runs must not
 * spend their first minute creating 85,000 of them (the one-off catch-up of a library from before
 * status callbacks existed, which callbackService.ts covers).
 */
async function settle(dir: string, count: number): Promise<void> {
  const vop = await createServer({ dataDir: dir, adminToken: 'bench-seed-admin-token-0123456789', log: (line) => progress(`seeding: ${line}`) });
  try {
    await vop.listen(0, '127.0.0.1');
    const { created } = await vop.services.callbacks.startCatchUp();
    // Every finished video gets one (startCatchUp logs a failure rather than throwing).
    if (count > 0 && created === 0) throw new Error('seeding: the status deliveries of the seeded library were not created');
  } finally {
    await vop.close();
  }
}

function sampleVideo(appId: string, i: number, createdAt: number): VideoRecord {
  const w = (k: number) => WORDS[(i * 7 + k * 5) % WORDS.length]!;
  // Most of a mature library is published; the rest is somewhere in the pipeline or failed.
  const roll = i % 20;
  const status = roll < 16 ? VideoStatus.Normal : roll < 18 ? VideoStatus.NotUploaded : roll === 18 ? VideoStatus.Transcoding : VideoStatus.DownloadFailed;
  const id = crypto.randomUUID();
  return {
    id,
    appId,
    title: `${w(0)} ${w(1)} ${w(2)} #${i}`,
    description: `A ${w(3)} about ${w(4)} and ${w(5)}, recorded for the archive. `.repeat(3).trim(),
    tags: `${w(0)},${w(1)},${w(6)}`,
    actors: `Speaker ${i % 500}`,
    createUser: `user-${i % USERS}`,
    status,
    statusReason: status === VideoStatus.DownloadFailed ? 'HTTP 404 from the source' : '',
    sourceType: status === VideoStatus.DownloadFailed ? 2 : 1,
    sourceUrl: status === VideoStatus.DownloadFailed ? `https://media.example.com/in/${i}.mp4` : '',
    duration: status === VideoStatus.Normal ? 30 + ((i * 37) % 3600) : 0,
    coverFile: status === VideoStatus.Normal ? `cover/${id}.jpg` : '',
    sourceFile: status === VideoStatus.Normal ? `sources/${id}.mp4` : '',
    keepSource: false,
    createdAt,
    updatedAt: createdAt,
  };
}

/** The two files a 640×360 or larger upload is transcoded to, sized for the video's duration. */
function sampleRenditions(video: VideoRecord): RenditionRecord[] {
  const day = new Date(video.createdAt).toISOString().slice(0, 10).replaceAll('-', '');
  const rung = (label: string, width: number, height: number, bitrateKbps: number): RenditionRecord => ({
    videoId: video.id,
    label,
    width,
    height,
    bitrateKbps,
    file: `${day}/${video.id}_${label}.mp4`,
    bytes: Math.round((video.duration * bitrateKbps * 1000) / 8),
  });
  return [rung('720p', 1280, 720, 2500), rung('360p', 640, 360, 800)];
}
