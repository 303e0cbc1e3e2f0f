import type { Readable } from 'node:stream';
import type { CallbackStore } from './callbackRecords.js';
import type { JobStore } from './jobRecords.js';

/**
 * The narrow storage interfaces routes and services see. The sql.js implementation is opened by
 * sqljs/openSqlJsStores.ts, the PostgreSQL one by postgres/openPostgresStores.ts; both pass the one contract
 * suite of each interface, test/contracts/ (docs/testing.md, "Store contracts"). Every method is
 * async so that an implementation over the network fits the same shape.
 */

/** An application registered with the platform (spec section 5). */
/** AppRecord.mediaTtlSeconds when none was set. */
export const DEFAULT_MEDIA_TTL_SECONDS = 3600;

/** Who may fetch an application's media (AppRecord.mediaAccess). */
export type MediaAccess = 'public' | 'signed';

/** The fields of an application its store's update may change. */
export type AppPatchFields = Partial<Pick<AppRecord, 'name' | 'secret' | 'callbackUrl' | 'disabled' | 'apiNetworks' | 'wholeLadderFirst' | 'mediaAccess' | 'mediaTtlSeconds'>>;

export interface AppRecord {
  appId: string;
  name: string;
  /** Kept in clear: the token is MD5(Timestamp + secret), so the server must know the secret. */
  secret: string;
  /** Where status callbacks go (spec section 6); empty for none. */
  callbackUrl: string;
  disabled: boolean;
  /**
   * The networks (CIDRs, as auth/apiNetworks.ts writes them) its spec API calls may come
   * from; empty for any address.
   */
  apiNetworks: string[];
  /**
   * Its videos become playable only once every rung is made (one ffmpeg run, as before the first
   * rendition came first); false: with their first rendition, the rest after
   * (processing/ladderPlan.ts). Absent: false.
   */
  wholeLadderFirst?: boolean;
  /**
   * Who may fetch its videos' media: 'public', anyone with an address; 'signed', only addresses
   * that carry a token of {@link mediaTtlSeconds} (services/mediaAccess.ts). Absent: 'public'.
   */
  mediaAccess?: MediaAccess;
  /** How long a signed address it is given stays good, in seconds. Absent: 3600. */
  mediaTtlSeconds?: number;
  /** Unix milliseconds. */
  createdAt: number;
  updatedAt: number;
}

/** Where the rest of a video's ladder stands (VideoRecord.ladder). */
export type LadderState = '' | 'pending' | 'failed';

/** A video as stored; the API's field names are applied by videos/videoView.ts. */
export interface VideoRecord {
  id: string;
  appId: string;
  title: string;
  description: string;
  tags: string;
  actors: string;
  createUser: string;
  /** A value of spec section 3; see core/videoStatus.ts. */
  status: number;
  /** Why the video is in a failed state (4, 7), for people; empty otherwise. */
  statusReason: string;
  /** SourceFileGetType: 1 widget upload, 2 download from sourceUrl. */
  sourceType: number;
  sourceUrl: string;
  /** Whole seconds; 0 until known. */
  duration: number;
  /** Cover picture, relative to the media root; empty until one exists. */
  coverFile: string;
  /** The stored source file, relative to the media root's `sources` area; empty until stored. */
  sourceFile: string;
  /**
   * The rest of the ladder after the first rendition (processing/ladderJob.ts): 'pending' while
   * rungs are still to come (the video is already playable), 'failed' when its job gave up (the
   * video stays playable with what it has); '' (or absent) when nothing is to come.
   */
  ladder?: LadderState;
  /** needHandleSepcial: keep the source as the only rendition, without re-encoding. */
  keepSource: boolean;
  /** Unix milliseconds. */
  createdAt: number;
  updatedAt: number;
}

/** One playable file of a video (spec 2.5). */
export interface RenditionRecord {
  videoId: string;
  /** BitrateLabel, e.g. "720p". */
  label: string;
  width: number;
  height: number;
  /** Bitrate in kbps (video plus audio). */
  bitrateKbps: number;
  /** VideoURL: `<date_folder>/<file_name>`, relative to the media root's `play` area. */
  file: string;
  bytes: number;
}

/**
 * One text track of a video (beyond the spec; processing/textTracks.ts): captions in one
 * language, or its chapters. The WebVTT file is `text/<videoId>/<id>.vtt` in the media store.
 */
