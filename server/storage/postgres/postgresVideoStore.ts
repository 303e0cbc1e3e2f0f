import crypto from 'node:crypto';
import { CALLBACK_STATUSES, outboxStateSql } from '../outbox.js';
import { type LadderState, type Page, type RenditionRecord, type StatusChange, type TextTrackRecord, type VideoRecord, type VideoSearch, type VideoStore } from '../types.js';
import { toTextTrack, toVideo, type TextTrackRow, type VideoRow } from '../rows/metadataRows.js';
import type { PgParam, PostgresDatabase } from './postgresDatabase.js';
import { KeptPages, type ListPage } from './keptPages.js';
import { ReadBatcher } from './readBatcher.js';
import { BY_STATUS_SQL, searchTotal, statusTotal, type CountQuery } from './videoCounts.js';

/**
 * Videos in PostgreSQL. Several nodes write the same rows, so a copy kept here is only used once
 * the database says it is still the current one (the house rule: no per-process truth in
 * cluster mode). The applications are in postgresAppStore.ts.
 */

/** Newest first, ties by id: the order of every list (VideoStore.listByApp). */
const NEWEST_FIRST = 'ORDER BY created_at DESC, id DESC';

/** A rendition's row (in a video's detail read: as JSON, whose numbers are numbers too). */
interface RenditionRow {
  video_id: string;
  label: string;
  width: number;
  height: number;
  bitrate_kbps: number;
  file: string;
  bytes: number;
}

const toRendition = (r: RenditionRow): RenditionRecord => ({
  videoId: r.video_id, label: r.label, width: r.width, height: r.height, bitrateKbps: r.bitrate_kbps, file: r.file, bytes: Number(r.bytes),
});

/** Videos ($1, an array of ids) and their renditions, highest bitrate first (VideoStore.renditions), in one statement. */
const VIDEOS_WITH_RENDITIONS_SQL = `
  SELECT v.*, COALESCE((SELECT json_agg(r ORDER BY r.bitrate_kbps DESC, r.label) FROM renditions r WHERE r.video_id = v.id), '[]'::json) AS vop_renditions
  FROM videos v WHERE v.id = ANY($1::text[])`;

/** The versions of applications' lists ($1, an array of AppIds; see keptPages.ts); one with no videos yet has no row. */
const APP_VERSIONS_SQL = 'SELECT app_id, SUM(changes)::bigint AS version FROM video_counts WHERE app_id = ANY($1::text[]) GROUP BY app_id';

/**
 * A list page (limit $2, offset $3) of application $1 with `total` (of `counted`) and the
 * application's version, one row per video (or one row of nulls but the two for an empty page).
 * The page itself is read as before, along videos_by_app (or videos_by_app_user) backwards: a
 * walk of that index alone to the page's ids, then the page's rows, measured no faster
 * (EXPLAIN ANALYZE, 20,000 videos: the index's entries still sent PostgreSQL to each row to
 * check it is visible, and the planner sorted the whole table for the last page).
 */
const listPageSql = (where: string, counted: string) => `
  WITH c AS (SELECT (${counted}) AS total, (SELECT COALESCE(SUM(changes), 0)::bigint FROM video_counts WHERE app_id = $1) AS version)
  SELECT c.total AS vop_total, c.version AS vop_version, v.*
  FROM c LEFT JOIN LATERAL (SELECT * FROM videos WHERE ${where} ${NEWEST_FIRST} LIMIT $2 OFFSET $3) v ON TRUE
  ORDER BY v.created_at DESC, v.id DESC`;
const APP_PAGE_SQL = listPageSql('app_id = $1', 'SELECT COALESCE(SUM(n), 0)::bigint FROM video_counts WHERE app_id = $1');
const USER_PAGE_SQL = listPageSql('app_id = $1 AND create_user = $4', 'SELECT COALESCE(SUM(n), 0)::bigint FROM video_user_counts WHERE app_id = $1 AND create_user = $4');

export class PostgresVideoStore implements VideoStore {
  private readonly pages = new KeptPages();
  /** List pages being read, by key, with the version each is read at. */
  private readonly pageReads = new Map<string, Promise<{ version: number; page: ListPage }>>();
  /** Detail reads, gathered (readBatcher.ts). */
  private readonly details = new ReadBatcher(async (ids) => {
    const { rows } = await this.db.query<VideoRow & { vop_renditions: RenditionRow[] }>(VIDEOS_WITH_RENDITIONS_SQL, [ids], 'vop_video_details');
    return new Map(rows.map((r) => [r.id, { video: toVideo(r), renditions: r.vop_renditions.map(toRendition) }]));
  });
  /** Reads of applications' versions (see keptPages.ts), gathered. */
  private readonly versions = new ReadBatcher(async (appIds) => {
    const { rows } = await this.db.query<{ app_id: string; version: number }>(APP_VERSIONS_SQL, [appIds], 'vop_app_versions');
    return new Map(rows.map((r) => [r.app_id, r.version]));
  });

