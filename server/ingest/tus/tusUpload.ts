import fs from 'node:fs';
import { Server, type DataStore } from '@tus/server';
import type { RequestHandler } from 'express';
import type { S3TusStorage } from './tusS3Storage.js';
import { listUploadIdsIn, TUS_FOLDER, type TusStorage } from './tusStorage.js';
import { TusAuthorization } from './authorization.js';
import { createTusContext, type TusUploadsDeps } from './context.js';
import { TusFinishing } from './finishing.js';
import { TusLocks } from './locks.js';
import { CREDENTIAL_HEADER, TUS_EXPOSED_HEADERS, TUS_PATH } from './protocol.js';
import { tusRequestHandler } from './requestAdapter.js';
import { TusSweeps } from './sweeps.js';
import { VideoMarks } from './videoMarks.js';

export { CREDENTIAL_HEADER, TUS_PATH, VIDEO_STATUS_HEADER } from './protocol.js';
export type { TusUploadsDeps } from './context.js';

/**
 * tus 1.0 (core, creation, creation-with-upload, termination, expiration) on @tus/server with
 * its FileStore under the media store's `incoming/tus`, or in cluster mode its S3Store in the
 * media bucket with a lock every node sees, so that an upload begun on one API node resumes on
 * another. Each request is authorised for the upload's own video (tus/authorization.ts); the
 * finished file goes through SourceIntake.accept (tus/finishing.ts).
 *
 * This class only puts the pieces in `tus/` together around @tus/server's Server, as
 * tus-node-server puts its handlers together: each piece gets the shared context (tus/context.ts) and
 * the pieces it uses.
 */
export class TusUploads {
  readonly server: Server;
  /** Where uploads under way are kept: the media folder, or the bucket in cluster mode. */
  readonly storage: TusStorage;
  readonly store: DataStore;
  /** The embedded mode's folder of uploads under way (empty with object storage). */
  readonly directory: string;
  /**
   * The Express handler for `/upload/tus{/*rest}`. It must be mounted before any body parser:
   * @tus/server reads the request stream itself.
   */
  readonly handler: RequestHandler;
  private readonly locks: TusLocks;
  private readonly sweeps: TusSweeps;

  constructor(deps: TusUploadsDeps) {
    const opts = deps.ingest.options;
    this.directory = deps.media.path(...TUS_FOLDER);
    fs.mkdirSync(this.directory, { recursive: true });
    // The store's aroundCreate and the Server's onUploadFinish call pieces made further down
    // (marks, finishing): those take the locks, which live in the Server's options, and the
    // Server needs the store. Both hooks run per request, so only after this constructor.
    let marks: VideoMarks | undefined;
    const ctx = createTusContext(deps, deps.objectStorage ? (upload, create) => marks!.createAlone(upload, create) : undefined);
    this.storage = ctx.storage;
    this.store = ctx.store;
    // Deferred length would let an upload start before its size is checked against its
    // uploadType and the free space: without the extension, such a POST gets 501.
    this.store.extensions = this.store.extensions.filter((e) => e !== 'creation-defer-length');
    const authorization = new TusAuthorization(ctx);
    let finishing: TusFinishing | undefined;
    this.server = new Server({
      path: TUS_PATH,
      datastore: this.store,
      // Read at each upload: the console changes the limits without a restart.
      maxSize: () => Math.max(opts.maxUploadBytes.flash, opts.maxUploadBytes.silverlight),
      relativeLocation: deps.publicUrl === undefined,
      generateUrl: deps.publicUrl === undefined ? undefined : (_req, { id }) => `${deps.publicUrl}${TUS_PATH}/${id}`,
      allowedHeaders: [CREDENTIAL_HEADER],
      // TUS_CORS_HEADERS follow these (and allowedOrigins and allowedCredentials, unset).
      exposedHeaders: TUS_EXPOSED_HEADERS,
      disableTerminationForFinishedUploads: true,
      onIncomingRequest: (req, id) => authorization.existing(req, id),
      onUploadCreate: (req, upload) => authorization.creation(req, upload),
      onUploadFinish: (_req, upload) => finishing!.finish(upload),
    });
    // Termination (DELETE): the upload's reservation goes with its bytes, before the 204 (release
    // never rejects). Released on POST_TERMINATE, which is emitted as the answer goes out, it
    // raced a creation that followed the 204 through another node: that one still found the room
    // taken (seen once in a whole run of test/ingest/cluster-upload-reservations.test.ts).
    const remove = this.store.remove.bind(this.store);
    this.store.remove = async (id) => {
      await remove(id);
      await deps.ingest.room.release(id);
    };
    this.locks = new TusLocks(this.server.options, deps.openLocker);
    if (deps.objectStorage) marks = new VideoMarks(ctx, this.storage as S3TusStorage, this.locks);
    finishing = new TusFinishing(ctx, this.locks, marks);
    this.sweeps = new TusSweeps(ctx, finishing);
    this.handler = tusRequestHandler(this.server);
  }

  /**
   * Opens the cluster's lock (if any), then removes expired uploads now and every
   * `expirySweepMs` from now on.
   */
  async start(): Promise<void> {
    await this.locks.open();
    await this.sweeps.start();
  }

  /** Stops the sweep, and closes the cluster's lock (once no request is in flight). */
  async stop(): Promise<void> {
    this.sweeps.stop();
    await this.locks.close();
  }

  /** One sweep now (see TusSweeps.sweep); resolves with how many uploads were removed. */
  sweepExpired(settleMs = 0): Promise<number> {
    return this.sweeps.sweep(settleMs);
  }

  /**
   * The ids of the uploads in the embedded mode's folder ({@link listUploadIdsIn}: checked, safe
   * to join to `directory`). The console's upload monitor reads these; with object storage the
   * folder stays empty.
   */
  listUploadIds(): Promise<string[]> {
    return listUploadIdsIn(this.directory);
  }
}
