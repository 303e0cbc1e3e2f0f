import type { DurableDatabase, SqlParam } from './durableDatabase.js';
import type { AttemptRecord, CallbackStore, DeliveryPatch, DeliveryRecord, MissingDelivery } from '../callbackRecords.js';
import { DELIVERY_PATCH_COLUMNS as PATCH_COLUMNS, toAttempt, toDelivery, type AttemptRow, type DeliveryRow } from '../rows/callbackRows.js';

function patchSql(patch: DeliveryPatch): { sets: string[]; params: SqlParam[] } {
  const sets: string[] = [];
  const params: SqlParam[] = [];
  for (const [k, v] of Object.entries(patch) as Array<[keyof DeliveryPatch, SqlParam | undefined]>) {
    if (v === undefined) continue;
    sets.push(`${PATCH_COLUMNS[k]} = ?`);
    params.push(v);
  }
  return { sets, params };
}

/** Rows per INSERT statement of {@link SqlJsCallbackStore.insertMany} (17 parameters each). */
const INSERT_ROWS_PER_STATEMENT = 100;

/** Deliveries and attempts in the embedded sql.js database (tables `callback_deliveries`, `callback_attempts`). */
export class SqlJsCallbackStore implements CallbackStore {
  constructor(private readonly db: DurableDatabase) {}

  async insert(d: DeliveryRecord): Promise<boolean> {
    const [stored] = await this.insertMany([d]);
    return stored === true;
  }

