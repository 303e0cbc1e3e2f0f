import type { DurableDatabase, SqlParam } from './durableDatabase.js';
import { NEXT_CLAIM_SEQ, fairClaimSql, queueFiguresSql, listInQueueOrder, type QueuedKey } from '../fairQueue.js';
import type { JobFilter, JobRecord, JobState, JobStore } from '../jobRecords.js';
import { JOB_COLUMNS as COLUMNS, toJob, type JobRow } from '../rows/jobRows.js';

/** Jobs in the embedded sql.js database (table `jobs`, migration 2). */
export class SqlJsJobStore implements JobStore {
  constructor(private readonly db: DurableDatabase) {}

  async insert(j: JobRecord): Promise<void> {
    await this.insertMany([j]);
  }

  async insertMany(jobs: JobRecord[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.db.write(
      jobs.map((j): [string, SqlParam[]] => [
        // An appId of '' is the video's application (JobRecord.appId).
        `INSERT INTO jobs (id, type, video_id, app_id, payload, state, priority, seq, attempts, max_attempts, run_after, progress, error,
           created_at, started_at, finished_at, updated_at)
         VALUES (?, ?, ?, COALESCE(NULLIF(?, ''), (SELECT app_id FROM videos WHERE id = ?), ''), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [j.id, j.type, j.videoId, j.appId, j.videoId, JSON.stringify(j.payload), j.state, j.priority, j.seq, j.attempts, j.maxAttempts, j.runAfter,
          j.progress, j.error, j.createdAt, j.startedAt, j.finishedAt, j.updatedAt],
      ]),
    );
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const r = this.db.get<JobRow>('SELECT * FROM jobs WHERE id = ?', [id]);
    return r ? toJob(r) : undefined;
  }

  async list(filter: JobFilter = {}): Promise<JobRecord[]> {
    return listInQueueOrder(filter, {
      plain: async (f) => {
        const { where, params } = this.filterSql(f);
        const sql = `SELECT * FROM jobs ${where}
          ORDER BY CASE state WHEN 'running' THEN 0 WHEN 'queued' THEN 1 ELSE 2 END,
                   CASE WHEN state IN ('running', 'queued') THEN -priority ELSE 0 END,
                   CASE WHEN state IN ('running', 'queued') THEN seq ELSE -updated_at END
          LIMIT ?`;
        return this.db.all<JobRow>(sql, [...params, f.limit]).map(toJob);
      },
      queuedKeys: async (f, type, appId, limit) => {
        const { where, params } = this.filterSql({ ...f, states: ['queued'], types: [type], appId });
        return this.db
          .all<{ id: string; type: string; app_id: string; priority: number; seq: number }>(
            `SELECT id, type, app_id, priority, seq FROM jobs ${where} ORDER BY priority DESC, seq LIMIT ?`,
            [...params, limit],
          )
          .map((r): QueuedKey => ({ id: r.id, type: r.type, appId: r.app_id, priority: r.priority, seq: r.seq }));
      },
      figures: async (types) =>
        this.db
          .all<{ type: string; app_id: string; running: number; served: number }>(
            queueFiguresSql(types.length ? `AND type IN (${types.map(() => '?').join(', ')})` : ''),
            types,
          )
          .map((r) => ({ type: r.type, appId: r.app_id, running: Number(r.running), served: Number(r.served) })),
      byIds: async (ids) => {
        const out: JobRecord[] = [];
        // SQLite takes up to 32,766 bound values a statement.
        for (let i = 0; i < ids.length; i += 10_000) {
          const chunk = ids.slice(i, i + 10_000);
          out.push(...this.db.all<JobRow>(`SELECT * FROM jobs WHERE id IN (${chunk.map(() => '?').join(', ')})`, chunk).map(toJob));
        }
        return out;
      },
    });
  }

  /** The WHERE clause of a filter (without its limit). */
  private filterSql(filter: JobFilter): { where: string; params: SqlParam[] } {
    const where: string[] = [];
    const params: SqlParam[] = [];
    if (filter.states?.length) (where.push(`state IN (${filter.states.map(() => '?').join(', ')})`), params.push(...filter.states));
    if (filter.types?.length) (where.push(`type IN (${filter.types.map(() => '?').join(', ')})`), params.push(...filter.types));
    if (filter.videoId !== undefined) (where.push('video_id = ?'), params.push(filter.videoId));
    if (filter.appId !== undefined) (where.push('app_id = ?'), params.push(filter.appId));
    return { where: where.length ? `WHERE ${where.join(' AND ')}` : '', params };
  }

  async claimNext(types: string[], now: number, lease = ''): Promise<JobRecord | undefined> {
    if (types.length === 0) return undefined;
    const row = this.db.get<JobRow>(fairClaimSql((i) => `?${i}`, types.length), [...types, now]);
    if (!row) return undefined;
    // sql.js runs in this thread: nothing can claim the row between the SELECT and this UPDATE.
    await this.db.write([
      [
        `UPDATE jobs SET state = 'running', attempts = attempts + 1, started_at = ?, updated_at = ?, progress = 0, lease = ?, claim_seq = ${NEXT_CLAIM_SEQ} WHERE id = ?`,
        [now, now, lease, row.id],
      ],
    ]);
    return toJob({ ...row, state: 'running', attempts: row.attempts + 1, started_at: now, updated_at: now, progress: 0, lease });
  }

  async takeOver(type: string, turn: string, lease: string, now: number): Promise<JobRecord | undefined> {
    const row = this.db.get<JobRow>(`SELECT * FROM jobs WHERE state = 'running' AND type = ? AND substr(lease, 1, ?) = ?`, [type, turn.length + 1, `${turn}/`]);
    if (!row) return undefined;
    await this.db.write([[`UPDATE jobs SET lease = ?, updated_at = ? WHERE id = ?`, [lease, now, row.id]]]);
    return toJob({ ...row, lease, updated_at: now });
  }

  async update(id: string, patch: Partial<Omit<JobRecord, 'id' | 'type' | 'createdAt'>>, fromStates?: JobState[], lease?: string): Promise<boolean> {
    const sets: string[] = [];
    const params: SqlParam[] = [];
    for (const [k, v] of Object.entries(patch)) {
      const col = COLUMNS[k];
      if (!col) continue;
      sets.push(`${col} = ?`);
      params.push(k === 'payload' ? JSON.stringify(v) : (v as SqlParam));
    }
    if (sets.length === 0) return false;
    params.push(id);
    let where = 'id = ?';
    if (fromStates?.length) (where += ` AND state IN (${fromStates.map(() => '?').join(', ')})`), params.push(...fromStates);
    if (lease !== undefined) (where += ' AND lease = ?'), params.push(lease);
    const [changed] = await this.db.write([[`UPDATE jobs SET ${sets.join(', ')} WHERE ${where}`, params]]);
    return changed === 1;
  }

  async countByTypeAndState(states?: JobState[]): Promise<Array<{ type: string; state: JobState; count: number }>> {
    const where = states?.length ? `WHERE state IN (${states.map(() => '?').join(', ')})` : '';
    return this.db
      .all<{ type: string; state: JobState; n: number }>(`SELECT type, state, COUNT(*) AS n FROM jobs ${where} GROUP BY type, state`, states ?? [])
      .map((r) => ({ type: r.type, state: r.state, count: Number(r.n) }));
  }

  async maxSeq(): Promise<number> {
    return Number(this.db.get<{ m: number | null }>('SELECT MAX(seq) AS m FROM jobs')?.m ?? 0);
  }

  async nextRunAfter(types: string[]): Promise<number | undefined> {
    if (types.length === 0) return undefined;
    const r = this.db.get<{ t: number | null }>(
      `SELECT MIN(run_after) AS t FROM jobs WHERE state = 'queued' AND type IN (${types.map(() => '?').join(', ')})`,
      types,
    );
    return r?.t ?? undefined;
  }
}
