/**
 * What the admin API answers about backups (GET and POST /admin/api/backups), in one place that
 * imports no Node module, so that the console types its calls with the same shapes, type-only
 * (renderer/src/types.ts), as it does those of http/adminApiTypes.ts.
 */
import type { FullBackupEvery } from './backupOptions.js';

/** What a backup holds of the media: the files, their list alone, or nothing. */
export type MediaChoice = 'include' | 'list' | 'none';

/** What a backup held when it was written (its manifest's counts). */
export interface BackupCounts {
  apps: number;
  videos: number;
  callbackDeliveries: number;
  mediaObjects: number;
  mediaBytes: number;
  mediaMissing: number;
}

/** A backup file in the backup folder. */
export interface BackupRecord {
  name: string;
  bytes: number;
  createdAt: string;
  media: MediaChoice;
  /** What made it. */
  by: 'console' | 'schedule' | 'api';
  /** Whether `vop verify`'s checks passed right after it was written; the problems if not. */
  verified: boolean;
  problems?: string[];
  counts?: BackupCounts;
  /** Its seal: 'keyed' when the server has a seal key (`backups.sealKeyFile`), else 'plain'. */
  seal?: 'plain' | 'keyed';
}

/** The last attempt of each kind, for the console and /healthz. */
export interface BackupAttempt {
  at: string;
  by: BackupRecord['by'];
  ok: boolean;
  /** Why it failed. */
  error?: string;
  record?: BackupRecord;
}

/** A backup under way: what it is, since when, and the bytes written so far. */
export interface BackupUnderWay {
  what: string;
  since: string;
  bytes: number;
}

/** The two kinds of scheduled backup. */
export type ScheduledKind = 'daily' | 'full';

/** What the console shows of the schedule. */
export interface BackupScheduleView {
  /** The time zone the times are read in (absent: the server machine's). */
  timeZone: string | null;
  daily: { enabled: boolean; at: string; keep: number; next: string | null };
  full: { every: FullBackupEvery; at: string; weekday: string; keep: number; media: MediaChoice; next: string | null };
  /** Whether this node runs the schedule (in cluster mode, the nodes that serve the console). */
  runsHere: boolean;
  /** The last scheduled run of each kind in this process, if any. */
  last: Partial<Record<ScheduledKind, ScheduledRun>>;
}

/** A scheduled run's outcome. */
export interface ScheduledRun {
  at: string;
  ok: boolean;
  /** Why not, or what happened instead (skipped: another backup was under way the whole wait). */
  error?: string;
  skipped?: boolean;
  name?: string;
}

/** GET /admin/api/backups. */
export interface BackupsView {
  /** The backup folder. */
  folder: string;
  /** What keeps a new backup from starting now (another under way), or null. */
  busy: string | null;
  underWay: BackupUnderWay | null;
  /** This process's last backup, made or failed. */
  last: BackupAttempt | null;
  schedule: BackupScheduleView;
  backups: BackupRecord[];
}
