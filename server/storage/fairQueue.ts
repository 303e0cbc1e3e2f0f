/**
 * The queue's fair share (issue 12, items 6 and 8: download and transcode slots shared fairly
 * between applications): the claim's SQL and the list's order, one text for both engines
 * (sqljsJobStore.ts and storage/postgres/postgresJobStore.ts), so that they cannot drift apart.
 * The rules are JobStore.claimNext's; test/contracts/jobStore.contract.ts holds both engines to them.
 *
 * Each claim stamps its job with `claim_seq`, one more than any before it: an application's
 * highest is when it was last served. With one slot every claim finds no job running, so "fewest
 * running" alone would fall back to the oldest job first, and an application that queued 500
 * would still go first 500 times; the least recently served application going first is what
 * makes one slot take turns.
 */

import type { JobFilter, JobRecord, JobState } from './jobRecords.js';

/** Per application with queued jobs of a type: its jobs of that type running, and its last claim. */
export interface QueueFigures {
  type: string;
  appId: string;
  running: number;
  /** The highest claim_seq of its jobs of that type (0: never served). */
  served: number;
}

/**
 * The figures of every application with queued jobs, as rows `type, app_id, running, served`;
 * `typeFilter` is '' or an `AND type IN (…)` clause.
 */
export function queueFiguresSql(typeFilter: string): string {
  return `SELECT w.type, w.app_id,
    (SELECT COUNT(*) FROM jobs r WHERE r.state = 'running' AND r.type = w.type AND r.app_id = w.app_id) AS running,
    COALESCE((SELECT MAX(x.claim_seq) FROM jobs x WHERE x.type = w.type AND x.app_id = w.app_id), 0) AS served
  FROM (SELECT DISTINCT type, app_id FROM jobs WHERE state = 'queued' ${typeFilter}) w`;
}

/** What ordering a queued job needs of it. */
export type QueuedKey = Pick<JobRecord, 'id' | 'type' | 'appId' | 'priority' | 'seq'>;

/**
 * Queued jobs in the order the claims would take them if none finished (JobStore.list): by
 * priority, then turn (its application's running jobs of its type, plus its application's jobs of
 * that type queued before it), then, at one turn, applications with more running first (the
 * others have been served since, in that order), then the least recently served, then seq. With
 * one priority throughout this is exactly the claims' order; across priorities, priority first.
 */
export function fairQueueOrder<K extends QueuedKey>(queued: K[], figures: QueueFigures[]): K[] {
  const byApp = new Map(figures.map((f) => [`${f.type}\n${f.appId}`, f]));
  const ofApp = (k: QueuedKey) => byApp.get(`${k.type}\n${k.appId}`) ?? { running: 0, served: 0 };
  const rank = new Map<string, number>();
  const seen = new Map<string, number>();
  for (const k of [...queued].sort((a, b) => b.priority - a.priority || a.seq - b.seq)) {
    const app = `${k.type}\n${k.appId}`;
    const n = seen.get(app) ?? 0;
    rank.set(k.id, n);
    seen.set(app, n + 1);
  }
  const keyed = queued.map((k) => {
    const f = ofApp(k);
    return { k, turn: f.running + rank.get(k.id)!, running: f.running, served: f.served };
  });
  keyed.sort((a, b) => b.k.priority - a.k.priority || a.turn - b.turn || b.running - a.running || a.served - b.served || a.k.seq - b.k.seq);
  return keyed.map((x) => x.k);
}

/** What {@link listInQueueOrder} needs of an engine. */
export interface QueueListParts {
  /** Jobs of `filter` by the stored order: priority then seq for live ones, most recently updated first for the rest. */
  plain(filter: JobFilter & { states: JobState[]; limit: number }): Promise<JobRecord[]>;
  /**
   * The first `limit` queued jobs of `filter` of one application and type, in its own order
   * (priority, then seq), only what ordering needs.
   */
  queuedKeys(filter: JobFilter, type: string, appId: string, limit: number): Promise<QueuedKey[]>;
  /** {@link QueueFigures} of every application with queued jobs of one of `types` (any, if empty). */
  figures(types: string[]): Promise<QueueFigures[]>;
  /** Full records of these ids, in any order. */
  byIds(ids: string[]): Promise<JobRecord[]>;
}

const ALL_STATES: readonly JobState[] = ['running', 'queued', 'succeeded', 'failed', 'cancelled'];
const ENDED: readonly JobState[] = ['succeeded', 'failed', 'cancelled'];

