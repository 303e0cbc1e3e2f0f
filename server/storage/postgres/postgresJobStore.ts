import { NEXT_CLAIM_SEQ, fairClaimSql, queueFiguresSql, listInQueueOrder, type QueuedKey } from '../fairQueue.js';
import type { JobFilter, JobRecord, JobState, JobStore } from '../jobRecords.js';
import { JOB_COLUMNS as COLUMNS, toJob, type JobRow } from '../rows/jobRows.js';
import type { PgParam, PostgresDatabase } from './postgresDatabase.js';

/** The key of the advisory lock claims take (a fixed 64-bit number: "vop-clm1" in ASCII). */
const CLAIM_LOCK_KEY = '8534163159134268721';

/** Rows per INSERT of insertMany (16 parameters each; PostgreSQL takes up to 65,535 per statement). */
const INSERT_ROWS_PER_STATEMENT = 1_000;

/**
 * Jobs in PostgreSQL. `seq` comes from the table's sequence (the caller's value is not used), so
 * nodes enqueueing at once never share one. claimNext runs under an advisory lock, so two nodes'
 * claims never get the same job and each sees the other's running jobs (the fair share). Which
 * node holds a running job is its `lease`, whose liveness the shared queue keeps (turnQueue.ts).
 */
export class PostgresJobStore implements JobStore {
  constructor(private readonly db: PostgresDatabase) {}

  async insert(j: JobRecord): Promise<void> {
    await this.insertMany([j]);
  }

