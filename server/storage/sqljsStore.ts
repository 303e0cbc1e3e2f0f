import type { AppRecord, AppStore, Page, RenditionRecord, StatusChange, Stores, VideoRecord, VideoStore } from './types.js';
import { SqlJsJobStore } from '../jobs/sqljsJobStore.js';
import { DurableDatabase, type SqlParam } from './durableDatabase.js';

/** Options of {@link openSqlJsStores}. */
export interface SqlJsStoreOptions {
  /** The data directory; the database lives in it as `vop.db` plus `journal/`. */
  dir: string;
  /** Where storage warnings go. */
  log?: (message: string) => void;
}

/** Opens the embedded sql.js storage (durable: see durableDatabase.ts). */
export async function openSqlJsStores(options: SqlJsStoreOptions): Promise<Stores & { db: DurableDatabase }> {
  const db = await DurableDatabase.open({ dir: options.dir, log: options.log });
  return {
    db,
    jobs: new SqlJsJobStore(db),
    apps: new SqlJsAppStore(db),
    videos: new SqlJsVideoStore(db),
    close: () => db.close(),
    warnings: () => [...db.warnings],
  };
}

type AppRow = { app_id: string; name: string; secret: string; callback_url: string; disabled: number; created_at: number; updated_at: number };

function toApp(r: AppRow): AppRecord {
  return {
    appId: r.app_id,
    name: r.name,
    secret: r.secret,
    callbackUrl: r.callback_url,
    disabled: r.disabled === 1,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

class SqlJsAppStore implements AppStore {
  constructor(private readonly db: DurableDatabase) {}

  async insert(app: AppRecord): Promise<void> {
    await this.db.write([
      [
        'INSERT INTO apps (app_id, name, secret, callback_url, disabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        [app.appId, app.name, app.secret, app.callbackUrl, app.disabled ? 1 : 0, app.createdAt, app.updatedAt],
      ],
    ]);
  }

  async get(appId: string): Promise<AppRecord | undefined> {
    const row = this.db.get<AppRow>('SELECT * FROM apps WHERE app_id = ?', [appId]);
    return row ? toApp(row) : undefined;
  }

  async list(): Promise<AppRecord[]> {
    return this.db.all<AppRow>('SELECT * FROM apps ORDER BY created_at, app_id').map(toApp);
  }

  async update(
    appId: string,
    patch: Partial<Pick<AppRecord, 'name' | 'secret' | 'callbackUrl' | 'disabled'>>,
    now: number,
  ): Promise<AppRecord | undefined> {
    const sets: string[] = [];
    const params: SqlParam[] = [];
    if (patch.name !== undefined) (sets.push('name = ?'), params.push(patch.name));
    if (patch.secret !== undefined) (sets.push('secret = ?'), params.push(patch.secret));
    if (patch.callbackUrl !== undefined) (sets.push('callback_url = ?'), params.push(patch.callbackUrl));
    if (patch.disabled !== undefined) (sets.push('disabled = ?'), params.push(patch.disabled ? 1 : 0));
    sets.push('updated_at = ?');
    params.push(now, appId);
    const [changed] = await this.db.write([[`UPDATE apps SET ${sets.join(', ')} WHERE app_id = ?`, params]]);
    return changed ? this.get(appId) : undefined;
  }

  async setGrants(appId: string, targetAppIds: string[]): Promise<void> {
    await this.db.write([
      ['DELETE FROM app_grants WHERE app_id = ?', [appId]],
      ...targetAppIds.map((t): [string, SqlParam[]] => ['INSERT INTO app_grants (app_id, target_app_id) VALUES (?, ?)', [appId, t]]),
    ]);
  }

  async grants(appId: string): Promise<string[]> {
    return this.db
      .all<{ target_app_id: string }>('SELECT target_app_id FROM app_grants WHERE app_id = ? ORDER BY target_app_id', [appId])
      .map((r) => r.target_app_id);
  }
}

type VideoRow = {
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
  keep_source: number;
  created_at: number;
  updated_at: number;
};

function toVideo(r: VideoRow): VideoRecord {
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
    keepSource: r.keep_source === 1,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

class SqlJsVideoStore implements VideoStore {
  /**
   * COUNT(*) over an application's videos walks its index range: with 100,000 videos that is the
   * bulk of a list call. Counts only change on insert (and delete), so they are cached until then.
   */
  private counts = new Map<string, number>();

  constructor(private readonly db: DurableDatabase) {}

  async insert(v: VideoRecord): Promise<void> {
    const done = this.db.write([
      [
        `INSERT INTO videos (id, app_id, title, description, tags, actors, create_user, status, status_reason,
           source_type, source_url, duration, cover_file, source_file, keep_source, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [v.id, v.appId, v.title, v.description, v.tags, v.actors, v.createUser, v.status, v.statusReason,
          v.sourceType, v.sourceUrl, v.duration, v.coverFile, v.sourceFile, v.keepSource ? 1 : 0, v.createdAt, v.updatedAt],
      ],
      ['INSERT INTO video_status_history (video_id, at, from_status, to_status, reason) VALUES (?, ?, NULL, ?, ?)', [v.id, v.createdAt, v.status, '']],
    ]);
    this.counts.clear(); // the row is in memory already; counts must see it now
    await done;
  }

  async get(id: string): Promise<VideoRecord | undefined> {
    const row = this.db.get<VideoRow>('SELECT * FROM videos WHERE id = ?', [id]);
    return row ? toVideo(row) : undefined;
  }

  async listByApp(appId: string, page: Page): Promise<{ total: number; items: VideoRecord[] }> {
    const items = this.db
      .all<VideoRow>('SELECT * FROM videos WHERE app_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?', [appId, page.limit, page.offset])
      .map(toVideo);
    const total = this.count(`app:${appId}`, 'SELECT COUNT(*) AS n FROM videos WHERE app_id = ?', [appId]);
    return { total, items };
  }

  async listByAppAndUser(appId: string, createUser: string, page: Page): Promise<{ total: number; items: VideoRecord[] }> {
    const items = this.db
      .all<VideoRow>(
        'SELECT * FROM videos WHERE app_id = ? AND create_user = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?',
        [appId, createUser, page.limit, page.offset],
      )
      .map(toVideo);
    const total = this.count(`user:${appId}\u0000${createUser}`, 'SELECT COUNT(*) AS n FROM videos WHERE app_id = ? AND create_user = ?', [appId, createUser]);
    return { total, items };
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
    // The history row and the move are one transaction under the same condition.
    const [, changed] = await this.db.write([
      [`INSERT INTO video_status_history (video_id, at, from_status, to_status, reason) SELECT id, ?, status, ?, ? FROM videos WHERE ${where}`, [now, to, reason, ...whereParams]],
      [`UPDATE videos SET status = ?, status_reason = ?, updated_at = ? WHERE ${where}`, [to, reason, now, ...whereParams]],
    ]);
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

  async updateMedia(id: string, patch: Partial<Pick<VideoRecord, 'sourceFile' | 'keepSource' | 'duration' | 'coverFile'>>): Promise<void> {
    const sets: string[] = [];
    const params: SqlParam[] = [];
    if (patch.sourceFile !== undefined) (sets.push('source_file = ?'), params.push(patch.sourceFile));
    if (patch.keepSource !== undefined) (sets.push('keep_source = ?'), params.push(patch.keepSource ? 1 : 0));
    if (patch.duration !== undefined) (sets.push('duration = ?'), params.push(Math.round(patch.duration)));
    if (patch.coverFile !== undefined) (sets.push('cover_file = ?'), params.push(patch.coverFile));
    if (sets.length === 0) return;
    await this.db.write([[`UPDATE videos SET ${sets.join(', ')} WHERE id = ?`, [...params, id]]]);
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

  async renditions(videoId: string): Promise<RenditionRecord[]> {
    return this.db
      .all<{ video_id: string; label: string; width: number; height: number; bitrate_kbps: number; file: string; bytes: number }>(
        'SELECT * FROM renditions WHERE video_id = ? ORDER BY bitrate_kbps DESC, label',
        [videoId],
      )
      .map((r) => ({ videoId: r.video_id, label: r.label, width: r.width, height: r.height, bitrateKbps: r.bitrate_kbps, file: r.file, bytes: r.bytes }));
  }

  async countByStatus(): Promise<Record<number, number>> {
    const out: Record<number, number> = {};
    for (const r of this.db.all<{ status: number; n: number }>('SELECT status, COUNT(*) AS n FROM videos GROUP BY status')) out[r.status] = r.n;
    return out;
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