export interface TextTrackRecord {
  videoId: string;
  /** Short and random (`[0-9a-f]{8}`), unique within the video; names its files. */
  id: string;
  /** `storyboard`: its seek previews (processing/storyboardJob.ts), sprites beside the WebVTT file. */
  kind: 'captions' | 'chapters' | 'storyboard';
  /** Where it came from: the source's subtitle stream or chapters, or the application's call. */
  origin: 'source' | 'api';
  /** BCP-47, canonical ("en", "pt-BR"); '' when the source did not say. */
  language: string;
  /** What a player's menu shows. */
  label: string;
  /** The source marks it forced: shown whatever the viewer chose. */
  forced: boolean;
  /** Size of its WebVTT file. */
  bytes: number;
  /** Unix ms. */
  createdAt: number;
}

/** One change of a video's Status. */
export interface StatusChange {
  at: number;
  from: number | null;
  to: number;
  reason: string;
}

export interface Page {
  offset: number;
  limit: number;
}

/** The console's search of videos (admin API); every given filter must match. */
export interface VideoSearch {
  /**
   * Text that the title, the uploader (createUser), the tags or the description contains, any of
   * them (case-insensitive for ASCII letters; `%`, `_` and `\` are matched as themselves). The
   * admin API bounds its length; a search reads every row it matches, no index helps a contains.
   */
  text?: string;
  /** Any of these statuses. */
  statuses?: number[];
  /** The uploader, exactly (spec 4.2 createUser). */
  createUser?: string;
  appId?: string;
}

export interface AppStore {
  insert(app: AppRecord): Promise<void>;
  get(appId: string): Promise<AppRecord | undefined>;
  list(): Promise<AppRecord[]>;
  /** Applies the given fields; resolves with the updated record, or undefined if none. */
  update(appId: string, patch: AppPatchFields, now: number): Promise<AppRecord | undefined>;
  /** Replaces the set of applications whose lists `appId` may read. */
  setGrants(appId: string, targetAppIds: string[]): Promise<void>;
  grants(appId: string): Promise<string[]>;
}

export interface VideoStore {
  insert(video: VideoRecord): Promise<void>;
  get(id: string): Promise<VideoRecord | undefined>;
  /**
   * A video and its renditions (highest bitrate first) as they were at one moment: the detail
   * call's read, one round trip where the database is across the network.
   */
  getWithRenditions(id: string): Promise<{ video: VideoRecord; renditions: RenditionRecord[] } | undefined>;
  /**
   * Newest first (createdAt, then id), with the count of every match. The result is read-only:
   * an implementation may hand the same object to every caller until one of the application's
   * videos is written (the sql.js store does, and freezes it).
   */
  listByApp(appId: string, page: Page): Promise<{ total: number; items: VideoRecord[] }>;
  /** As listByApp, the videos of one uploader. */
  listByAppAndUser(appId: string, createUser: string, page: Page): Promise<{ total: number; items: VideoRecord[] }>;
  /**
   * Moves a video to `to` if its status is one of `from` (any, if omitted). Resolves true if it
   * moved. The check and the move are one step, so two racing transitions cannot both win.
   */
  setStatus(id: string, to: number, opts?: { from?: number[]; reason?: string; now?: number }): Promise<boolean>;
  /** Status changes of a video, oldest first (each setStatus that moved it adds one). */
  statusHistory(id: string): Promise<StatusChange[]>;
  /**
   * Records `sourceFile` as the video's source if it has none yet, in one step: resolves false if
   * another file got there first. The claim of a file that every node sees (cluster mode: two
   * uploads of one video to two nodes), as the hard link into `sources/` is on one node's disk.
   */
  claimSource(id: string, sourceFile: string): Promise<boolean>;
  /** Undoes {@link claimSource}: the source is cleared if it is still `sourceFile`. */
  releaseSource(id: string, sourceFile: string): Promise<void>;
  /** Sets media facts found by ingest and processing. */
  updateMedia(id: string, patch: Partial<Pick<VideoRecord, 'sourceFile' | 'keepSource' | 'duration' | 'coverFile' | 'ladder'>>): Promise<void>;
  /** Replaces a video's renditions. */
  setRenditions(videoId: string, renditions: RenditionRecord[]): Promise<void>;
  /** A video's renditions, highest bitrate first (spec 4.1 VideoPlayFile order). */
  renditions(videoId: string): Promise<RenditionRecord[]>;
  /** A video's text tracks, oldest first (createdAt, then id). */
  textTracks(videoId: string): Promise<TextTrackRecord[]>;
  /**
   * Adds a text track if the video has fewer than `limit` of its kind; resolves false, having
   * added nothing, otherwise.
   */
  addTextTrack(track: TextTrackRecord, limit: number): Promise<boolean>;
  /** Removes a text track; resolves with it, or undefined when the video has none of that id. */
  removeTextTrack(videoId: string, id: string): Promise<TextTrackRecord | undefined>;
  /** Replaces the video's text tracks that came from its source (a transcode found them anew). */
  setSourceTextTracks(videoId: string, tracks: TextTrackRecord[]): Promise<void>;
  /** Counts per status, for /healthz and the console. */
  countByStatus(): Promise<Record<number, number>>;
  /** Ids of the videos in one of `statuses` (start-up finds the transcodes a crash left waiting). */
  idsByStatus(statuses: number[]): Promise<string[]>;
  /** Ids of the videos whose ladder is in `state` (start-up finds the ladders a crash left unqueued). */
  idsByLadder(state: Exclude<LadderState, ''>): Promise<string[]>;
  /**
   * The `limit` oldest videos in `status` (createdAt, then id), and how many are in it: the sweep
   * of registrations never uploaded reads the ones due and the console the next one to expire.
   */
  oldestInStatus(status: number, limit: number): Promise<{ total: number; items: VideoRecord[] }>;
  /** The console's search: newest first (createdAt, then id), with the count of every match. */
  search(filter: VideoSearch, page: Page): Promise<{ total: number; items: VideoRecord[] }>;
}

