/**
 * The `apps` and `videos` tables' rows and their records (storage/types.ts): one map for both
 * engines (sqljs/sqljsVideoStore.ts and sqljsAppStore.ts, postgres/postgresVideoStore.ts and postgresAppStore.ts).
 */
import type { AppRecord, LadderState, TextTrackRecord, VideoRecord } from '../types.js';
import { flag, type FlagColumn } from './columns.js';

export type AppRow = {
  app_id: string;
  name: string;
  secret: string;
  callback_url: string;
  disabled: FlagColumn;
  api_networks: string;
  whole_ladder_first: FlagColumn;
  media_access: string;
  media_ttl_seconds: number;
  created_at: number;
  updated_at: number;
};

/** API networks are stored as one comma-separated column (a CIDR has no comma); '' for none. */
export function networksFromColumn(v: string): string[] {
  return v === '' ? [] : v.split(',');
}

export function toApp(r: AppRow): AppRecord {
  return {
    appId: r.app_id,
    name: r.name,
    secret: r.secret,
    callbackUrl: r.callback_url,
    disabled: flag(r.disabled),
    apiNetworks: networksFromColumn(r.api_networks),
    wholeLadderFirst: flag(r.whole_ladder_first),
    mediaAccess: r.media_access === 'signed' ? 'signed' : 'public',
    mediaTtlSeconds: Number(r.media_ttl_seconds),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export type VideoRow = {
  id: string;
  app_id: string;
  title: string;
  description: string;
  tags: string;
  actors: string;
  create_user: string;
  status: number;
  status_reason: string;
  source_type: number;
  source_url: string;
  duration: number;
  cover_file: string;
  source_file: string;
  keep_source: FlagColumn;
  ladder: string;
  created_at: number;
  updated_at: number;
};

export function toVideo(r: VideoRow): VideoRecord {
  return {
    id: r.id,
    appId: r.app_id,
    title: r.title,
    description: r.description,
    tags: r.tags,
    actors: r.actors,
    createUser: r.create_user,
    status: r.status,
    statusReason: r.status_reason,
    sourceType: r.source_type,
    sourceUrl: r.source_url,
    duration: r.duration,
    coverFile: r.cover_file,
    sourceFile: r.source_file,
    keepSource: flag(r.keep_source),
    ladder: (r.ladder ?? '') as LadderState,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export type TextTrackRow = {
  video_id: string;
  id: string;
  kind: string;
  origin: string;
  language: string;
  label: string;
  forced: FlagColumn;
  bytes: number | string;
  created_at: number | string;
};

export function toTextTrack(r: TextTrackRow): TextTrackRecord {
  return {
    videoId: r.video_id,
    id: r.id,
    kind: r.kind === 'chapters' || r.kind === 'storyboard' ? r.kind : 'captions',
    origin: r.origin === 'source' ? 'source' : 'api',
    language: r.language,
    label: r.label,
    forced: flag(r.forced),
    bytes: Number(r.bytes),
    createdAt: Number(r.created_at),
  };
}

/** Oldest first, then by id: the order every list of text tracks has. */
export function byTextTrackAge(a: TextTrackRecord, b: TextTrackRecord): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
