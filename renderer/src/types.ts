/**
 * The admin API's answers as the console reads them (server/routes/admin*.ts). Where the server
 * declares a shape it is imported from there, type-only (Vite erases these imports, and the
 * server files they name import nothing from Node); only the answers the server builds inline
 * are described here.
 */
import type { AttemptView, DeliveryView } from '../../server/callbacks/deliveryView.js';
import type { BackupRecord, BackupsView, ScheduledRun } from '../../server/backup/backupViews.js';
import type { AppView, ConsoleSettings, JobView, LadderView, ServedAddress, SettingKey, TryUploadValues, UploadInProgress, VideoRow } from '../../server/http/adminApiTypes.js';
import type { JobState } from '../../server/storage/jobRecords.js';
import type { LadderRung } from '../../server/media/ladder.js';
import type { RenditionRecord, StatusChange, VideoRecord } from '../../server/storage/types.js';

export type { AppView, AttemptView, BackupRecord, BackupsView, ConsoleSettings, DeliveryView, JobState, JobView, LadderRung, LadderView, ScheduledRun, ServedAddress, SettingKey, StatusChange, TryUploadValues, UploadInProgress, VideoRecord, VideoRow };

/** The ffmpeg and ffprobe in use (server/media/ffmpegTools.ts FfmpegStatus, as far as the console reads it). */
export type FfmpegStatus =
  | {
      ok: true;
      ffmpeg: { path: string; source: string; version: string };
      ffprobe: { path: string; source: string; version: string };
      skipped: string[];
      /** The pair's proof on a sample of each common container (server/media/ffmpegProof.ts). */
      proof: { containers: Array<{ container: string; ok: boolean; problem?: string }>; summary: string };
    }
  | { ok: false; error: string };

/** `GET /admin/api/overview`. */
export interface Overview {
  addresses: ServedAddress[];
  widgetScripts: Array<{ label: string; window: string; overlay: string }>;
  videosByStatus: Record<string, number>;
  disk: { usedBytes: number; freeBytes: number; totalBytes: number };
  ffmpeg: FfmpegStatus;
  apps: { total: number; disabled: number };
  jobs: Record<string, { queued: number; running: number }>;
}

/** `GET /admin/api/videos/:id`: the stored record (times in Unix ms) and what hangs off it. */
export interface VideoDetail {
  video: VideoRecord;
  statusHistory: StatusChange[];
  renditions: RenditionRecord[];
  jobs: JobView[];
  ladder: LadderView;
}

/** `GET /admin/api/videos/:id/playback`. */
export interface Playback {
  playable: boolean;
  /** A signed application's addresses stop working at this time (Unix ms); null for public ones. */
  signedUntil: number | null;
  mediaServer: { PlayURL: string; MobilePlayURL: string; DownloadURL: string };
  renditions: Array<Omit<RenditionRecord, 'videoId'> & { playUrl: string; downloadUrl: string }>;
  coverUrl: string;
  covers: Array<{ t: number; width: number; height: number; url: string }>;
  hlsUrl: string;
  /** The video's caption tracks (their urls work while it is playable). */
  captions: Caption[];
  /** Its chapters as a WebVTT chapters track; '' when it has none. */
  chaptersUrl: string;
  /** The seek previews' WebVTT ('' until made; docs/watch.md). */
  storyboardUrl?: string;
}

/** A caption track of a video (`GET /admin/api/videos/:id/captions`): one language, from the source file or added. */
export interface Caption {
  id: string;
  /** BCP 47 tag ("en", "pt-BR"). */
  language: string;
  label: string;
  /** 'source': a subtitle stream of the uploaded file; 'api': a file added since. */
  origin: 'source' | 'api';
  url: string;
}

/** `GET /admin/api/processing`, as far as the console reads it. */
export interface ProcessingView {
  concurrency: number;
  defaultConcurrency: number;
  preset: string;
  crf: number;
  hls: boolean;
  running: number;
  /** Ladders (the rungs after a first rendition) at once, and how many run. */
  ladderConcurrency: number;
  ladderRunning: number;
}

/** `GET /admin/api/queue/:type`: the monitor's one request (routes/adminJobs.ts). */
export interface QueueView {
  running: JobView[];
  /** Every queued job, in queue order. */
  queued: JobView[];
  /** The last finished ones, newest first. */
  recent: JobView[];
  /** Video titles by id, for every job above. */
  titles: Record<string, string>;
  processing: ProcessingView;
}

/** `GET /admin/api/settings`; a PUT adds which changes applied now and which after a restart. */
export interface SettingsView {
  running: ConsoleSettings;
  saved: Partial<ConsoleSettings>;
  live: SettingKey[];
  pendingRestart: SettingKey[];
  dataDir: string;
  settingsFile: string;
  applied?: SettingKey[];
  afterRestart?: SettingKey[];
}

/** Server-sent events (server/routes/adminEvents.ts). */
export interface ServerEvents {
  'job.state': { jobId: string; type: string; videoId: string; state: JobState; error: string };
  'job.progress': { jobId: string; type: string; videoId: string; percent: number; etaSeconds?: number; speed?: string };
  'video.status': { videoId: string; appId: string; from: number; to: number; reason: string; at: number };
  'video.renditions': { videoId: string; appId: string; ladder: LadderView['state']; labels: string[] };
  uploads: { uploads: UploadInProgress[] };
}

