import type { AttemptRecord, CallbackStore, DeliveryPatch, DeliveryRecord, MissingDelivery } from '../callbackRecords.js';
import { DELIVERY_PATCH_COLUMNS as PATCH_COLUMNS, toAttempt, toDelivery, type AttemptRow, type DeliveryRow } from '../rows/callbackRows.js';
import type { PgParam, PostgresDatabase } from './postgresDatabase.js';

/** `SET` items of a patch, numbered after the `params` already there (which it extends). */
function patchSql(patch: DeliveryPatch, params: PgParam[]): string[] {
  const sets: string[] = [];
  for (const [k, v] of Object.entries(patch) as Array<[keyof DeliveryPatch, PgParam | undefined]>) {
    if (v === undefined) continue;
    params.push(v);
    sets.push(`${PATCH_COLUMNS[k]} = $${params.length}`);
  }
  return sets;
}

/** Rows per INSERT of insertMany (16 parameters each). */
const INSERT_ROWS_PER_STATEMENT = 1_000;

/**
 * Deliveries and attempts in PostgreSQL. `seq` comes from the table's sequence (the caller's
 * value is not used); the unique index on status changes makes every node's listener and
 * start-up reconciliation safe to race (ON CONFLICT DO NOTHING).
 */
export class PostgresCallbackStore implements CallbackStore {
  constructor(private readonly db: PostgresDatabase) {}

  async insert(d: DeliveryRecord): Promise<boolean> {
    const [stored] = await this.insertMany([d]);
    return stored === true;
  }

  async insertMany(ds: DeliveryRecord[]): Promise<boolean[]> {
    if (ds.length === 0) return [];
    const stored = new Set<string>();
    await this.db.transaction(async (tx) => {
      for (let i = 0; i < ds.length; i += INSERT_ROWS_PER_STATEMENT) {
        const params: PgParam[] = [];
        const rows = ds.slice(i, i + INSERT_ROWS_PER_STATEMENT).map((d) => {
          const first = params.length + 1;
          params.push(d.id, d.appId, d.kind, d.videoId, d.videoStatus, d.statusAt, d.state, d.series, d.seriesAttempts,
            d.firstAttemptAt, d.nextAttemptAt, d.deliveredAt, d.lastError, d.attemptJob ?? '', d.createdAt, d.updatedAt);
          return `(${Array.from({ length: 16 }, (_, k) => `$${first + k}`).join(', ')})`;
        });
        const { rows: inserted } = await tx.query<{ id: string }>(
          `INSERT INTO callback_deliveries (id, app_id, kind, video_id, video_status, status_at, state, series, series_attempts,
             first_attempt_at, next_attempt_at, delivered_at, last_error, attempt_job, created_at, updated_at)
           VALUES ${rows.join(', ')} ON CONFLICT DO NOTHING RETURNING id`,
          params,
        );
        for (const r of inserted) stored.add(r.id);
      }
    });
    return ds.map((d) => stored.has(d.id));
  }

  async get(id: string): Promise<DeliveryRecord | undefined> {
    const { rows } = await this.db.query<DeliveryRow>('SELECT * FROM callback_deliveries WHERE id = $1', [id]);
    return rows[0] && toDelivery(rows[0]);
  }

  async listByApp(appId: string, opts: { limit: number; beforeSeq?: number }): Promise<DeliveryRecord[]> {
    const { rows } = await this.db.query<DeliveryRow>('SELECT * FROM callback_deliveries WHERE app_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3', [
      appId, opts.beforeSeq ?? Number.MAX_SAFE_INTEGER, opts.limit,
    ]);
    return rows.map(toDelivery);
  }

  async listPending(): Promise<DeliveryRecord[]> {
    return (await this.db.query<DeliveryRow>("SELECT * FROM callback_deliveries WHERE state = 'pending' ORDER BY seq")).rows.map(toDelivery);
  }

  async listUnqueued(opts: { limit: number; updatedBefore?: number; videoId?: string }): Promise<DeliveryRecord[]> {
    const { rows } = await this.db.query<DeliveryRow>(
      "SELECT * FROM callback_deliveries WHERE state = 'pending' AND attempt_job = '' AND updated_at < $1 AND ($3::text IS NULL OR video_id = $3) ORDER BY seq LIMIT $2",
      [opts.updatedBefore ?? Number.MAX_SAFE_INTEGER, opts.limit, opts.videoId ?? null],
    );
    return rows.map(toDelivery);
  }

  async listHeld(opts: { limit: number; dueBefore: number }): Promise<DeliveryRecord[]> {
    const { rows } = await this.db.query<DeliveryRow>(
      "SELECT * FROM callback_deliveries WHERE state = 'pending' AND attempt_job <> '' AND next_attempt_at < $1 ORDER BY seq LIMIT $2",
      [opts.dueBefore, opts.limit],
    );
    return rows.map(toDelivery);
  }

