import crypto from 'node:crypto';
import { type LadderState, type Page, type RenditionRecord, type StatusChange, type TextTrackRecord, type VideoRecord, type VideoSearch, type VideoStore } from '../types.js';
import { CALLBACK_STATUSES, outboxStateSql } from '../outbox.js';
import type { DurableDatabase, SqlParam } from './durableDatabase.js';
import { byTextTrackAge, toTextTrack, toVideo, type TextTrackRow, type VideoRow } from '../rows/metadataRows.js';

/** The fields VideoSearch.text looks in: title, uploader, tags, description. */
const SEARCHED_FIELDS = ['title', 'create_user', 'tags', 'description'] as const;

/** List pages kept per application (see SqlJsVideoStore.pages). */
const MAX_CACHED_PAGES_PER_APP = 64;

export class SqlJsVideoStore implements VideoStore {
  /**
   * COUNT(*) over an application's videos walks its index range: with 100,000 videos that is the
   * bulk of a list call. Counts only change on insert (and delete), so they are cached until then.
   */
  private counts = new Map<string, number>();
  /**
   * List pages as last read, per application whose videos they list: a page of 50 cost 250 to
   * 400 µs to read through sql.js, and an application's callers mostly ask for the same first
   * pages. Any write to one of that application's videos drops them (registration, status,
   * media). Pages are frozen and the same object is handed out until then, so callers may
   * memoize what they derive from one (the spec API does its JSON).
   */
  private pages = new Map<string, Map<string, { total: number; items: VideoRecord[] }>>();

  constructor(private readonly db: DurableDatabase) {}

