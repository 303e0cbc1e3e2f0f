import type { ReservationView, UploadReservation, UploadReservationStore } from '../types.js';
import type { PgParam, PostgresDatabase, Queryable } from './postgresDatabase.js';

/**
 * The key of the transaction-level advisory lock every reserve takes ("vop-resv" in ASCII): one
 * reserve at a time across the cluster, so that the sum a decision reads is still the sum when its
 * row goes in. Creations are rare next to the bytes they announce; one lock for all disks keeps
 * the one-upload-per-video check, which spans disks, under it too.
 */
const RESERVE_LOCK_KEY = '8534163159385469814';

interface Row {
  key: string;
  kind: UploadReservation['kind'];
  video_id: string;
  disk: string;
  size: number;
  written: number;
  expires_at: number | null;
  owner: string;
  node: string;
  app_id: string;
  client: string;
  idle_until: number | null;
}

/** Bytes still to come, summed: what a reservation promises (never below 0, however `written` was reported). */
const PROMISED = 'COALESCE(SUM(GREATEST(size - written, 0)), 0)::bigint';

/** The rows whose bytes count at `$now` (the parameter named): not expired, not gone idle. */
const counting = (now: string) => `(expires_at IS NULL OR expires_at > ${now}) AND (idle_until IS NULL OR idle_until > ${now})`;

/**
 * {@link UploadReservationStore} in PostgreSQL (`upload_reservations`), for the nodes of a cluster.
 * A reserve (and a resume that must decide) is one transaction holding {@link RESERVE_LOCK_KEY}:
 * expired rows go, the video's row and the disk's sums are read, the caller decides (it reads the
 * disk's free space then, after the sums: bytes that land in between lower the free space and
 * leave the sums as they were, which errs towards refusing), and the row goes in. A node that dies inside it holds the lock no longer
 * than its session (IDLE_IN_TRANSACTION_MS ends a session paused mid-transaction).
 */
export class PostgresUploadReservations implements UploadReservationStore {
  readonly inProcess = false;

  constructor(private readonly db: PostgresDatabase) {}

  async reserve(r: UploadReservation, now: number, decide?: (seen: ReservationView) => void | Promise<void>): Promise<void> {
    if (!decide) return void (await insert(this.db, r, now));
    await this.db.transaction(async (tx) => {
      await decide(await view(tx, r, now));
      await insert(tx, r, now);
    });
  }

  async resume(r: UploadReservation, now: number, decide: (seen: ReservationView) => void | Promise<void>): Promise<void> {
    // The common case, once per PATCH, takes no lock: a reservation that still counts moves its
    // idle time on, in one statement that cannot revive one gone idle meanwhile.
    const { rowCount } = await this.db.query(`UPDATE upload_reservations SET idle_until = CASE WHEN idle_until IS NULL THEN NULL ELSE GREATEST(idle_until, $2) END WHERE key = $1 AND ${counting('$3')}`, [r.key, r.idleUntil ?? null, now]);
    if (rowCount) return;
    await this.db.transaction(async (tx) => {
      await decide(await view(tx, r, now, r.key));
      await tx.query(
        `INSERT INTO upload_reservations (key, kind, video_id, disk, size, written, expires_at, owner, node, app_id, client, idle_until, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         ON CONFLICT (key) DO UPDATE SET written = GREATEST(upload_reservations.written, EXCLUDED.written), expires_at = EXCLUDED.expires_at,
           node = EXCLUDED.node, app_id = EXCLUDED.app_id, client = EXCLUDED.client, idle_until = EXCLUDED.idle_until`,
        [...columns(r), now],
      );
    });
  }

