import type { AttemptRecord, DeliveryRecord } from '../storage/callbackRecords.js';

/** A delivery as the admin API shows it (times as ISO 8601 UTC). */
export interface DeliveryView {
  id: string;
  appId: string;
  kind: DeliveryRecord['kind'];
  videoId: string;
  videoStatus: number;
  state: DeliveryRecord['state'];
  /** When the video changed status; null for a test. */
  statusAt: string | null;
  series: number;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  lastError: string;
  createdAt: string;
  /** Every attempt of every series, oldest first. */
  attempts: AttemptView[];
}

/** One attempt as the admin API shows it. */
export interface AttemptView {
  series: number;
  attempt: number;
  at: string;
  url: string;
  httpStatus: number | null;
  ok: boolean;
  error: string;
  latencyMs: number;
  responseExcerpt: string;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The admin API's view of `rows`, each with its attempts taken from `attempts`. */
export function toDeliveryViews(rows: DeliveryRecord[], attempts: AttemptRecord[]): DeliveryView[] {
  const byDelivery = new Map<string, AttemptView[]>();
  for (const a of attempts) {
    const list = byDelivery.get(a.deliveryId) ?? [];
    list.push({
      series: a.series,
      attempt: a.attempt,
      at: new Date(a.at).toISOString(),
      url: a.url,
      httpStatus: a.httpStatus,
      ok: a.ok,
      error: a.error,
      latencyMs: a.latencyMs,
      responseExcerpt: a.responseExcerpt,
    });
    byDelivery.set(a.deliveryId, list);
  }
  return rows.map((d) => ({
    id: d.id,
    appId: d.appId,
    kind: d.kind,
    videoId: d.videoId,
    videoStatus: d.videoStatus,
    state: d.state,
    statusAt: iso(d.statusAt),
    series: d.series,
    nextAttemptAt: iso(d.nextAttemptAt),
    deliveredAt: iso(d.deliveredAt),
    lastError: d.lastError,
    createdAt: new Date(d.createdAt).toISOString(),
    attempts: byDelivery.get(d.id) ?? [],
  }));
}
