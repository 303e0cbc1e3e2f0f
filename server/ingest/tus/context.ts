import type { DataStore, Locker } from '@tus/server';
import type { LocalMediaRoot } from '../../storage/media/localMediaRoot.js';
import type { S3MediaStoreOptions } from '../../storage/media/s3Options.js';
import type { IngestService } from '../ingestService.js';
import type { UploadLanding } from '../uploadRoom.js';
import { receiveMeter } from '../receiveMeter.js';
import type { S3TusStorage } from './tusS3Storage.js';
import { FileTusStorage, type StoreHooks, type TusStorage } from './tusStorage.js';
import { tusRefusal } from './protocol.js';

/** What the tus endpoint is built from (see TusUploads). */
export interface TusUploadsDeps {
  ingest: IngestService;
  media: LocalMediaRoot;
  /** Absolute base URL for Location headers; absent: relative Locations. */
  publicUrl?: string;
  /**
   * Cluster mode's object storage: uploads under way live in its bucket (@tus/s3-store), and a
   * finished one is fetched to `scratchDir` for intake. Absent: the media folder (@tus/file-store).
   * `S3TusStorage` is the class, loaded by the caller only then: the embedded default never loads
   * the S3 client (start-up time, memory).
   */
  objectStorage?: { s3: S3MediaStoreOptions; scratchDir: string; S3TusStorage: typeof S3TusStorage };
  /**
   * A lock every node sees (PostgreSQL advisory locks), opened by TusUploads.start and closed by
   * TusUploads.stop. Absent: @tus/server's MemoryLocker, this process only.
   */
  openLocker?: () => Promise<Locker & { close(): Promise<void> }>;
  log: (line: string) => void;
}

/**
 * What every piece of the tus endpoint works on, as tus-node-server's handlers share their
 * BaseHandler's store and options; handed to each piece rather than inherited, so that a piece
 * sees only this and the pieces it is given.
 */
export interface TusContext {
  readonly ingest: IngestService;
  /** Where uploads under way are kept: the media folder, or the bucket in cluster mode. */
  readonly storage: TusStorage;
  /** The DataStore @tus/server writes through (`storage.store`). */
  readonly store: DataStore;
  /** Where a tus upload's bytes land: the bucket with media in object storage, else the media folder. */
  readonly landing: UploadLanding;
  readonly log: (line: string) => void;
}

/**
 * Opens the storage of uploads under way (the bucket with `objectStorage`, else the media folder)
 * with its writes metered into the ingest service, and the context around it. `aroundCreate`
 * wraps the store's creation of an upload (the bucket's one-upload-per-video check).
 */
export function createTusContext(deps: TusUploadsDeps, aroundCreate: StoreHooks['aroundCreate']): TusContext {
  const { ingest } = deps;
  const opts = ingest.options;
  const hooks: StoreHooks = {
    meter: (id, offset) =>
      receiveMeter({
        onBytes: (n) => ingest.room.progress(id, offset + n),
        // The meter's error also reaches @tus/server through its own pipeline, which answers
        // with the status_code and body of what it caught: the refusal is an Error that has them.
        // With the bucket the bytes do not fill this node's disk (one part at a time in the
        // temporary folder): its free space stops nothing, as it refused no creation.
        check: deps.objectStorage
          ? async () => undefined
          : () =>
              ingest.room.checkRoomWhileReceiving().catch((err: unknown) => {
                throw Object.assign(new Error((err as Error).message), tusRefusal(err));
              }),
        everyBytes: opts.spaceCheckIntervalBytes,
      }),
    receiving: (id, delta) => ingest.room.uploads.receiving(id, delta),
    aroundCreate,
  };
  const storage: TusStorage = deps.objectStorage
    ? new deps.objectStorage.S3TusStorage({ s3: deps.objectStorage.s3, scratchDir: deps.objectStorage.scratchDir, expiryMs: opts.uploadExpiryMs }, hooks)
    : new FileTusStorage(deps.media, opts.uploadExpiryMs, hooks);
  return { ingest, storage, store: storage.store, landing: storage.kind === 's3' ? 'bucket' : 'media', log: deps.log };
}