  constructor(private readonly db: PostgresDatabase) {}

  async insert(v: VideoRecord): Promise<void> {
    // The row and its first history entry are one statement, so one transaction.
    await this.db.query(
      `WITH v AS (
         INSERT INTO videos (id, app_id, title, description, tags, actors, create_user, status, status_reason,
           source_type, source_url, duration, cover_file, source_file, keep_source, ladder, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) RETURNING id, status, created_at)
       INSERT INTO video_status_history (video_id, at, from_status, to_status, reason) SELECT id, created_at, NULL, status, '' FROM v`,
      [v.id, v.appId, v.title, v.description, v.tags, v.actors, v.createUser, v.status, v.statusReason,
        v.sourceType, v.sourceUrl, v.duration, v.coverFile, v.sourceFile, v.keepSource, v.ladder ?? '', v.createdAt, v.updatedAt],
      'vop_video_insert',
    );
  }

  async get(id: string): Promise<VideoRecord | undefined> {
    const { rows } = await this.db.query<VideoRow>('SELECT * FROM videos WHERE id = $1', [id], 'vop_video_get');
    return rows[0] && toVideo(rows[0]);
  }

  async getWithRenditions(id: string): Promise<{ video: VideoRecord; renditions: RenditionRecord[] } | undefined> {
    const found = await this.details.load(id);
    // Each caller its own objects: two calls for one video in a batch share a row.
    return found && { video: { ...found.video }, renditions: found.renditions.map((r) => ({ ...r })) };
  }

  async listByApp(appId: string, page: Page): Promise<{ total: number; items: VideoRecord[] }> {
    return this.listPage(`app\u0000${appId}\u0000${page.offset}\u0000${page.limit}`, appId, page, 'vop_list_app', APP_PAGE_SQL, []);
  }

  async listByAppAndUser(appId: string, createUser: string, page: Page): Promise<{ total: number; items: VideoRecord[] }> {
    return this.listPage(`user\u0000${appId}\u0000${page.offset}\u0000${page.limit}\u0000${createUser}`, appId, page, 'vop_list_user', USER_PAGE_SQL, [createUser]);
  }

  /**
   * A list page of `appId`: the one kept, if the application's videos are unchanged since it was
   * read (one short read of the kept counts), else read with its total and that version in one
   * statement (one snapshot), and kept. Calls that miss together share one read of the page, if
   * it is at least as new as the version they found (versions only grow), rather than each
   * reading it again.
   */
  private async listPage(key: string, appId: string, page: Page, name: string, sql: string, extra: PgParam[]): Promise<{ total: number; items: VideoRecord[] }> {
    if (this.pages.has(key) || this.pageReads.has(key)) {
      const version = (await this.versions.load(appId)) ?? 0;
      const kept = this.pages.get(key, version);
      if (kept) return kept;
      const reading = this.pageReads.get(key);
      if (reading) {
        const read = await reading;
        if (read.version >= version) return read.page;
      }
    }
    const reading = (async () => {
      const { rows } = await this.db.query<VideoRow & { vop_total: number; vop_version: number }>(sql, [appId, page.limit, page.offset, ...extra], name);
      const version = rows[0]?.vop_version ?? 0;
      const items = rows[0]?.id === null ? [] : rows.map(toVideo);
      return { version, page: this.pages.keep(key, version, rows[0]?.vop_total ?? 0, items) };
    })();
    this.pageReads.set(key, reading);
    try {
      return (await reading).page;
    } finally {
      if (this.pageReads.get(key) === reading) this.pageReads.delete(key);
    }
  }