/**
 * Counts of events in fixed windows, `windowMs` long: the registration rate and the failure
 * limits. In cluster mode every node sharing the database sees them (issue 11, item 5; issue 12),
 * so the limits hold across nodes, not per process; there the windows are counted from the epoch
 * (postgres/postgresCounters.ts). The embedded mode's one process counts in memory, a key's window
 * beginning at its first hit (memory/memoryWindowCounters.ts says why). Callers rely only on what
 * both give: hits within one window add up, and a window ends `windowMs` after it began. Keys are
 * made from values the caller checked (an AppId that exists, an address), never raw request text.
 */
export interface WindowCounters {
  /** Adds one to `key` in the window `now` falls in; resolves with the count after it. */
  hit(key: string, windowMs: number, now?: number): Promise<number>;
  /** The count of `key` in the window `now` falls in. */
  count(key: string, windowMs: number, now?: number): Promise<number>;
  /** When the window of `key` that `now` falls in ends (Unix ms): a refused caller is told to wait until then. */
  windowEnd(key: string, windowMs: number, now?: number): Promise<number>;
}

/**
 * The addresses an application's API calls came from lately (auth/apiNetworks.ts), kept where
 * every node sees them in cluster mode, so that the console suggests the API networks from every
 * node's callers, not only from those of the node it is attached to. At most
 * {@link API_CALLERS_PER_APP} per application, newest first.
 */
export interface ApiCallerStore {
  /**
   * Records a call from `address` (as shown: IPv4-mapped IPv6 written as IPv4) at `at`. A store
   * whose writes cost a round trip may skip the record of a caller it wrote less than a minute
   * before with the same verdict (PostgreSQL does): its `lastSeen` is then that much behind.
   */
  record(appId: string, address: string, allowed: boolean, at: number): Promise<void>;
  /** The application's latest callers, newest first. */
  recent(appId: string): Promise<Array<{ address: string; lastSeen: number; allowed: boolean }>>;
}

/** How many recent callers are kept per application. */
export const API_CALLERS_PER_APP = 8;

/**
 * The console's login sessions (console/consoleSessions.ts), kept where every node sees them in
 * cluster mode: logging in through one node and out through another must work. Sessions are
 * named by the SHA-256 of their id (hex), never the id itself, so that whoever reads the table
 * cannot log in with what it holds. Times are Unix ms of the calling node's clock.
 */
export interface ConsoleSessionStore {
  /**
   * Stores a session expiring at `expiresAt`, then keeps at most `maxSessions` live ones in all:
   * sessions expired at `now` are removed, then those closest to expiry.
   */
  add(idHash: string, expiresAt: number, maxSessions: number, now: number): Promise<void>;
  /** The expiry of the session, if it exists and has not expired at `now`. */
  expiryOf(idHash: string, now: number): Promise<number | undefined>;
  /** Ends the session (for every node); nothing if there is none. */
  remove(idHash: string): Promise<void>;
}