  async claimAttempt(id: string, expect: { series: number; seriesAttempts: number }, jobId: string): Promise<boolean> {
    // One guarded UPDATE: of two nodes' jobs racing, the second waits for the first's row lock,
    // then finds attempt_job set (READ COMMITTED re-checks the row) and changes nothing.
    const { rowCount } = await this.db.query(
      `UPDATE callback_deliveries SET attempt_job = $1
       WHERE id = $2 AND state = 'pending' AND series = $3 AND series_attempts = $4 AND attempt_job IN ('', $1)`,
      [jobId, id, expect.series, expect.seriesAttempts],
    );
    return rowCount === 1;
  }

  async releaseAttempt(id: string, jobId: string): Promise<boolean> {
    const { rowCount } = await this.db.query("UPDATE callback_deliveries SET attempt_job = '' WHERE id = $1 AND attempt_job = $2", [id, jobId]);
    return rowCount === 1;
  }

  async update(id: string, patch: DeliveryPatch, expect?: { series: number; seriesAttempts: number; attemptJob?: string }): Promise<boolean> {
    const params: PgParam[] = [];
    const sets = patchSql(patch, params);
    if (sets.length === 0) return false;
    params.push(id);
    let where = `id = $${params.length}`;
    if (expect) (params.push(expect.series, expect.seriesAttempts), (where += ` AND series = $${params.length - 1} AND series_attempts = $${params.length}`));
    if (expect?.attemptJob !== undefined) (params.push(expect.attemptJob), (where += ` AND attempt_job IN ('', $${params.length})`));
    const { rowCount } = await this.db.query(`UPDATE callback_deliveries SET ${sets.join(', ')} WHERE ${where}`, params);
    return rowCount === 1;
  }

  async recordAttempt(a: AttemptRecord, patch: DeliveryPatch): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO callback_attempts (delivery_id, series, attempt, at, url, http_status, error, latency_ms, response_excerpt, ok)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
        [a.deliveryId, a.series, a.attempt, a.at, a.url, a.httpStatus, a.error, a.latencyMs, a.responseExcerpt, a.ok],
      );
      // The check and the write are one guarded UPDATE: another node's redelivery in between
      // makes it change nothing.
      const params: PgParam[] = [];
      const sets = patchSql({ ...patch, seriesAttempts: a.attempt, attemptJob: '' }, params);
      params.push(a.deliveryId, a.series, a.attempt - 1);
      const n = params.length;
      const { rowCount } = await tx.query(
        `UPDATE callback_deliveries SET ${sets.join(', ')} WHERE id = $${n - 2} AND state = 'pending' AND series = $${n - 1} AND series_attempts = $${n}`,
        params,
      );
      return rowCount === 1;
    });
  }

  async attempts(deliveryIds: string[]): Promise<AttemptRecord[]> {
    if (deliveryIds.length === 0) return [];
    const { rows } = await this.db.query<AttemptRow>(
      'SELECT * FROM callback_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY delivery_id, series, attempt',
      [deliveryIds],
    );
    return rows.map(toAttempt);
  }

  async missingStatusDeliveries(endStates: number[], slice: { afterVideoId?: string; videos: number }): Promise<{ missing: MissingDelivery[]; next?: string }> {
    const after = slice.afterVideoId ?? '';
    const { rows: lastRows } = await this.db.query<{ id: string }>('SELECT id FROM videos WHERE id > $1 ORDER BY id LIMIT 1 OFFSET $2', [
      after, Math.max(0, slice.videos - 1),
    ]);
    const last = lastRows[0]?.id;
    if (endStates.length === 0) return { missing: [], next: last };
    // The latest real change (not a move to the same status) of each video now in an end state.
    const { rows } = await this.db.query<{ app_id: string; video_id: string; to_status: number; at: number }>(
      `SELECT v.app_id, v.id AS video_id, h.to_status, h.at
       FROM videos v
       JOIN LATERAL (SELECT h2.to_status, h2.at FROM video_status_history h2
                     WHERE h2.video_id = v.id AND (h2.from_status IS NULL OR h2.from_status <> h2.to_status)
                     ORDER BY h2.at DESC, h2.id DESC LIMIT 1) h ON TRUE
       WHERE v.id > $1 AND ($2::text IS NULL OR v.id <= $2) AND v.status = ANY($3::int[]) AND h.to_status = v.status
         AND NOT EXISTS (SELECT 1 FROM callback_deliveries d
                         WHERE d.kind = 'status' AND d.video_id = v.id AND d.status_at = h.at AND d.video_status = h.to_status)
       ORDER BY h.at, v.id`,
      [after, last ?? null, endStates],
    );
    return { missing: rows.map((r) => ({ appId: r.app_id, videoId: r.video_id, videoStatus: r.to_status, statusAt: r.at })), next: last };
  }

  async maxSeq(): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>('SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM callback_deliveries_seq_seq');
    return rows[0]?.n ?? 0;
  }
}