  async setStatus(id: string, to: number, opts: { from?: number[]; reason?: string; now?: number } = {}): Promise<boolean> {
    const now = opts.now ?? Date.now();
    const guarded = opts.from !== undefined && opts.from.length > 0;
    const { state, lastError } = outboxStateSql('TRUE');
    // One statement, so one transaction: the row is locked, checked against `from`, moved, its
    // history row written with the status it had and, for an end state, the status callback's
    // delivery row (storage/outbox.ts; none for a move to the same status). A racing move waits
    // for the lock and then finds the row no longer in `from` (READ COMMITTED re-checks a locked
    // row's condition). The delivery's unique index on the change makes a second one impossible.
    const { rowCount } = await this.db.query(
      `WITH old AS (SELECT id, status FROM videos WHERE id = $1 ${guarded ? 'AND status = ANY($7::int[])' : ''} FOR UPDATE),
            moved AS (UPDATE videos v SET status = $2, status_reason = $3, updated_at = $4 FROM old WHERE v.id = old.id
                      RETURNING v.id, v.app_id, old.status AS from_status),
            outbox AS (INSERT INTO callback_deliveries (id, app_id, kind, video_id, video_status, status_at, state, series, series_attempts,
                         next_attempt_at, last_error, created_at, updated_at)
                       SELECT $5, m.app_id, 'status', m.id, $2, $4, ${state}, 1, 0, CASE WHEN ${state} = 'pending' THEN $4::bigint END, ${lastError}, $4, $4
                       FROM moved m JOIN apps a ON a.app_id = m.app_id
                       WHERE $2 = ANY($6::int[]) AND m.from_status <> $2
                       ON CONFLICT DO NOTHING)
       INSERT INTO video_status_history (video_id, at, from_status, to_status, reason) SELECT id, $4, from_status, $2, $3 FROM moved`,
      [id, to, opts.reason ?? '', now, crypto.randomUUID(), [...CALLBACK_STATUSES], ...(guarded ? [opts.from!] : [])],
    );
    return rowCount === 1;
  }

  async statusHistory(id: string): Promise<StatusChange[]> {
    const { rows } = await this.db.query<{ at: number; from_status: number | null; to_status: number; reason: string }>(
      'SELECT at, from_status, to_status, reason FROM video_status_history WHERE video_id = $1 ORDER BY at, id',
      [id],
    );
    return rows.map((r) => ({ at: r.at, from: r.from_status, to: r.to_status, reason: r.reason }));
  }

  async claimSource(id: string, sourceFile: string): Promise<boolean> {
    const { rowCount } = await this.db.query("UPDATE videos SET source_file = $2 WHERE id = $1 AND source_file = ''", [id, sourceFile]);
    return rowCount === 1;
  }

  async releaseSource(id: string, sourceFile: string): Promise<void> {
    await this.db.query("UPDATE videos SET source_file = '' WHERE id = $1 AND source_file = $2", [id, sourceFile]);
  }

  async updateMedia(id: string, patch: Partial<Pick<VideoRecord, 'sourceFile' | 'keepSource' | 'duration' | 'coverFile' | 'ladder'>>): Promise<void> {
    const sets: string[] = [];
    const params: PgParam[] = [];
    const set = (col: string, v: PgParam) => (params.push(v), sets.push(`${col} = $${params.length}`));
    if (patch.sourceFile !== undefined) set('source_file', patch.sourceFile);
    if (patch.keepSource !== undefined) set('keep_source', patch.keepSource);
    if (patch.duration !== undefined) set('duration', Math.round(patch.duration));
    if (patch.coverFile !== undefined) set('cover_file', patch.coverFile);
    if (patch.ladder !== undefined) set('ladder', patch.ladder);
    if (sets.length === 0) return;
    params.push(id);
    await this.db.query(`UPDATE videos SET ${sets.join(', ')} WHERE id = $${params.length}`, params);
  }

