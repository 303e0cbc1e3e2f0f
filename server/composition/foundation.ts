/**
 * What every feature stands on: the media (on local disk, or in object storage), the database
 * (sql.js, or PostgreSQL), the events (relayed between a cluster's nodes) and the operator's
 * activity log. Each is added to the parts as it opens, so that a failure further on closes it.
 */
import type { ServerOptions } from '../config.js';
import { VopEventBus } from '../core/events.js';
import { listenActivity } from '../logging/activityLog.js';
import { LocalMediaRoot } from '../storage/media/localMediaRoot.js';
import { LocalObjectMediaStore } from '../storage/media/localObjectMediaStore.js';
import type { MediaStore } from '../storage/media/mediaStore.js';
import { VideoMedia } from '../storage/media/videoMedia.js';
import { openStores } from '../storage/openStores.js';
import { Scratch } from '../storage/scratch.js';
import type { Stores } from '../storage/types.js';
import type { Parts } from './parts.js';

export interface Foundation {
  stores: Stores;
  events: VopEventBus;
  /** The data directory's media folder (uploads under way, scratch, the embedded mode's objects). */
  media: LocalMediaRoot;
  /** Media as objects, on local disk or S3: what every feature reads and writes through. */
  objects: MediaStore;
  videoMedia: VideoMedia;
}

export async function openFoundation(options: ServerOptions, parts: Parts): Promise<Foundation> {
  const { log } = options;
  const scratch = new Scratch(options.dataDir);
  // Media in object storage when it is configured (waiting, bounded and logged, for the endpoint,
  // and creating the bucket); on local disk under the data directory otherwise. Before
  // the database, so a failure here leaves nothing open.
  // Loaded only then, as PostgreSQL's client is: the embedded default never loads the S3 client.
  const s3 = options.objectStorage
    ? await (await import('../storage/media/s3MediaStore.js')).openS3MediaStore({ ...options.objectStorage, scratchDir: scratch.kindPath('s3'), log })
    : undefined;
  parts.add(s3 && { name: 'object storage', stop: () => s3.close() });
  const stores = await openStores({
    dataDir: options.dataDir,
    databaseUrl: options.databaseUrl,
    databaseConnectRetry: options.databaseConnectRetry,
    databaseMaxConnections: options.databaseMaxConnections,
    log,
  });
  parts.add({ name: 'the database', stop: () => stores.close() });
  // What a crash left in this node's working space goes before anything works there again (the
  // embedded database's data-dir lock, taken just now, keeps a second process out; nodes of a
  // cluster each have their own data dir).
  scratch.clearAll();
  const events = new VopEventBus();
  // The operator's lines, from this node's own events (each node of a cluster logs what it did).
  if (options.operatorLog) {
    const unsubscribe = listenActivity({ events, logger: options.operatorLog.logger, appOf: async (videoId) => (await stores.videos.get(videoId))?.appId });
    parts.add({ name: 'the activity log', stop: unsubscribe });
  }
  // Cluster mode: every node's events reach this one's console streams and caches (events.everywhere).
  if (options.databaseUrl) {
    const relay = new (await import('../storage/postgres/eventRelay.js')).PostgresEventRelay(options.databaseUrl, events, log);
    parts.add({ name: 'the event relay', stop: () => relay.close() });
    await relay.start();
    // Applications are read on every API call: this node keeps copies, dropped as the relay hears of changes.
    stores.followChanges(relay);
  }
  const media = new LocalMediaRoot(options.dataDir);
  if (s3) log(`Media in object storage: ${options.objectStorage!.endpoint}, bucket ${options.objectStorage!.bucket}.`);
  const objects: MediaStore = s3 ?? new LocalObjectMediaStore(media);
  return { stores, events, media, objects, videoMedia: new VideoMedia(objects, media) };
}