/** The console's saved settings as the nodes of a cluster share them: one JSON object and its version. */
export interface SharedSettingsDocument {
  /** The settings saved from the console (only those ever changed), as a JSON object. */
  settings: Record<string, unknown>;
  /** 0 while nothing was ever saved; each save adds one. */
  version: number;
  /** When it was last saved (Unix ms of the saving node's clock); 0 if never. */
  updatedAt: number;
}

/**
 * The console's saved settings. In a cluster, PostgreSQL's `console_settings`: one document every
 * node reads at start and follows while it runs, so a save through any node reaches all of them.
 * In the embedded mode, `<dataDir>/settings.json` (fileSharedSettings.ts), which only the one
 * process writes.
 */
export interface SharedSettingsStore {
  /** Where the settings are kept, as the console names it ("PostgreSQL at host:port, table console_settings"). */
  readonly where: string;
  read(): Promise<SharedSettingsDocument>;
  /**
   * Replaces the settings with what `change` makes of the current ones, one save at a time across
   * all nodes (a row lock), and tells every node's {@link watch} once it commits. A throw from
   * `change` saves nothing.
   */
  update(change: (current: Record<string, unknown>) => Record<string, unknown>, now: number): Promise<SharedSettingsDocument>;
  /** Saves `settings` as the first version only if nothing was ever saved; true if this call did. */
  importOnce(settings: Record<string, unknown>, now: number): Promise<boolean>;
  /**
   * Tells of saves another process may have made. In a cluster: calls `onDocument` with the
   * current document once listening, then after every save on any node (this one's too), and
   * again after a lost connection is back (a save may have been missed meanwhile). A store that
   * no other process writes (the embedded mode's file) never calls it: this process's own saves
   * take effect as they are made. Stop with the returned function.
   */
  watch(onDocument: (doc: SharedSettingsDocument) => void, log: (line: string) => void): () => Promise<void>;
}

/**
 * One upload's claim on disk space and on its video (issue 12, item 7), as an
 * {@link UploadReservationStore} keeps it: its declared bytes not yet written count against the
 * disk they will land on, and the video has no other upload while it lives.
 */
export interface UploadReservation {
  /** The upload's key: a tus upload's id, or `multipart:<random hex>`. */
  key: string;
  kind: 'tus' | 'multipart';
  videoId: string;
  /**
   * The disk its bytes land on, whose free space they count against, as ingest names disks
   * (ingest/sharedReservations.ts): reservations on other disks never count against it.
   */
  disk: string;
  /** Bytes declared (tus Upload-Length, a multipart Content-Length). */
  size: number;
  /** Bytes of it on the disk, as last reported: the reservation is `size - written`. */
  written: number;
  /** Unix ms from which it no longer counts (a tus upload's expiry, a node's lease); absent: until released. */
  expiresAt?: number;
  /** Who may replace it (a digest of the upload page's credential); absent: nobody. */
  owner?: string;
  /** The node that made it, which renews its lease (cluster mode); absent in the embedded mode. */
  node?: string;
  /** The application whose upload it is: its unsent bytes count towards that application's share of the disk. */
  appId?: string;
  /**
   * The client address that made it (or last resumed it), as a per-address limit keys it
   * (core/addressLimitKey.ts): its unsent bytes count towards that address's share. Absent: no
   * address's (an upload found in storage, whose creator's address is not kept).
   */
  client?: string;
  /**
   * Unix ms from which its unsent bytes count for nothing, unless bytes arrive before (each
   * arrival moves it on): a creation that sends nothing gives its space back. It still holds its
   * video; to count again it is reserved again ({@link UploadReservationStore.resume}). Absent:
   * it counts for as long as it lives.
   */
  idleUntil?: number;
}

/** What {@link UploadReservationStore.reserve} shows its decision: the live reservations it must fit with. */
export interface ReservationView {
  /** The live reservation of the same video, if any (a video has one upload under way at a time). */
  videoUpload?: UploadReservation;
  /** Bytes promised on the same disk to live reservations: the sum of their `size - written` (at least 0 each). */
  reservedBytes: number;
  /** Of {@link reservedBytes}, those promised to reservations of the same application (0 without an `appId`). */
  appReservedBytes: number;
  /** Of {@link reservedBytes}, those promised to reservations of the same client address (0 without a `client`). */
  clientReservedBytes: number;
}

/**
 * The uploads under way and the space promised to them (issue 12, item 7). In cluster mode it is
 * PostgreSQL's `upload_reservations`, which every node sees, so two nodes cannot promise the same
 * free bytes twice nor take two uploads of one video; the embedded mode's one process keeps them
 * in memory (memory/memoryUploadReservations.ts). Reservations past `expiresAt` count for nothing; past
 * `idleUntil` their bytes count for nothing, and they still hold their video. Times are Unix ms of
 * the calling node's clock.
 */