  async setRenditions(videoId: string, renditions: RenditionRecord[]): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query('DELETE FROM renditions WHERE video_id = $1', [videoId]);
      if (renditions.length === 0) return;
      const params: PgParam[] = [];
      const rows = renditions.map((r) => {
        params.push(videoId, r.label, r.width, r.height, r.bitrateKbps, r.file, r.bytes);
        const n = params.length;
        return `($${n - 6}, $${n - 5}, $${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}, $${n})`;
      });
      await tx.query(`INSERT INTO renditions (video_id, label, width, height, bitrate_kbps, file, bytes) VALUES ${rows.join(', ')}`, params);
    });
  }

  async renditions(videoId: string): Promise<RenditionRecord[]> {
    const { rows } = await this.db.query<RenditionRow>('SELECT * FROM renditions WHERE video_id = $1 ORDER BY bitrate_kbps DESC, label', [videoId], 'vop_renditions');
    return rows.map(toRendition);
  }

  async textTracks(videoId: string): Promise<TextTrackRecord[]> {
    const { rows } = await this.db.query<TextTrackRow>('SELECT * FROM text_tracks WHERE video_id = $1 ORDER BY created_at, id', [videoId], 'vop_text_tracks');
    return rows.map(toTextTrack);
  }

  async addTextTrack(t: TextTrackRecord, limit: number): Promise<boolean> {
    // The count and the insert in one statement. Two adds on two nodes at once may both count
    // below the limit; the limit bounds one caller's cost, and one over it is no harm.
    const { rowCount } = await this.db.query(
      `INSERT INTO text_tracks (video_id, id, kind, origin, language, label, forced, bytes, created_at)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE (SELECT COUNT(*) FROM text_tracks WHERE video_id = $1 AND kind = $3) < $10`,
      [t.videoId, t.id, t.kind, t.origin, t.language, t.label, t.forced, t.bytes, t.createdAt, limit],
    );
    return rowCount === 1;
  }

  async removeTextTrack(videoId: string, id: string): Promise<TextTrackRecord | undefined> {
    const { rows } = await this.db.query<TextTrackRow>('DELETE FROM text_tracks WHERE video_id = $1 AND id = $2 RETURNING *', [videoId, id]);
    return rows[0] ? toTextTrack(rows[0]) : undefined;
  }

  async setSourceTextTracks(videoId: string, tracks: TextTrackRecord[]): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query("DELETE FROM text_tracks WHERE video_id = $1 AND origin = 'source'", [videoId]);
      for (const t of tracks) {
        await tx.query(
          'INSERT INTO text_tracks (video_id, id, kind, origin, language, label, forced, bytes, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
          [videoId, t.id, t.kind, 'source', t.language, t.label, t.forced, t.bytes, t.createdAt],
        );
      }
    });
  }

  async countByStatus(): Promise<Record<number, number>> {
    const out: Record<number, number> = {};
    for (const r of (await this.db.query<{ status: number; n: number }>(BY_STATUS_SQL)).rows) out[r.status] = r.n;
    return out;
  }

  async oldestInStatus(status: number, limit: number): Promise<{ total: number; items: VideoRecord[] }> {
    const [items, count] = await Promise.all([
      this.db.query<VideoRow>('SELECT * FROM videos WHERE status = $1 ORDER BY created_at, id LIMIT $2', [status, limit]),
      this.db.query<{ n: number }>(statusTotal(status).sql, statusTotal(status).params),
    ]);
    return { total: Number(count.rows[0]?.n ?? 0), items: items.rows.map(toVideo) };
  }

  async idsByStatus(statuses: number[]): Promise<string[]> {
    if (statuses.length === 0) return [];
    const { rows } = await this.db.query<{ id: string }>('SELECT id FROM videos WHERE status = ANY($1::int[]) ORDER BY created_at, id', [statuses]);
    return rows.map((r) => r.id);
  }

  async idsByLadder(state: Exclude<LadderState, ''>): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>('SELECT id FROM videos WHERE ladder = $1 ORDER BY created_at, id', [state]);
    return rows.map((r) => r.id);
  }

  async search(filter: VideoSearch, page: Page): Promise<{ total: number; items: VideoRecord[] }> {
    const where: string[] = [];
    const params: PgParam[] = [];
    const add = (sql: (n: string) => string, v: PgParam) => (params.push(v), where.push(sql(`$${params.length}`)));
    // LIKE with its wildcards escaped: the text is matched as it is. ILIKE ignores case for
    // ASCII letters as SQLite's LIKE does (and for others too, which the contract allows).
    // One bound pattern for the four fields VideoSearch.text looks in.
    if (filter.text) {
      add(
        (n) => `(${['title', 'create_user', 'tags', 'description'].map((f) => `${f} ILIKE ${n} ESCAPE '\\'`).join(' OR ')})`,
        `%${filter.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`,
      );
    }
    if (filter.statuses && filter.statuses.length > 0) add((n) => `status = ANY(${n}::int[])`, filter.statuses);
    if (filter.createUser !== undefined) add((n) => `create_user = ${n}`, filter.createUser);
    if (filter.appId !== undefined) add((n) => `app_id = ${n}`, filter.appId);
    const whereSql = where.length > 0 ? where.join(' AND ') : 'TRUE';
    return this.page(whereSql, params, page, searchTotal(filter) ?? { sql: `SELECT COUNT(*) AS n FROM videos WHERE ${whereSql}`, params });
  }

  /** One page of the videos matching `where`, newest first, and the count of all of them (`total`). */
  private async page(where: string, params: PgParam[], page: Page, total: CountQuery): Promise<{ total: number; items: VideoRecord[] }> {
    const n = params.length;
    const [items, count] = await Promise.all([
      this.db.query<VideoRow>(`SELECT * FROM videos WHERE ${where} ${NEWEST_FIRST} LIMIT $${n + 1} OFFSET $${n + 2}`, [...params, page.limit, page.offset]),
      this.db.query<{ n: number }>(total.sql, total.params),
    ]);
    return { total: count.rows[0]?.n ?? 0, items: items.rows.map(toVideo) };
  }
}