  async insertMany(ds: DeliveryRecord[]): Promise<boolean[]> {
    if (ds.length === 0) return [];
    // Many rows per statement: start-up catch-up writes tens of thousands, and a statement per row
    // made a journal three times larger (its text repeated in every record), with as many more
    // snapshots of the whole database, each a copy of it in memory.
    const chunks: DeliveryRecord[][] = [];
    for (let i = 0; i < ds.length; i += INSERT_ROWS_PER_STATEMENT) chunks.push(ds.slice(i, i + INSERT_ROWS_PER_STATEMENT));
    // OR IGNORE: the unique index on (video_id, status_at, video_status) of status deliveries
    // makes the listener and the start-up reconciliation safe to race.
    // The store numbers them (the caller's seq is not used), after every row there, the ones
    // VideoStore.setStatus wrote included: read and written in one turn of this thread.
    let seq = await this.maxSeq();
    const changes = await this.db.write(
      chunks.map((chunk): [string, SqlParam[]] => [
        `INSERT OR IGNORE INTO callback_deliveries (id, seq, app_id, kind, video_id, video_status, status_at, state, series, series_attempts,
           first_attempt_at, next_attempt_at, delivered_at, last_error, attempt_job, created_at, updated_at)
         VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
        chunk.flatMap((d) => [d.id, ++seq, d.appId, d.kind, d.videoId, d.videoStatus, d.statusAt, d.state, d.series, d.seriesAttempts,
          d.firstAttemptAt, d.nextAttemptAt, d.deliveredAt, d.lastError, d.attemptJob ?? '', d.createdAt, d.updatedAt]),
      ]),
    );
    return chunks.flatMap((chunk, i) => {
      if (changes[i] === chunk.length) return chunk.map(() => true);
      // Some were ignored: the stored ones are those whose (new, random) id is there.
      const stored = new Set(
        this.db
          .all<{ id: string }>(`SELECT id FROM callback_deliveries WHERE id IN (${chunk.map(() => '?').join(', ')})`, chunk.map((d) => d.id))
          .map((r) => r.id),
      );
      return chunk.map((d) => stored.has(d.id));
    });
  }

  async get(id: string): Promise<DeliveryRecord | undefined> {
    const r = this.db.get<DeliveryRow>('SELECT * FROM callback_deliveries WHERE id = ?', [id]);
    return r ? toDelivery(r) : undefined;
  }

  async listByApp(appId: string, opts: { limit: number; beforeSeq?: number }): Promise<DeliveryRecord[]> {
    return this.db
      .all<DeliveryRow>('SELECT * FROM callback_deliveries WHERE app_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?', [
        appId,
        opts.beforeSeq ?? Number.MAX_SAFE_INTEGER,
        opts.limit,
      ])
      .map(toDelivery);
  }

  async listPending(): Promise<DeliveryRecord[]> {
    return this.db.all<DeliveryRow>("SELECT * FROM callback_deliveries WHERE state = 'pending' ORDER BY seq").map(toDelivery);
  }

  async listUnqueued(opts: { limit: number; updatedBefore?: number; videoId?: string }): Promise<DeliveryRecord[]> {
    const byVideo = opts.videoId === undefined ? '' : 'AND video_id = ?';
    return this.db
      .all<DeliveryRow>(`SELECT * FROM callback_deliveries WHERE state = 'pending' AND attempt_job = '' AND updated_at < ? ${byVideo} ORDER BY seq LIMIT ?`, [
        opts.updatedBefore ?? Number.MAX_SAFE_INTEGER,
        ...(opts.videoId === undefined ? [] : [opts.videoId]),
        opts.limit,
      ])
      .map(toDelivery);
  }

  async listHeld(opts: { limit: number; dueBefore: number }): Promise<DeliveryRecord[]> {
    return this.db
      .all<DeliveryRow>("SELECT * FROM callback_deliveries WHERE state = 'pending' AND attempt_job <> '' AND next_attempt_at < ? ORDER BY seq LIMIT ?", [
        opts.dueBefore,
        opts.limit,
      ])
      .map(toDelivery);
  }

  async claimAttempt(id: string, expect: { series: number; seriesAttempts: number }, jobId: string): Promise<boolean> {
    await this.db.write([
      [
        "UPDATE callback_deliveries SET attempt_job = ? WHERE id = ? AND state = 'pending' AND series = ? AND series_attempts = ? AND attempt_job = ''",
        [jobId, id, expect.series, expect.seriesAttempts],
      ],
    ]);
    return this.db.get<{ n: number }>(
      "SELECT 1 AS n FROM callback_deliveries WHERE id = ? AND state = 'pending' AND series = ? AND series_attempts = ? AND attempt_job = ?",
      [id, expect.series, expect.seriesAttempts, jobId],
    ) !== undefined;
  }

  async releaseAttempt(id: string, jobId: string): Promise<boolean> {
    const [changed] = await this.db.write([["UPDATE callback_deliveries SET attempt_job = '' WHERE id = ? AND attempt_job = ?", [id, jobId]]]);
    return changed === 1;
  }

  async update(id: string, patch: DeliveryPatch, expect?: { series: number; seriesAttempts: number; attemptJob?: string }): Promise<boolean> {
    const { sets, params } = patchSql(patch);
    if (sets.length === 0) return false;
    let where = 'id = ?';
    params.push(id);
    if (expect) (where += ' AND series = ? AND series_attempts = ?'), params.push(expect.series, expect.seriesAttempts);
    if (expect?.attemptJob !== undefined) (where += " AND attempt_job IN ('', ?)"), params.push(expect.attemptJob);
    const [changed] = await this.db.write([[`UPDATE callback_deliveries SET ${sets.join(', ')} WHERE ${where}`, params]]);
    return changed === 1;
  }

  async recordAttempt(a: AttemptRecord, patch: DeliveryPatch): Promise<boolean> {
    // sql.js runs in this thread: nothing can change the row between this check and the write.
    const expected = this.db.get<{ n: number }>(
      "SELECT 1 AS n FROM callback_deliveries WHERE id = ? AND state = 'pending' AND series = ? AND series_attempts = ?",
      [a.deliveryId, a.series, a.attempt - 1],
    );
    const ops: Array<[string, SqlParam[]]> = [
      [
        `INSERT OR IGNORE INTO callback_attempts (delivery_id, series, attempt, at, url, http_status, error, latency_ms, response_excerpt, ok)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [a.deliveryId, a.series, a.attempt, a.at, a.url, a.httpStatus, a.error, a.latencyMs, a.responseExcerpt, a.ok ? 1 : 0],
      ],
    ];
    if (expected) {
      const { sets, params } = patchSql({ ...patch, seriesAttempts: a.attempt, attemptJob: '' });
      ops.push([`UPDATE callback_deliveries SET ${sets.join(', ')} WHERE id = ?`, [...params, a.deliveryId]]);
    }
    await this.db.write(ops);
    return expected !== undefined;
  }

  async attempts(deliveryIds: string[]): Promise<AttemptRecord[]> {
    if (deliveryIds.length === 0) return [];
    return this.db
      .all<AttemptRow>(
        `SELECT * FROM callback_attempts WHERE delivery_id IN (${deliveryIds.map(() => '?').join(', ')}) ORDER BY delivery_id, series, attempt`,
        deliveryIds,
      )
      .map(toAttempt);
  }

  async missingStatusDeliveries(
    endStates: number[],
    slice: { afterVideoId?: string; videos: number },
  ): Promise<{ missing: MissingDelivery[]; next?: string }> {
    const after = slice.afterVideoId ?? '';
    // The slice's last id: a walk of `videos` entries of the primary key index.
    const last = this.db.get<{ id: string }>('SELECT id FROM videos WHERE id > ? ORDER BY id LIMIT 1 OFFSET ?', [after, Math.max(0, slice.videos - 1)])?.id;
    if (endStates.length === 0) return { missing: [], next: last };
    const marks = endStates.map(() => '?').join(', ');
    // The latest real change (not a move to the same status) of each video now in an end state.
    const missing = this.db
      .all<{ app_id: string; video_id: string; to_status: number; at: number }>(
        `SELECT v.app_id, v.id AS video_id, h.to_status, h.at
         FROM videos v
         JOIN video_status_history h ON h.rowid = (
           SELECT h2.rowid FROM video_status_history h2
           WHERE h2.video_id = v.id AND (h2.from_status IS NULL OR h2.from_status <> h2.to_status)
           ORDER BY h2.at DESC, h2.rowid DESC LIMIT 1)
         WHERE v.id > ? ${last === undefined ? '' : 'AND v.id <= ?'} AND v.status IN (${marks}) AND h.to_status = v.status
           AND NOT EXISTS (SELECT 1 FROM callback_deliveries d
                           WHERE d.kind = 'status' AND d.video_id = v.id AND d.status_at = h.at AND d.video_status = h.to_status)
         ORDER BY h.at`,
        [after, ...(last === undefined ? [] : [last]), ...endStates],
      )
      .map((r) => ({ appId: r.app_id, videoId: r.video_id, videoStatus: r.to_status, statusAt: r.at }));
    return { missing, next: last };
  }

  async maxSeq(): Promise<number> {
    return Number(this.db.get<{ m: number | null }>('SELECT MAX(seq) AS m FROM callback_deliveries')?.m ?? 0);
  }
}
