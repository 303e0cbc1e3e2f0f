/**
 * Shapes the admin API answers with, declared once for the server that builds them and the
 * console that reads them (renderer/src/types.ts imports them, type-only; Vite erases the import).
 *
 * No runtime import here, and type imports only from files without Node: the console's
 * type-check (`npx tsc -p renderer`, browser libraries only) reads this file and what it imports.
 * The services and routes that build these shapes import them from here.
 */
import type { JobRecord, JobState } from '../storage/jobRecords.js';
import type { LadderRung } from '../media/ladder.js';

/** One address the server answers on (`GET /admin/api/overview`, routes/adminOverview.ts). */
export interface ServedAddress {
  /** "This machine", "LAN (eth0)", "Public URL". */
  label: string;
  /** e.g. http://192.168.1.20:8080 */
  baseUrl: string;
  /** The API base address applications use: `<baseUrl>/Api/Video`. */
  apiUrl: string;
  /** False for an address the server does not listen on (it is bound to loopback or to one other address). */
  served: boolean;
}

/** What the admin API shows of an application: everything but the secret (services/appService.ts). */
export interface AppView {
  appId: string;
  name: string;
  callbackUrl: string;
  disabled: boolean;
  /** AppIds whose videos this application may list (spec 4.3 aId). */
  grants: string[];
  /** Networks (CIDRs) its spec API calls must come from; empty for any (auth/apiNetworks.ts). */
  apiNetworks: string[];
  /** The last addresses its API calls came from, newest first, as this server process saw them. */
  recentCallers: { address: string; lastSeen: string; allowed: boolean }[];
  /** Its videos become playable only once every rung is made (AppRecord.wholeLadderFirst). */
  wholeLadderFirst: boolean;
  /** Who may fetch its media: 'public', or 'signed' (addresses with a token, services/mediaAccess.ts). */
  mediaAccess: 'public' | 'signed';
  /** How long its signed addresses stay good, in seconds. */
  mediaTtlSeconds: number;
  createdAt: string;
  updatedAt: string;
}

/** A video as the console lists it (`GET /admin/api/videos`, routes/adminVideos.ts). */
export interface VideoRow {
  id: string;
  appId: string;
  appName: string;
  title: string;
  createUser: string;
  status: number;
  statusReason: string;
  sourceType: number;
  duration: number;
  coverUrl: string;
  createdAt: string;
  updatedAt: string;
}

/**
 * Where the rest of a playable video's ladder stands (`GET /admin/api/videos/:id`'s `ladder`,
 * console/ladderView.ts): the renditions after the first come from a `ladder` job while the
 * video is already served.
 */
export interface LadderView {
  /**
   * '': nothing to come (the ladder is complete, never had more rungs, or the video is not
   * playable); 'pending': rungs to come (`job` says whether queued or running); 'failed': its
   * job gave up, and the video stays playable with what it lists.
   */
  state: '' | 'pending' | 'failed';
  /** The labels of the renditions listed now, largest first. */
  labels: string[];
  /** How many renditions are listed now. */
  done: number;
  /**
   * How many the ladder comes to; null when that cannot be told without probing the source (its
   * lowest rung was encoded first, so no rendition has the source's size).
   */
  total: number | null;
  /** The video's latest ladder job: the one queued or running, else the last to end; null if none. */
  job: { id: string; state: JobState; error: string } | null;
}

/** A job as the admin API shows it: the stored record with live progress merged in (routes/adminJobs.ts). */
export interface JobView extends Omit<JobRecord, 'payload'> {
  /** Seconds left, while running and known. */
  etaSeconds: number | null;
  /** e.g. "2.40x" (media seconds per second), while running. */
  speed: string | null;
}

/** A tus upload that has not finished, as the console shows it (console/uploadMonitor.ts). */
export interface UploadInProgress {
  /** The tus upload id. */
  id: string;
  videoId: string;
  appId: string;
  /** The video's title, if the video still exists. */
  title: string;
  filename: string;
  uploadType: string;
  /** Announced length in bytes. */
  size: number | null;
  /** Bytes received so far. */
  offset: number;
  /** 0 to 100, when the size is known. */
  percent: number | null;
  /** When the upload was created (ISO 8601). */
  createdAt: string | null;
  /** When its last byte arrived (ISO 8601). */
  lastWriteAt: string;
  /** Receiving rate over the last few seconds; 0 when nothing arrives; null until measured (two readings). */
  bytesPerSecond: number | null;
  /** Seconds left at that rate, when both are known. */
  etaSeconds: number | null;
}

/** Every setting the console shows, flat, as the admin API reads and writes them (settings/consoleSettings.ts). */
export interface ConsoleSettings {
  /** Absolute base URL clients should see; null: the Host each caller used. */
  publicUrl: string | null;
  /** Public address of the widget scripts, ending in `/`; null: `<base>/widget/`. */
  scriptBaseUrl: string | null;
  /** TCP port; null: the one given at start (flag, environment or the shell's setting). */
  port: number | null;
  /** The rendition ladder's rungs (label, shorter side, video kbps). */
  ladderRungs: LadderRung[];
  /** AAC bitrate of every rendition, kbps. */
  audioBitrateKbps: number;
  /** Largest upload of uploadType flash, bytes. */
  maxUploadBytesFlash: number;
  /** Largest upload of uploadType silverlight, bytes. */
  maxUploadBytesSilverlight: number;
  /** Largest file of POST /Api/Video/Upload, bytes. */
  multipartMaxBytes: number;
  /** Largest source pulled from a URL, bytes. */
  pullMaxBytes: number;
  /** CIDRs a pulled source's address must be in (narrows the default policy). */
  pullAllow: string[];
  /** CIDRs a pulled source's address must not be in. */
  pullDeny: string[];
  /** Registrations one application may make per minute; 0: no limit. */
  registrationsPerMinute: number;
  /** Videos one application may have (deleted ones not counted); 0: no quota. */
  maxVideosPerApp: number;
  /** Days after which a registration never uploaded (status 8) is deleted; 0: never (console/registrationExpiry.ts). */
  expireUnuploadedDays: number;
  /** Transcodes at once. */
  transcodeConcurrency: number;
  /** Downloads at once. */
  downloadConcurrency: number;
}

export type SettingKey = keyof ConsoleSettings;

/**
 * `POST /admin/api/apps/:appId/try-upload` (console/tryUpload.ts, routes/adminTryUpload.ts): the
 * values `openUpload` takes for one video (spec 4.5), made with the application's secret on the
 * server, and the widget scripts to load them with.
 */
export interface TryUploadValues {
  appId: string;
  /** Unix seconds, as a string: the spec's `Timestamp`. */
  timestamp: string;
  /** MD5(timestamp + AppSecret), the spec's `Token`. */
  token: string;
  videoId: string;
  /** When the timestamp stops being accepted (ISO 8601): the upload page must be opened before. */
  expiresAt: string;
  /** The video as registered (or as it stands, when fresh values were asked for an existing one). */
  video: { id: string; title: string; status: number; createUser: string };
  /** The widget scripts at the address the console was opened at (its CSP allows its own origin only). */
  scripts: { window: string; overlay: string };
}