  async insertMany(jobs: JobRecord[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.db.transaction(async (tx) => {
      for (let i = 0; i < jobs.length; i += INSERT_ROWS_PER_STATEMENT) {
        const params: PgParam[] = [];
        const rows = jobs.slice(i, i + INSERT_ROWS_PER_STATEMENT).map((j) => {
          const first = params.length + 1;
          params.push(j.id, j.type, j.videoId, j.appId, JSON.stringify(j.payload), j.state, j.priority, j.attempts, j.maxAttempts, j.runAfter,
            j.progress, j.error, j.createdAt, j.startedAt, j.finishedAt, j.updatedAt);
          const at = (k: number) => `$${first + k}`;
          // An app_id of '' is the video's application (JobRecord.appId).
          const appId = `COALESCE(NULLIF(${at(3)}, ''), (SELECT v.app_id FROM videos v WHERE v.id = ${at(2)}), '')`;
          return `(${Array.from({ length: 16 }, (_, k) => (k === 3 ? appId : at(k))).join(', ')})`;
        });
        // VALUES rows take their seq in order, so a batch keeps its order.
        await tx.query(
          `INSERT INTO jobs (id, type, video_id, app_id, payload, state, priority, attempts, max_attempts, run_after, progress, error,
             created_at, started_at, finished_at, updated_at) VALUES ${rows.join(', ')}`,
          params,
        );
      }
    });
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const { rows } = await this.db.query<JobRow>('SELECT * FROM jobs WHERE id = $1', [id]);
    return rows[0] && toJob(rows[0]);
  }

  async list(filter: JobFilter = {}): Promise<JobRecord[]> {
    return listInQueueOrder(filter, {
      plain: async (f) => {
        const { where, params } = filterSql(f);
        params.push(f.limit);
        const { rows } = await this.db.query<JobRow>(
          `SELECT * FROM jobs ${where}
           ORDER BY CASE state WHEN 'running' THEN 0 WHEN 'queued' THEN 1 ELSE 2 END,
                    CASE WHEN state IN ('running', 'queued') THEN -priority ELSE 0 END,
                    CASE WHEN state IN ('running', 'queued') THEN seq ELSE -updated_at END
           LIMIT $${params.length}`,
          params,
        );
        return rows.map(toJob);
      },
      queuedKeys: async (f, type, appId, limit) => {
        const { where, params } = filterSql({ ...f, states: ['queued'], types: [type], appId });
        params.push(limit);
        const { rows } = await this.db.query<{ id: string; type: string; app_id: string; priority: number; seq: number }>(
          `SELECT id, type, app_id, priority, seq FROM jobs ${where} ORDER BY priority DESC, seq LIMIT $${params.length}`,
          params,
        );
        return rows.map((r): QueuedKey => ({ id: r.id, type: r.type, appId: r.app_id, priority: r.priority, seq: r.seq }));
      },
      figures: async (types) =>
        (
          await this.db.query<{ type: string; app_id: string; running: number; served: number }>(
            queueFiguresSql(types.length ? 'AND type = ANY($1::text[])' : ''),
            types.length ? [types] : [],
          )
        ).rows.map((r) => ({ type: r.type, appId: r.app_id, running: Number(r.running), served: Number(r.served) })),
      byIds: async (ids) => (await this.db.query<JobRow>('SELECT * FROM jobs WHERE id = ANY($1::text[])', [ids])).rows.map(toJob),
    });
  }

  async claimNext(types: string[], now: number, lease = ''): Promise<JobRecord | undefined> {
    if (types.length === 0) return undefined;
    // One claim at a time across nodes (a transaction-scoped advisory lock): each claim sees the
    // running counts the one before it left, so two nodes claiming at once share fairly too, and
    // neither finds the queue empty because the other holds its head row. Claims are one per job
    // start, so waiting for the lock costs nothing that matters.
    return this.db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [CLAIM_LOCK_KEY]);
      const { rows: chosen } = await tx.query<{ id: string }>(
        `SELECT c.id FROM (${fairClaimSql((i) => `$${i}`, types.length)}) c`,
        [...types, now],
      );
      if (!chosen[0]) return undefined;
      const { rows } = await tx.query<JobRow>(
        `UPDATE jobs SET state = 'running', attempts = attempts + 1, started_at = $2, updated_at = $2, progress = 0, lease = $3, claim_seq = ${NEXT_CLAIM_SEQ}
         WHERE id = $1 AND state = 'queued' RETURNING *`,
        [chosen[0].id, now, lease],
      );
      return rows[0] && toJob(rows[0]);
    });
  }

  async takeOver(type: string, turn: string, lease: string, now: number): Promise<JobRecord | undefined> {
    const { rows } = await this.db.query<JobRow>(
      `UPDATE jobs SET lease = $2, updated_at = $3 WHERE state = 'running' AND type = $5 AND left(lease, $4) = $1 || '/' RETURNING *`,
      [turn, lease, now, turn.length + 1, type],
    );
    return rows[0] && toJob(rows[0]);
  }

  async update(id: string, patch: Partial<Omit<JobRecord, 'id' | 'type' | 'createdAt'>>, fromStates?: JobState[], lease?: string): Promise<boolean> {
    const sets: string[] = [];
    const params: PgParam[] = [];
    for (const [k, v] of Object.entries(patch)) {
      const col = COLUMNS[k];
      if (!col || v === undefined) continue;
      params.push(k === 'payload' ? JSON.stringify(v) : (v as PgParam));
      sets.push(`${col} = $${params.length}`);
    }
    if (sets.length === 0) return false;
    params.push(id);
    let where = `id = $${params.length}`;
    if (fromStates?.length) (params.push(fromStates), (where += ` AND state = ANY($${params.length}::text[])`));
    if (lease !== undefined) (params.push(lease), (where += ` AND lease = $${params.length}`));
    const { rowCount } = await this.db.query(`UPDATE jobs SET ${sets.join(', ')} WHERE ${where}`, params);
    return rowCount === 1;
  }

  async countByTypeAndState(states?: JobState[]): Promise<Array<{ type: string; state: JobState; count: number }>> {
    const { rows } = await this.db.query<{ type: string; state: JobState; n: number }>(
      `SELECT type, state, COUNT(*) AS n FROM jobs ${states?.length ? 'WHERE state = ANY($1::text[])' : ''} GROUP BY type, state`,
      states?.length ? [states] : [],
    );
    return rows.map((r) => ({ type: r.type, state: r.state, count: r.n }));
  }

  async maxSeq(): Promise<number> {
    // The sequence's last value: at least every seq stored, whichever node took it.
    const { rows } = await this.db.query<{ n: number }>(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM jobs_seq_seq`);
    return rows[0]?.n ?? 0;
  }

  async nextRunAfter(types: string[]): Promise<number | undefined> {
    if (types.length === 0) return undefined;
    const { rows } = await this.db.query<{ t: number | null }>(`SELECT MIN(run_after) AS t FROM jobs WHERE state = 'queued' AND type = ANY($1::text[])`, [types]);
    return rows[0]?.t ?? undefined;
  }
}

/** The WHERE clause of a filter (without its limit), its values numbered from $1. */
function filterSql(filter: JobFilter): { where: string; params: PgParam[] } {
  const where: string[] = [];
  const params: PgParam[] = [];
  if (filter.states?.length) (params.push(filter.states), where.push(`state = ANY($${params.length}::text[])`));
  if (filter.types?.length) (params.push(filter.types), where.push(`type = ANY($${params.length}::text[])`));
  if (filter.videoId !== undefined) (params.push(filter.videoId), where.push(`video_id = $${params.length}`));
  if (filter.appId !== undefined) (params.push(filter.appId), where.push(`app_id = $${params.length}`));
  return { where: where.length ? `WHERE ${where.join(' AND ')}` : '', params };
}
