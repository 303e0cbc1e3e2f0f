import crypto from 'node:crypto';
import type { VideoRecord } from '../../server/storage/types.js';

/** A stored video with every field set, for tests that need exact times or states. */
export function videoRecord(appId: string, overrides: Partial<VideoRecord> = {}): VideoRecord {
  const now = Date.now();
  return {
    id: crypto.randomUUID(),
    appId,
    title: 'fixture',
    description: '',
    tags: '',
    actors: '',
    createUser: '',
    status: 8,
    statusReason: '',
    sourceType: 1,
    sourceUrl: '',
    duration: 0,
    coverFile: '',
    sourceFile: '',
    keepSource: false,
    ladder: '',
    createdAt: now,
    updatedAt: now,
    ...overrides,
  };
}

/** The 9 fields of spec 2.2, in the spec's order. */
export const VIDEO_FIELDS = ['Id', 'VideoTitle', 'Description', 'Tags', 'Actors', 'Status', 'CreateDate', 'CreateUser', 'PicSavePath'];

/** `YYYY-MM-DDThh:mm:ss`, as spec 2.2 shapes CreateDate (we send no fraction). */
export const CREATE_DATE_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

/** A random UUID of version 4 (spec 2.2: "a hyphenated 36-character identifier"). */
export const UUID_V4_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