/**
 * JobStore.list for both engines: running jobs, then queued ones in {@link fairQueueOrder}, then
 * the most recently finished. The queue's order is computed here rather than in SQL (a window
 * over the whole queue cost sql.js 0.2 s for 20,000 jobs), from at most `limit` jobs of each
 * application: its cost grows with the page and the number of applications, not the queue.
 */
export async function listInQueueOrder(filter: JobFilter, parts: QueueListParts): Promise<JobRecord[]> {
  const states = filter.states?.length ? filter.states : ALL_STATES;
  const limit = filter.limit ?? 500;
  // The queued jobs are read before the running ones, though listed after them: a job moves from
  // queued to running, and a claim that falls between two reads (each is its own await) would
  // otherwise hide it from both, so that "is a job of this video live?" answered no while one was
  // being claimed. Read in this order, a job claimed meanwhile is in both reads: kept once, as running.
  let queued: JobRecord[] = [];
  if (states.includes('queued')) {
    // Only an application's first `limit` jobs can be among the first `limit` of the whole queue.
    const figures = (await parts.figures(filter.types ?? [])).filter((f) => filter.appId === undefined || f.appId === filter.appId);
    const keys = (await Promise.all(figures.map((f) => parts.queuedKeys(filter, f.type, f.appId, limit)))).flat();
    if (keys.length > 0) {
      const chosen = fairQueueOrder(keys, figures).slice(0, limit);
      const rows = new Map((await parts.byIds(chosen.map((k) => k.id))).map((j) => [j.id, j]));
      // Claimed or removed between the two reads: left out here (a claimed one is among the running).
      queued = chosen.flatMap((k) => {
        const j = rows.get(k.id);
        return j && j.state === 'queued' ? [j] : [];
      });
    }
  }
  const out: JobRecord[] = states.includes('running') ? await parts.plain({ ...filter, states: ['running'], limit }) : [];
  const running = new Set(out.map((j) => j.id));
  for (const j of queued) {
    if (out.length >= limit) break;
    if (!running.has(j.id)) out.push(j);
  }
  const ended = states.filter((s) => ENDED.includes(s));
  if (ended.length > 0 && out.length < limit) out.push(...(await parts.plain({ ...filter, states: ended, limit: limit - out.length })));
  return out;
}

/**
 * The fair claim's choice (JobStore.claimNext): selects the one job to claim, or none. `param(i)`
 * names the i-th bound value, counted from 1 (`?1` in SQLite, `$1` in PostgreSQL): the types are
 * values 1 to `typeCount`, now the one after them.
 *
 * Each application's head is its first due job in its own order (priority, then seq); of the
 * heads, the highest priority wins, then the application with fewest running, then the least
 * recently served, then the oldest. Its cost grows with the number of applications, not with the
 * queue's length: the applications are found by skipping through an index one at a time, and
 * each one's head, running count and last claim are index look-ups.
 */
export function fairClaimSql(param: (i: number) => string, typeCount: number): string {
  const types = Array.from({ length: typeCount }, (_, i) => param(i + 1)).join(', ');
  const now = param(typeCount + 1);
  return `WITH RECURSIVE apps(a) AS (
      SELECT MIN(app_id) FROM jobs WHERE state = 'queued' AND type IN (${types})
      UNION ALL
      SELECT (SELECT MIN(app_id) FROM jobs WHERE state = 'queued' AND type IN (${types}) AND app_id > apps.a)
      FROM apps WHERE apps.a IS NOT NULL),
    heads AS (
      SELECT (SELECT j.id FROM jobs j WHERE j.state = 'queued' AND j.type IN (${types}) AND j.app_id = apps.a AND j.run_after <= ${now}
                ORDER BY j.priority DESC, j.seq LIMIT 1) AS id,
             (SELECT COUNT(*) FROM jobs r WHERE r.state = 'running' AND r.type IN (${types}) AND r.app_id = apps.a) AS running,
             COALESCE((SELECT MAX(x.claim_seq) FROM jobs x WHERE x.type IN (${types}) AND x.app_id = apps.a), 0) AS served
      FROM apps WHERE apps.a IS NOT NULL)
  SELECT j.* FROM heads h JOIN jobs j ON j.id = h.id
  ORDER BY j.priority DESC, h.running, h.served, j.seq
  LIMIT 1`;
}

/** The claim's stamp (see above): one more than any job's so far. */
export const NEXT_CLAIM_SEQ = '(SELECT COALESCE(MAX(claim_seq), 0) + 1 FROM jobs)';
