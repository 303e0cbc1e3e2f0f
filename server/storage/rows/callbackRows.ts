/**
 * The callback tables' rows (`callback_deliveries`, `callback_attempts`) and their records
 * (storage/callbackRecords.ts): one map for both engines (sqljs/sqljsCallbackStore.ts,
 * postgres/postgresCallbackStore.ts).
 */
import type { AttemptRecord, DeliveryKind, DeliveryPatch, DeliveryRecord, DeliveryState } from '../callbackRecords.js';
import { flag, type FlagColumn } from './columns.js';

export type DeliveryRow = {
  id: string;
  seq: number;
  app_id: string;
  kind: DeliveryKind;
  video_id: string;
  video_status: number;
  status_at: number | null;
  state: DeliveryState;
  series: number;
  series_attempts: number;
  first_attempt_at: number | null;
  next_attempt_at: number | null;
  delivered_at: number | null;
  last_error: string;
  attempt_job: string;
  created_at: number;
  updated_at: number;
};

export type AttemptRow = {
  delivery_id: string;
  series: number;
  attempt: number;
  at: number;
  url: string;
  http_status: number | null;
  error: string;
  latency_ms: number;
  response_excerpt: string;
  ok: FlagColumn;
};

/** The column of each field a patch may change (CallbackStore.update). */
export const DELIVERY_PATCH_COLUMNS: Record<keyof DeliveryPatch, string> = {
  state: 'state',
  series: 'series',
  seriesAttempts: 'series_attempts',
  firstAttemptAt: 'first_attempt_at',
  nextAttemptAt: 'next_attempt_at',
  deliveredAt: 'delivered_at',
  lastError: 'last_error',
  attemptJob: 'attempt_job',
  updatedAt: 'updated_at',
};

export function toDelivery(r: DeliveryRow): DeliveryRecord {
  return {
    id: r.id,
    seq: r.seq,
    appId: r.app_id,
    kind: r.kind,
    videoId: r.video_id,
    videoStatus: r.video_status,
    statusAt: r.status_at,
    state: r.state,
    series: r.series,
    seriesAttempts: r.series_attempts,
    firstAttemptAt: r.first_attempt_at,
    nextAttemptAt: r.next_attempt_at,
    deliveredAt: r.delivered_at,
    lastError: r.last_error,
    attemptJob: r.attempt_job,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export function toAttempt(r: AttemptRow): AttemptRecord {
  return {
    deliveryId: r.delivery_id,
    series: r.series,
    attempt: r.attempt,
    at: r.at,
    url: r.url,
    httpStatus: r.http_status,
    error: r.error,
    latencyMs: r.latency_ms,
    responseExcerpt: r.response_excerpt,
    ok: flag(r.ok),
  };
}
