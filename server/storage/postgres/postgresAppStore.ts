import { DEFAULT_MEDIA_TTL_SECONDS, type AppChangeFeed, type AppPatchFields, type AppRecord, type AppStore } from '../types.js';
import { toApp, type AppRow } from '../rows/metadataRows.js';
import type { PgParam, PostgresDatabase, Queryable } from './postgresDatabase.js';

/**
 * The channel a change of an application is announced on, in the transaction that makes it
 * (PostgreSQL delivers a NOTIFY when, and only if, its transaction commits): eventRelay.ts listens.
 */
export const APP_CHANGES_CHANNEL = 'vop_app_changes';

/**
 * How long a copy of an application answers at most, even when no change was heard: a bound on
 * how stale a copy can be if the listening connection died without the node knowing yet (a cut
 * network is noticed only when TCP gives up).
 */
const MAX_COPY_AGE_MS = 10_000;

/** Copies kept at most; past this they all go (applications are few: the admin makes them). */
const MAX_COPIES = 10_000;

/**
 * Applications in PostgreSQL, with this node's copies of those it read: every spec API call
 * authenticates, and a round trip to the database for the application's row was a third of a
 * detail call. Copies answer only while an {@link AppChangeFeed} hears every change
 * ({@link follow}); every write here announces its change in its own transaction, so each node
 * drops its copy as soon as the change commits (this node at once). Unknown AppIds are not kept:
 * anyone can send those. Callers get copies of the copies.
 */
export class PostgresAppStore implements AppStore {
  private feed: AppChangeFeed | undefined;
  private readonly apps = new Map<string, { app: AppRecord; at: number }>();
  private readonly grantLists = new Map<string, { targets: string[]; at: number }>();
  /**
   * Moves on with every drop: a row read before a drop is not kept after it (it may be the
   * row from before the change).
   */
  private epoch = 0;

  constructor(private readonly db: PostgresDatabase) {}

  /** Keeps copies from now on, dropped as `feed` hears of changes. */
  follow(feed: AppChangeFeed): () => void {
    this.feed = feed;
    this.drop(undefined);
    return feed.onAppChange((appId) => this.drop(appId));
  }

  async insert(app: AppRecord): Promise<void> {
    await this.db.query(
      'INSERT INTO apps (app_id, name, secret, callback_url, disabled, api_networks, whole_ladder_first, media_access, media_ttl_seconds, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)',
      [
        app.appId, app.name, app.secret, app.callbackUrl, app.disabled, app.apiNetworks.join(','), app.wholeLadderFirst ?? false,
        app.mediaAccess ?? 'public', app.mediaTtlSeconds ?? DEFAULT_MEDIA_TTL_SECONDS, app.createdAt, app.updatedAt,
      ],
    );
  }

  async get(appId: string): Promise<AppRecord | undefined> {
    const now = Date.now();
    const kept = this.fresh(this.apps.get(appId), now);
    if (kept) return copyOf(kept.app);
    const epoch = this.epoch;
    const { rows } = await this.db.query<AppRow>('SELECT * FROM apps WHERE app_id = $1', [appId], 'vop_app_get');
    if (!rows[0]) return undefined;
    const app = toApp(rows[0]);
    if (this.mayKeep(epoch)) this.keep(this.apps, appId, { app, at: now });
    return copyOf(app);
  }

  async list(): Promise<AppRecord[]> {
    return (await this.db.query<AppRow>('SELECT * FROM apps ORDER BY created_at, app_id')).rows.map(toApp);
  }

  async update(appId: string, patch: AppPatchFields, now: number): Promise<AppRecord | undefined> {
    const sets: string[] = [];
    const params: PgParam[] = [];
    const set = (col: string, v: PgParam) => (params.push(v), sets.push(`${col} = $${params.length}`));
    if (patch.name !== undefined) set('name', patch.name);
    if (patch.secret !== undefined) set('secret', patch.secret);
    if (patch.callbackUrl !== undefined) set('callback_url', patch.callbackUrl);
    if (patch.disabled !== undefined) set('disabled', patch.disabled);
    if (patch.apiNetworks !== undefined) set('api_networks', patch.apiNetworks.join(','));
    if (patch.wholeLadderFirst !== undefined) set('whole_ladder_first', patch.wholeLadderFirst);
    if (patch.mediaAccess !== undefined) set('media_access', patch.mediaAccess);
    if (patch.mediaTtlSeconds !== undefined) set('media_ttl_seconds', patch.mediaTtlSeconds);
    set('updated_at', now);
    params.push(appId);
    try {
      return await this.db.transaction(async (tx) => {
        const { rows } = await tx.query<AppRow>(`UPDATE apps SET ${sets.join(', ')} WHERE app_id = $${params.length} RETURNING *`, params);
        if (rows[0]) await announce(tx, appId);
        return rows[0] && toApp(rows[0]);
      });
    } finally {
      this.drop(appId);
    }
  }

  async setGrants(appId: string, targetAppIds: string[]): Promise<void> {
    try {
      await this.db.transaction(async (tx) => {
        await tx.query('DELETE FROM app_grants WHERE app_id = $1', [appId]);
        if (targetAppIds.length > 0) {
          await tx.query('INSERT INTO app_grants (app_id, target_app_id) SELECT $1, t FROM unnest($2::text[]) AS t', [appId, targetAppIds]);
        }
        await announce(tx, appId);
      });
    } finally {
      this.drop(appId);
    }
  }

  async grants(appId: string): Promise<string[]> {
    const now = Date.now();
    const kept = this.fresh(this.grantLists.get(appId), now);
    if (kept) return [...kept.targets];
    const epoch = this.epoch;
    const { rows } = await this.db.query<{ target_app_id: string }>(
      'SELECT target_app_id FROM app_grants WHERE app_id = $1 ORDER BY target_app_id',
      [appId],
      'vop_app_grants',
    );
    const targets = rows.map((r) => r.target_app_id);
    // Grants are asked for only by authenticated applications, so the copies stay few.
    if (this.mayKeep(epoch)) this.keep(this.grantLists, appId, { targets, at: now });
    return [...targets];
  }

  /** Drops the copies of `appId` (all of them for undefined); a read under way keeps nothing. */
  private drop(appId: string | undefined): void {
    this.epoch++;
    if (appId === undefined) {
      this.apps.clear();
      this.grantLists.clear();
    } else {
      this.apps.delete(appId);
      this.grantLists.delete(appId);
    }
  }

  private fresh<T extends { at: number }>(kept: T | undefined, now: number): T | undefined {
    return kept && this.feed?.listening && now - kept.at < MAX_COPY_AGE_MS ? kept : undefined;
  }

  private mayKeep(epoch: number): boolean {
    return this.feed?.listening === true && epoch === this.epoch;
  }

  private keep<T>(map: Map<string, T>, key: string, value: T): void {
    if (map.size >= MAX_COPIES) map.clear();
    map.set(key, value);
  }
}

/** Tells every node (this one too) that `appId` changed, once `tx` commits. */
async function announce(tx: Queryable, appId: string): Promise<void> {
  await tx.query('SELECT pg_notify($1, $2)', [APP_CHANGES_CHANNEL, appId]);
}

function copyOf(app: AppRecord): AppRecord {
  return { ...app, apiNetworks: [...app.apiNetworks] };
}
