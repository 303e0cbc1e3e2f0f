import { DEFAULT_MEDIA_TTL_SECONDS, type AppPatchFields, type AppRecord, type AppStore } from '../types.js';
import type { DurableDatabase, SqlParam } from './durableDatabase.js';
import { toApp, type AppRow } from '../rows/metadataRows.js';

export class SqlJsAppStore implements AppStore {
  /**
   * Applications and their grants as read, by AppId: every spec API call authenticates, and a
   * read through sql.js cost 7 to 25 µs of the call. There are few applications and they change
   * only through this class, so an entry is dropped when its row is written (the write is in
   * memory by the time write() returns) and read again on the next use. Unknown AppIds are not
   * kept: anyone can send those. Callers get copies.
   */
  private readonly cached = new Map<string, AppRecord>();
  private readonly cachedGrants = new Map<string, string[]>();

  constructor(private readonly db: DurableDatabase) {}

  async insert(app: AppRecord): Promise<void> {
    const done = this.db.write([
      [
        'INSERT INTO apps (app_id, name, secret, callback_url, disabled, api_networks, whole_ladder_first, media_access, media_ttl_seconds, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        [
          app.appId, app.name, app.secret, app.callbackUrl, app.disabled ? 1 : 0, app.apiNetworks.join(','), app.wholeLadderFirst ? 1 : 0,
          app.mediaAccess ?? 'public', app.mediaTtlSeconds ?? DEFAULT_MEDIA_TTL_SECONDS, app.createdAt, app.updatedAt,
        ],
      ],
    ]);
    this.cached.delete(app.appId);
    await done;
  }

  async get(appId: string): Promise<AppRecord | undefined> {
    let app = this.cached.get(appId);
    if (!app) {
      const row = this.db.get<AppRow>('SELECT * FROM apps WHERE app_id = ?', [appId]);
      if (!row) return undefined;
      app = toApp(row);
      this.cached.set(appId, app);
    }
    return { ...app, apiNetworks: [...app.apiNetworks] };
  }

  async list(): Promise<AppRecord[]> {
    return this.db.all<AppRow>('SELECT * FROM apps ORDER BY created_at, app_id').map(toApp);
  }

  async update(
    appId: string,
    patch: AppPatchFields,
    now: number,
  ): Promise<AppRecord | undefined> {
    const sets: string[] = [];
    const params: SqlParam[] = [];
    if (patch.name !== undefined) (sets.push('name = ?'), params.push(patch.name));
    if (patch.secret !== undefined) (sets.push('secret = ?'), params.push(patch.secret));
    if (patch.callbackUrl !== undefined) (sets.push('callback_url = ?'), params.push(patch.callbackUrl));
    if (patch.disabled !== undefined) (sets.push('disabled = ?'), params.push(patch.disabled ? 1 : 0));
    if (patch.apiNetworks !== undefined) (sets.push('api_networks = ?'), params.push(patch.apiNetworks.join(',')));
    if (patch.wholeLadderFirst !== undefined) (sets.push('whole_ladder_first = ?'), params.push(patch.wholeLadderFirst ? 1 : 0));
    if (patch.mediaAccess !== undefined) (sets.push('media_access = ?'), params.push(patch.mediaAccess));
    if (patch.mediaTtlSeconds !== undefined) (sets.push('media_ttl_seconds = ?'), params.push(patch.mediaTtlSeconds));
    sets.push('updated_at = ?');
    params.push(now, appId);
    const done = this.db.write([[`UPDATE apps SET ${sets.join(', ')} WHERE app_id = ?`, params]]);
    this.cached.delete(appId);
    const [changed] = await done;
    return changed ? this.get(appId) : undefined;
  }

  async setGrants(appId: string, targetAppIds: string[]): Promise<void> {
    const done = this.db.write([
      ['DELETE FROM app_grants WHERE app_id = ?', [appId]],
      ...targetAppIds.map((t): [string, SqlParam[]] => ['INSERT INTO app_grants (app_id, target_app_id) VALUES (?, ?)', [appId, t]]),
    ]);
    this.cachedGrants.delete(appId);
    await done;
  }

  async grants(appId: string): Promise<string[]> {
    let targets = this.cachedGrants.get(appId);
    if (!targets) {
      targets = this.db
        .all<{ target_app_id: string }>('SELECT target_app_id FROM app_grants WHERE app_id = ? ORDER BY target_app_id', [appId])
        .map((r) => r.target_app_id);
      // Grants are asked for only by authenticated applications, so the map stays small.
      this.cachedGrants.set(appId, targets);
    }
    return [...targets];
  }
}