  async insert(v: VideoRecord): Promise<void> {
    const done = this.db.write([
      [
        `INSERT INTO videos (id, app_id, title, description, tags, actors, create_user, status, status_reason,
           source_type, source_url, duration, cover_file, source_file, keep_source, ladder, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [v.id, v.appId, v.title, v.description, v.tags, v.actors, v.createUser, v.status, v.statusReason,
          v.sourceType, v.sourceUrl, v.duration, v.coverFile, v.sourceFile, v.keepSource ? 1 : 0, v.ladder ?? '', v.createdAt, v.updatedAt],
      ],
      ['INSERT INTO video_status_history (video_id, at, from_status, to_status, reason) VALUES (?, ?, NULL, ?, ?)', [v.id, v.createdAt, v.status, '']],
    ]);
    this.counts.clear(); // the row is in memory already; counts must see it now
    this.pages.delete(v.appId);
    await done;
  }

  async get(id: string): Promise<VideoRecord | undefined> {
    const row = this.db.get<VideoRow>('SELECT * FROM videos WHERE id = ?', [id]);
    return row ? toVideo(row) : undefined;
  }

  async getWithRenditions(id: string): Promise<{ video: VideoRecord; renditions: RenditionRecord[] } | undefined> {
    // Both reads in one turn of the event loop: no write comes between them.
    const video = await this.get(id);
    return video && { video, renditions: await this.renditions(id) };
  }

  async listByApp(appId: string, page: Page): Promise<{ total: number; items: VideoRecord[] }> {
    return this.cachedPage(appId, `app\u0000${page.offset}\u0000${page.limit}`, () => {
      const items = this.db
        .all<VideoRow>('SELECT * FROM videos WHERE app_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?', [appId, page.limit, page.offset])
        .map(toVideo);
      const total = this.count(`app:${appId}`, 'SELECT COUNT(*) AS n FROM videos WHERE app_id = ?', [appId]);
      return { total, items };
    });
  }

  async listByAppAndUser(appId: string, createUser: string, page: Page): Promise<{ total: number; items: VideoRecord[] }> {
    return this.cachedPage(appId, `user\u0000${page.offset}\u0000${page.limit}\u0000${createUser}`, () => {
      const items = this.db
        .all<VideoRow>(
          'SELECT * FROM videos WHERE app_id = ? AND create_user = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?',
          [appId, createUser, page.limit, page.offset],
        )
        .map(toVideo);
      const total = this.count(`user:${appId}\u0000${createUser}`, 'SELECT COUNT(*) AS n FROM videos WHERE app_id = ? AND create_user = ?', [appId, createUser]);
      return { total, items };
    });
  }

  async setStatus(id: string, to: number, opts: { from?: number[]; reason?: string; now?: number } = {}): Promise<boolean> {
    const now = opts.now ?? Date.now();
    const reason = opts.reason ?? '';
    let where = 'id = ?';
    const whereParams: SqlParam[] = [id];
    if (opts.from && opts.from.length > 0) {
      where += ` AND status IN (${opts.from.map(() => '?').join(', ')})`;
      whereParams.push(...opts.from);
    }
    // The history row, the status callback's delivery row (storage/outbox.ts) and the move are
    // one transaction under the same condition. The delivery is read before the move, while the
    // row still has the status it leaves: a move to the same status is no change and gets none.
    const ops: Array<[string, SqlParam[]]> = [
      [`INSERT INTO video_status_history (video_id, at, from_status, to_status, reason) SELECT id, ?, status, ?, ? FROM videos WHERE ${where}`, [now, to, reason, ...whereParams]],
    ];
    if (CALLBACK_STATUSES.includes(to)) {
      const { state, lastError } = outboxStateSql('1');
      // seq is the next number in SQL, and the id a parameter: replay from the journal re-runs this as it ran.
      ops.push([
        `INSERT OR IGNORE INTO callback_deliveries (id, seq, app_id, kind, video_id, video_status, status_at, state, series, series_attempts,
           next_attempt_at, last_error, created_at, updated_at)
         SELECT ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM callback_deliveries), videos.app_id, 'status', videos.id, ?, ?, ${state}, 1, 0,
           CASE WHEN ${state} = 'pending' THEN ? END, ${lastError}, ?, ?
         FROM videos JOIN apps a ON a.app_id = videos.app_id
         WHERE ${where} AND status <> ?`,
        [crypto.randomUUID(), to, now, now, now, now, ...whereParams, to],
      ]);
    }
    ops.push([`UPDATE videos SET status = ?, status_reason = ?, updated_at = ? WHERE ${where}`, [to, reason, now, ...whereParams]]);
    const done = this.db.write(ops);
    this.dropPagesOf(id);
    const changed = (await done).at(-1);
    return changed === 1;
  }

  async statusHistory(id: string): Promise<StatusChange[]> {
    return this.db
      .all<{ at: number; from_status: number | null; to_status: number; reason: string }>(
        'SELECT at, from_status, to_status, reason FROM video_status_history WHERE video_id = ? ORDER BY at, rowid',
        [id],
      )
      .map((r) => ({ at: r.at, from: r.from_status, to: r.to_status, reason: r.reason }));
  }

  async claimSource(id: string, sourceFile: string): Promise<boolean> {
    const done = this.db.write([["UPDATE videos SET source_file = ? WHERE id = ? AND source_file = ''", [sourceFile, id]]]);
    this.dropPagesOf(id);
    const [changed] = await done;
    return changed === 1;
  }

  async releaseSource(id: string, sourceFile: string): Promise<void> {
    const done = this.db.write([["UPDATE videos SET source_file = '' WHERE id = ? AND source_file = ?", [id, sourceFile]]]);
    this.dropPagesOf(id);
    await done;
  }

  async updateMedia(id: string, patch: Partial<Pick<VideoRecord, 'sourceFile' | 'keepSource' | 'duration' | 'coverFile' | 'ladder'>>): Promise<void> {
    const sets: string[] = [];
    const params: SqlParam[] = [];
    if (patch.sourceFile !== undefined) (sets.push('source_file = ?'), params.push(patch.sourceFile));
    if (patch.keepSource !== undefined) (sets.push('keep_source = ?'), params.push(patch.keepSource ? 1 : 0));
    if (patch.duration !== undefined) (sets.push('duration = ?'), params.push(Math.round(patch.duration)));
    if (patch.coverFile !== undefined) (sets.push('cover_file = ?'), params.push(patch.coverFile));
    if (patch.ladder !== undefined) (sets.push('ladder = ?'), params.push(patch.ladder));
    if (sets.length === 0) return;
    const done = this.db.write([[`UPDATE videos SET ${sets.join(', ')} WHERE id = ?`, [...params, id]]]);
    this.dropPagesOf(id);
    await done;
  }

  async setRenditions(videoId: string, renditions: RenditionRecord[]): Promise<void> {
    await this.db.write([
      ['DELETE FROM renditions WHERE video_id = ?', [videoId]],
      ...renditions.map((r): [string, SqlParam[]] => [
        'INSERT INTO renditions (video_id, label, width, height, bitrate_kbps, file, bytes) VALUES (?, ?, ?, ?, ?, ?, ?)',
        [videoId, r.label, r.width, r.height, r.bitrateKbps, r.file, r.bytes],
      ]),
    ]);
  }

  async textTracks(videoId: string): Promise<TextTrackRecord[]> {
    return this.db.all<TextTrackRow>('SELECT * FROM text_tracks WHERE video_id = ?', [videoId]).map(toTextTrack).sort(byTextTrackAge);
  }

  async addTextTrack(t: TextTrackRecord, limit: number): Promise<boolean> {
    // One statement: the count and the insert are one step.
    const [added] = await this.db.write([
      [
        `INSERT INTO text_tracks (video_id, id, kind, origin, language, label, forced, bytes, created_at)
           SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE (SELECT COUNT(*) FROM text_tracks WHERE video_id = ? AND kind = ?) < ?`,
        [t.videoId, t.id, t.kind, t.origin, t.language, t.label, t.forced ? 1 : 0, t.bytes, t.createdAt, t.videoId, t.kind, limit],
      ],
    ]);
    return added === 1;
  }

  async removeTextTrack(videoId: string, id: string): Promise<TextTrackRecord | undefined> {
    const row = this.db.get<TextTrackRow>('SELECT * FROM text_tracks WHERE video_id = ? AND id = ?', [videoId, id]);
    if (!row) return undefined;
    const [removed] = await this.db.write([['DELETE FROM text_tracks WHERE video_id = ? AND id = ?', [videoId, id]]]);
    return removed === 1 ? toTextTrack(row) : undefined;
  }

  async setSourceTextTracks(videoId: string, tracks: TextTrackRecord[]): Promise<void> {
    await this.db.write([
      ["DELETE FROM text_tracks WHERE video_id = ? AND origin = 'source'", [videoId]],
      ...tracks.map((t): [string, SqlParam[]] => [
        'INSERT INTO text_tracks (video_id, id, kind, origin, language, label, forced, bytes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        [videoId, t.id, t.kind, 'source', t.language, t.label, t.forced ? 1 : 0, t.bytes, t.createdAt],
      ]),
    ]);
  }

  async renditions(videoId: string): Promise<RenditionRecord[]> {
    // Sorted here, not by ORDER BY: a video has a handful of rows, and SQLite sets up a sorter
    // for every run of the statement, which made this read (part of every detail call) ten
    // times slower, 8 to 10 µs instead of under 1, even for a video with no renditions.
    return this.db
      .all<{ video_id: string; label: string; width: number; height: number; bitrate_kbps: number; file: string; bytes: number }>(
        'SELECT * FROM renditions WHERE video_id = ?',
        [videoId],
      )
      .map((r) => ({ videoId: r.video_id, label: r.label, width: r.width, height: r.height, bitrateKbps: r.bitrate_kbps, file: r.file, bytes: r.bytes }))
      .sort((a, b) => b.bitrateKbps - a.bitrateKbps || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
  }

  async countByStatus(): Promise<Record<number, number>> {
    const out: Record<number, number> = {};
    for (const r of this.db.all<{ status: number; n: number }>('SELECT status, COUNT(*) AS n FROM videos GROUP BY status')) out[r.status] = r.n;
    return out;
  }

  async oldestInStatus(status: number, limit: number): Promise<{ total: number; items: VideoRecord[] }> {
    const items = this.db.all<VideoRow>('SELECT * FROM videos WHERE status = ? ORDER BY created_at, id LIMIT ?', [status, limit]).map(toVideo);
    const total = Number(this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM videos WHERE status = ?', [status])?.n ?? 0);
    return { total, items };
  }

  async idsByStatus(statuses: number[]): Promise<string[]> {
    if (statuses.length === 0) return [];
    return this.db
      .all<{ id: string }>(`SELECT id FROM videos WHERE status IN (${statuses.map(() => '?').join(', ')}) ORDER BY created_at, id`, statuses)
      .map((r) => r.id);
  }

  async idsByLadder(state: Exclude<LadderState, ''>): Promise<string[]> {
    return this.db.all<{ id: string }>('SELECT id FROM videos WHERE ladder = ? ORDER BY created_at, id', [state]).map((r) => r.id);
  }

  async search(filter: VideoSearch, page: Page): Promise<{ total: number; items: VideoRecord[] }> {
    const where: string[] = [];
    const params: SqlParam[] = [];
    if (filter.text) {
      // LIKE with its wildcards escaped: the text is matched as it is, in any of the four fields.
      const pattern = `%${filter.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      where.push(`(${SEARCHED_FIELDS.map((f) => `${f} LIKE ? ESCAPE '\\'`).join(' OR ')})`);
      params.push(...SEARCHED_FIELDS.map(() => pattern));
    }
    if (filter.statuses && filter.statuses.length > 0) {
      where.push(`status IN (${filter.statuses.map(() => '?').join(', ')})`);
      params.push(...filter.statuses);
    }
    if (filter.createUser !== undefined) (where.push('create_user = ?'), params.push(filter.createUser));
    if (filter.appId !== undefined) (where.push('app_id = ?'), params.push(filter.appId));
    const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    const items = this.db
      .all<VideoRow>(`SELECT * FROM videos ${clause} ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, [...params, page.limit, page.offset])
      .map(toVideo);
    const total = Number(this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM videos ${clause}`, params)?.n ?? 0);
    return { total, items };
  }

  /** A list page from the cache, or read by `read`, frozen and kept (see {@link pages}). */
  private cachedPage(appId: string, key: string, read: () => { total: number; items: VideoRecord[] }): { total: number; items: VideoRecord[] } {
    let ofApp = this.pages.get(appId);
    let page = ofApp?.get(key);
    if (!page) {
      const { total, items } = read();
      for (const v of items) Object.freeze(v);
      page = Object.freeze({ total, items: Object.freeze(items) as VideoRecord[] });
      if (!ofApp) this.pages.set(appId, (ofApp = new Map()));
      // Bounded: the oldest page goes first (a page with its JSON is about 100 KB).
      if (ofApp.size >= MAX_CACHED_PAGES_PER_APP) ofApp.delete(ofApp.keys().next().value!);
      ofApp.set(key, page);
    }
    return page;
  }

  /** Drops the cached list pages of the application of video `id` (its row is written already). */
  private dropPagesOf(id: string): void {
    if (this.pages.size === 0) return;
    const appId = this.db.get<{ app_id: string }>('SELECT app_id FROM videos WHERE id = ?', [id])?.app_id;
    if (appId !== undefined) this.pages.delete(appId);
  }

  private count(key: string, sql: string, params: SqlParam[]): number {
    let n = this.counts.get(key);
    if (n === undefined) {
      n = Number(this.db.get<{ n: number }>(sql, params)?.n ?? 0);
      if (this.counts.size > 10_000) this.counts.clear();
      this.counts.set(key, n);
    }
    return n;
  }
}
