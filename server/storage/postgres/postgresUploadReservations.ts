import type { ReservationView, UploadReservation, UploadReservationStore } from '../types.js';
import type { PostgresDatabase, Queryable } from './postgresDatabase.js';

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
}

/** Bytes still to come, summed: what a reservation promises (never below 0, however `written` was reported). */
const PROMISED = 'COALESCE(SUM(GREATEST(size - written, 0)), 0)::bigint';

/**
 * {@link UploadReservationStore} in PostgreSQL (`upload_reservations`), for the nodes of a cluster.
 * A reserve is one transaction holding {@link RESERVE_LOCK_KEY}: expired rows go, the video's
 * row and the disk's sum are read, the caller decides (it reads the disk's free space then, after
 * the sum: bytes that land in between lower the free space and leave the sum as it was, which errs
 * towards refusing), and the row goes in. A node that dies inside it holds the lock no longer
 * than its session (IDLE_IN_TRANSACTION_MS ends a session paused mid-transaction).
 */
export class PostgresUploadReservations implements UploadReservationStore {
  constructor(private readonly db: PostgresDatabase) {}

  async reserve(r: UploadReservation, now: number, decide?: (seen: ReservationView) => void | Promise<void>): Promise<void> {
    if (!decide) return void (await insert(this.db, r, now));
    await this.db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [RESERVE_LOCK_KEY]);
      // Expired rows count for nothing; they go here, where every creation passes.
      await tx.query('DELETE FROM upload_reservations WHERE expires_at <= $1', [now]);
      const video = await tx.query<Row>('SELECT * FROM upload_reservations WHERE video_id = $1 ORDER BY created_at LIMIT 1', [r.videoId]);
      const sum = await tx.query<{ n: number }>(`SELECT ${PROMISED} AS n FROM upload_reservations WHERE disk = $1`, [r.disk]);
      await decide({ videoUpload: video.rows[0] && fromRow(video.rows[0]), reservedBytes: Number(sum.rows[0]!.n) });
      await insert(tx, r, now);
    });
  }

  async reservedBytes(disk: string, now: number): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>(`SELECT ${PROMISED} AS n FROM upload_reservations WHERE disk = $1 AND (expires_at IS NULL OR expires_at > $2)`, [disk, now]);
    return Number(rows[0]!.n);
  }

  async recordWritten(entries: ReadonlyArray<readonly [key: string, written: number]>): Promise<void> {
    if (entries.length === 0) return;
    // GREATEST: an upload's bytes only grow, and a late report from a node that wrote an earlier
    // PATCH must not undo a newer one's from another node.
    await this.db.query(
      `UPDATE upload_reservations u SET written = GREATEST(u.written, v.written)
       FROM unnest($1::text[], $2::bigint[]) AS v(key, written) WHERE u.key = v.key`,
      [entries.map((e) => e[0]), entries.map((e) => e[1])],
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

/** Stores `r` unless its key is there already. */
async function insert(db: Queryable, r: UploadReservation, now: number): Promise<void> {
  await db.query(
    `INSERT INTO upload_reservations (key, kind, video_id, disk, size, written, expires_at, owner, node, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (key) DO NOTHING`,
    [r.key, r.kind, r.videoId, r.disk, r.size, r.written, r.expiresAt ?? null, r.owner ?? '', r.node ?? '', now],
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
  };
}