  async reservedBytes(disk: string, now: number): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>(`SELECT ${PROMISED} AS n FROM upload_reservations WHERE disk = $1 AND ${counting('$2')}`, [disk, now]);
    return Number(rows[0]!.n);
  }

  async recordWritten(entries: ReadonlyArray<readonly [key: string, written: number]>, active?: { now: number; idleUntil: number }): Promise<void> {
    if (entries.length === 0) return;
    // GREATEST: an upload's bytes only grow, and a late report from a node that wrote an earlier
    // PATCH must not undo a newer one's from another node. The idle time moves only on rows that
    // still count: one gone idle counts again through resume's decision alone.
    await this.db.query(
      `UPDATE upload_reservations u SET written = GREATEST(u.written, v.written),
         idle_until = CASE WHEN $3::bigint IS NOT NULL AND u.idle_until > $3 AND (u.expires_at IS NULL OR u.expires_at > $3)
                           THEN GREATEST(u.idle_until, $4) ELSE u.idle_until END
       FROM unnest($1::text[], $2::bigint[]) AS v(key, written) WHERE u.key = v.key`,
      [entries.map((e) => e[0]), entries.map((e) => e[1]), active?.now ?? null, active?.idleUntil ?? null],
    );
  }

  async renew(keys: readonly string[], expiresAt: number): Promise<void> {
    if (keys.length === 0) return;
    await this.db.query('UPDATE upload_reservations SET expires_at = $2 WHERE key = ANY($1::text[])', [[...keys], expiresAt]);
  }

  async release(key: string): Promise<void> {
    await this.db.query('DELETE FROM upload_reservations WHERE key = $1', [key]);
  }

  async releaseAbsent(kind: UploadReservation['kind'], present: readonly string[], madeBefore: number): Promise<number> {
    const { rowCount } = await this.db.query('DELETE FROM upload_reservations WHERE kind = $1 AND created_at < $2 AND NOT (key = ANY($3::text[]))', [kind, madeBefore, [...present]]);
    return rowCount ?? 0;
  }
}

/**
 * What `r` must fit with, under {@link RESERVE_LOCK_KEY} (taken here, for the rest of `tx`):
 * expired rows go, then the video's row and the disk's sums (all, its application's, its
 * address's) are read; `except`, a key left out (the upload itself, reserving again).
 */
async function view(tx: Queryable, r: UploadReservation, now: number, except = ''): Promise<ReservationView> {
  await tx.query('SELECT pg_advisory_xact_lock($1)', [RESERVE_LOCK_KEY]);
  // Expired rows count for nothing; they go here, where every creation passes.
  await tx.query('DELETE FROM upload_reservations WHERE expires_at <= $1', [now]);
  const video = await tx.query<Row>('SELECT * FROM upload_reservations WHERE video_id = $1 AND key <> $2 ORDER BY created_at LIMIT 1', [r.videoId, except]);
  // '' is no one's: an app or address left unsaid matches none (an empty string is never either).
  const sums = await tx.query<{ n: number; app: number; client: number }>(
    `SELECT ${PROMISED} AS n,
            COALESCE(SUM(GREATEST(size - written, 0)) FILTER (WHERE app_id = $4 AND $4 <> ''), 0)::bigint AS app,
            COALESCE(SUM(GREATEST(size - written, 0)) FILTER (WHERE client = $5 AND $5 <> ''), 0)::bigint AS client
     FROM upload_reservations WHERE disk = $1 AND key <> $2 AND ${counting('$3')}`,
    [r.disk, except, now, r.appId ?? '', r.client ?? ''],
  );
  const s = sums.rows[0]!;
  return {
    ...(video.rows[0] ? { videoUpload: fromRow(video.rows[0]) } : {}),
    reservedBytes: Number(s.n),
    appReservedBytes: Number(s.app),
    clientReservedBytes: Number(s.client),
  };
}

/** `r`'s columns, in {@link insert}'s order (created_at last, not among them). */
function columns(r: UploadReservation): PgParam[] {
  return [r.key, r.kind, r.videoId, r.disk, r.size, r.written, r.expiresAt ?? null, r.owner ?? '', r.node ?? '', r.appId ?? '', r.client ?? '', r.idleUntil ?? null];
}

/** Stores `r` unless its key is there already. */
async function insert(db: Queryable, r: UploadReservation, now: number): Promise<void> {
  await db.query(
    `INSERT INTO upload_reservations (key, kind, video_id, disk, size, written, expires_at, owner, node, app_id, client, idle_until, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (key) DO NOTHING`,
    [...columns(r), now],
  );
}

function fromRow(row: Row): UploadReservation {
  return {
    key: row.key,
    kind: row.kind,
    videoId: row.video_id,
    disk: row.disk,
    size: Number(row.size),
    written: Number(row.written),
    ...(row.expires_at === null ? {} : { expiresAt: Number(row.expires_at) }),
    ...(row.owner ? { owner: row.owner } : {}),
    ...(row.node ? { node: row.node } : {}),
    ...(row.app_id ? { appId: row.app_id } : {}),
    ...(row.client ? { client: row.client } : {}),
    ...(row.idle_until === null ? {} : { idleUntil: Number(row.idle_until) }),
  };
}
