/**
 * What `GET /admin/api/housekeeping` answers (routes/adminHousekeeping.ts), declared once for the
 * services that build it and the console that reads it (renderer/src/pages/Overview.tsx imports
 * these, type-only). No imports here: the console's type-check reads this file with browser
 * libraries only.
 */

/** The kinds of media the overview counts, by the media store's areas. */
export type StorageArea = 'sources' | 'play' | 'hls' | 'covers' | 'incoming';

/** What vop keeps, by kind (console/storageUsage.ts). */
export interface StorageUsageView {
  /** Bytes and objects per area: sources (uploaded and pulled files), play (MP4 renditions), hls, covers, incoming (uploads in progress). */
  areas: Record<StorageArea, { bytes: number; files: number }>;
  totalBytes: number;
  /** When the figures were counted (ISO 8601): they are reused for a short while. */
  countedAt: string;
}

/** Registrations never uploaded (console/registrationExpiry.ts). */
export interface ExpiryView {
  /** Days after registration a video still in 8 is deleted; 0: never. */
  days: number;
  /** Videos in status 8 now. */
  waiting: number;
  /** When the oldest of them is due (ISO 8601), or null if none is waiting or they never expire. */
  nextExpiresAt: string | null;
}

/** An upload with no byte for a while (console/uploadMonitor.ts): an admin may cancel it. */
export interface StalledUpload {
  /** The tus upload id (`DELETE /admin/api/uploads/:id` cancels it). */
  id: string;
  videoId: string;
  title: string;
  filename: string;
  size: number | null;
  offset: number;
  percent: number | null;
  /** When its last byte arrived (ISO 8601). */
  lastWriteAt: string;
}

export interface HousekeepingView {
  storage: StorageUsageView;
  registrations: ExpiryView;
  stalledUploads: { minutes: number; uploads: StalledUpload[] };
}