export interface UploadReservationStore {
  /**
   * Whether the reservations live in this process (the embedded mode's, in memory): bytes written
   * are then carried to it at once, which costs no round trip (ingest/sharedReservations.ts).
   */
  readonly inProcess: boolean;
  /**
   * Stores `r` after `decide` passes, as one step for every node: `decide` sees what is reserved
   * at that moment, and no other reserve (of any node) stores anything until this one has stored
   * or refused; a throw from `decide` stores nothing and is thrown again. Without `decide`, `r` is
   * stored unless its key is there already (an upload found in storage, taken back).
   */
  reserve(r: UploadReservation, now: number, decide?: (seen: ReservationView) => void | Promise<void>): Promise<void>;
  /**
   * Bytes are about to arrive on `r.key` (a tus PATCH). If its reservation still counts, its idle
   * time moves to `r.idleUntil` and nothing else changes. If it went idle (or is not there),
   * `decide` sees what {@link reserve} would show for a new one, leaving this one out, and on
   * passing `r` is stored in its place, counting again; a throw changes nothing and is thrown again.
   * One step with {@link reserve}: no other reserve or resume stores anything meanwhile.
   */
  resume(r: UploadReservation, now: number, decide: (seen: ReservationView) => void | Promise<void>): Promise<void>;
  /** Bytes promised on `disk` to live reservations, as {@link ReservationView.reservedBytes}. */
  reservedBytes(disk: string, now: number): Promise<number>;
  /**
   * Bytes now on disk, per key; a count lower than the one stored is ignored (reports from two
   * nodes may cross). With `active`, bytes arrived: the keys whose reservation still counts at
   * `active.now` count until `active.idleUntil` at least (one gone idle stays so: counting again
   * takes {@link resume}'s decision).
   */
  recordWritten(entries: ReadonlyArray<readonly [key: string, written: number]>, active?: { now: number; idleUntil: number }): Promise<void>;
  /** Moves the expiry of `keys` to `expiresAt` (a node renewing the leases it holds). Unknown keys are skipped. */
  renew(keys: readonly string[], expiresAt: number): Promise<void>;
  /** The upload finished, ended or went: its reservation goes, for every node. Unknown keys are no error. */
  release(key: string): Promise<void>;
  /**
   * Removes the reservations of `kind` made before `madeBefore` whose key is not in `present` (the
   * uploads the storage they live in still holds); resolves with how many went.
   */
  releaseAbsent(kind: UploadReservation['kind'], present: readonly string[], madeBefore: number): Promise<number>;
}

/**
 * A key that signs what vop hands out and checks later without a database read: media addresses
 * ('media') and upload credentials ('uploads'). Random, kept with the metadata (so every node of
 * a cluster has the same ones), and rotated by the admin (keys/keyRing.ts).
 */
export interface SigningKey {
  purpose: SigningKeyPurpose;
  /** Short and random ([a-z0-9]), carried by what it signs so that a check finds its key. */
  id: string;
  /** The key itself, hex (32 bytes). */
  secret: string;
  /** Unix ms; the newest live key of a purpose is the one that signs. */
  createdAt: number;
  /** Unix ms from which it checks nothing any more; absent for the key that signs. */
  expiresAt?: number;
}

export type SigningKeyPurpose = 'media' | 'uploads' | 'console';

/** The signing keys (both engines: the embedded database, PostgreSQL's `signing_keys`). Times are Unix ms. */
export interface SigningKeyStore {
  /** The purpose's keys still live at `now` (no expiry, or one after `now`), newest first. */
  list(purpose: SigningKeyPurpose, now: number): Promise<SigningKey[]>;
  /**
   * Stores `key` if its purpose has no live key yet (two nodes starting at once store one); the
   * live keys after, newest first.
   */
  addFirst(key: SigningKey, now: number): Promise<SigningKey[]>;
  /**
   * Stores `key` (it signs from now on) and gives every other live key of its purpose the expiry
   * `othersEndAt`, unless they end earlier already; keys expired at `now` are deleted. One step for
   * every node. The live keys after, newest first.
   */
  rotate(key: SigningKey, othersEndAt: number, now: number): Promise<SigningKey[]>;
}

/**
 * Cluster mode: what tells a node that another node changed an application (its row or its
 * grants), so that the node's copies of applications are dropped (postgres/eventRelay.ts hears
 * them from PostgreSQL, postgres/postgresAppStore.ts keeps the copies).
 */
export interface AppChangeFeed {
  /** True while changes are heard: copies may answer only then (a change made meanwhile would be missed). */
  readonly listening: boolean;
  /**
   * Calls `onChange` with the AppId of each change heard, and with undefined when changes may
   * have been missed (the feed listens again after a lost connection): drop every copy then.
   * Stop with the returned function.
   */
  onAppChange(onChange: (appId: string | undefined) => void): () => void;
}

/** Views and watch time of one video on one day (services/viewCounter.ts). */
export interface ViewCount {
  videoId: string;
  /** `YYYY-MM-DD`, UTC. */
  day: string;
  views: number;
  watchSeconds: number;
}

/**
 * Views and watch time per video and day (docs/watch.md, "Views and watch time"). Nodes add what
 * they counted since their last flush: adding is an increment, so every node of a cluster adds
 * into the same rows without reading them first.
 */
export interface ViewCountStore {
  /** Adds each count to its video's and day's row (made at zero when there is none). */
  add(counts: readonly ViewCount[]): Promise<void>;
  /** A video's counts, one per day with any, oldest first. */
  ofVideo(videoId: string): Promise<ViewCount[]>;
  /** Every video's counts summed per day, from `fromDay` to `toDay` (both `YYYY-MM-DD`, included). */
  byDay(fromDay: string, toDay: string): Promise<Array<Omit<ViewCount, 'videoId'>>>;
}

export interface Stores {
  apps: AppStore;
  videos: VideoStore;
  jobs: JobStore;
  /** Status callback deliveries and their attempts. */
  callbacks: CallbackStore;
  /**
   * The failure limits' and the registration rate's counters: shared by the nodes of a cluster
   * (PostgreSQL), in the one process's memory in the embedded mode (memory/memoryWindowCounters.ts).
   */
  counters: WindowCounters;
  /**
   * Applications' recent API callers: shared by the nodes of a cluster (PostgreSQL), in the one
   * process's memory in the embedded mode (a restart forgets them: memory/memoryApiCallers.ts).
   */
  apiCallers: ApiCallerStore;
  /**
   * The console's sessions: in the database, so that a restart keeps the console logged in (the
   * embedded sql.js database), shared by the nodes of a cluster (PostgreSQL).
   */
  consoleSessions: ConsoleSessionStore;
  /**
   * The console's saved settings: shared by the nodes of a cluster (PostgreSQL), the data folder's
   * `settings.json` in the embedded mode (fileSharedSettings.ts).
   */
  sharedSettings: SharedSettingsStore;
  /**
   * The uploads under way and their reserved bytes: shared by the nodes of a cluster (PostgreSQL),
   * in the one process's memory in the embedded mode (memory/memoryUploadReservations.ts).
   */
  uploadReservations: UploadReservationStore;
  /** The keys that sign media addresses and upload credentials. */
  signingKeys: SigningKeyStore;
  /** Views and watch time per video and day. */
  views: ViewCountStore;
  /**
   * Cluster mode: keep copies of applications on this node, dropped when `feed` hears that a node
   * changed one. The embedded mode's one process makes every change itself: there it does nothing.
   */
  followChanges(feed: AppChangeFeed): void;
  /**
   * A copy of all the metadata as it is at one instant, for a backup (backup/writeBackup.ts). Every
   * write acknowledged before the call is in it; writes go on meanwhile.
   */
  exportDatabase(): Promise<DatabaseExport>;
  /** Flushes and releases the storage. */
  close(): Promise<void>;
  /** Problems found when the storage was opened (damaged files set aside). */
  warnings(): string[];
}

/** The metadata at one instant ({@link Stores.exportDatabase}), as the parts of a backup. */
export interface DatabaseExport {
  /** 'sqlite': one part, the embedded database's file. 'postgresql': one part per table. */
  engine: 'sqlite' | 'postgresql';
  /** The schema's migration count when the copy was taken. */
  schemaVersion: number;
  /** Rows at that instant. */
  counts: { apps: number; videos: number; callbackDeliveries: number };
  /** The parts, each read once, in order; their names start with `database/`. */
  parts: Array<{ name: string; data: Uint8Array } | { name: string; size: number; open: () => Readable }>;
  /** Frees what the copy holds (a transaction, temporary files); called once the parts are read or given up. */
  release(): Promise<void>;
}
