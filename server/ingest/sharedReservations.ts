import type { UploadReservationStore } from '../storage/types.js';

/**
 * How disks are named in the reservations (UploadReservation.disk): a reservation counts only
 * against reservations of the same disk, and against that disk's free space.
 *
 * - `media`: the media folder, where tus uploads (on local disk) and multipart bodies land. In the
 *   embedded mode it is the one process's; in a cluster with `--shared-media` it is the folder
 *   every node mounts, so every node's uploads count against it together.
 * - `node:<node>`: one node's own disk. With media in a bucket, each node's media folder is its
 *   own: a multipart body is staged there whole before it goes to the bucket.
 * - `none`: no disk of ours. A tus upload with media in a bucket sends its parts to the bucket
 *   (@tus/s3-store stages one part at a time in the temporary folder), and the bucket reports no
 *   free space (S3MediaStore.freeBytes): it holds its video, and no bytes anywhere.
 */
export const MEDIA_DISK = 'media';
export const NO_DISK = 'none';

/** The disk of a node's own media folder (media in a bucket). */
export function nodeDisk(node: string): string {
  return `node:${node}`;
}

/** How often, at most, the bytes written are carried to the store. */
const WRITTEN_FLUSH_MS = 1_000;

/** Options of {@link SharedReservations}. */
export interface SharedReservationsOptions {
  /** The reservations every node sees (PostgreSQL's `upload_reservations`), or the embedded mode's in memory. */
  store: UploadReservationStore;
  /** This node's name in the store: a random name per process, so a restarted node holds no lease of its former life. */
  node: string;
  /** The disk the media folder is on: {@link MEDIA_DISK} when every node mounts it, this node's own ({@link nodeDisk}) when media are in a bucket. */
  mediaDisk: string;
  /**
   * How long a leased reservation counts after its node last renewed it: the cluster's node
   * lease (ServerOptions.jobLeaseMs), renewed every third of it. A multipart body's reservation
   * lives only as long as the request on its node, so it is leased: a node that dies (SIGKILL, a
   * power cut) stops renewing, and its bodies' bytes stop counting within a lease. A tus upload's
   * reservation is not: the upload outlives its node (any node resumes it) until it expires.
   */
  leaseMs: number;
  /** ingest.reservationIdleMs: bytes carried to the store keep their tus upload's reservation from going idle that long. */
  idleMs: number;
  log: (line: string) => void;
  now?: () => number;
}

/**
 * This node's part in the reservations of a cluster (issue 12, item 7), and the embedded mode's
 * one process's: the bytes its uploads write reach the store at a bounded rate (one statement a
 * second at most, whatever the chunk rate: a reservation whose written bytes lag only promises
 * more than it must, which errs towards refusing), or at once to a store in this process's memory
 * ({@link UploadReservationStore.inProcess}), where the lag would cost a second of refusals for
 * nothing; and the leases of the multipart bodies it receives are renewed. Failures are logged
 * and tried again at the next tick; a release that fails leaves the reservation to its lease or
 * expiry, or to the tus sweep (ingest/tus/reconciliation.ts).
 */
export class SharedReservations {
  readonly store: UploadReservationStore;
  readonly node: string;
  readonly mediaDisk: string;
  readonly leaseMs: number;
  private readonly now: () => number;
  /** Keys whose lease this node renews. */
  private readonly leased = new Set<string>();
  /** Written bytes not yet carried to the store, per key. */
  private readonly written = new Map<string, number>();
  /** Of {@link written}'s keys, those whose bytes arrived (rather than were read again from storage). */
  private readonly arrived = new Set<string>();
  private lastRenewal = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(private readonly options: SharedReservationsOptions) {
    this.store = options.store;
    this.node = options.node;
    this.mediaDisk = options.mediaDisk;
    this.leaseMs = options.leaseMs;
    this.now = options.now ?? Date.now;
  }

  /** The expiry of a lease taken or renewed now. */
  leaseUntil(now = this.now()): number {
    return now + this.leaseMs;
  }

  /** This node renews `key`'s lease from now on, until {@link release}. */
  hold(key: string): void {
    this.leased.add(key);
  }

  /** `written` bytes of `key` are on disk (carried to the store at the next tick); `arrived`: just received. */
  noteWritten(key: string, written: number, arrived = true): void {
    if (this.store.inProcess) {
      const now = this.now();
      // Memory: the store has the bytes before this returns (its recordWritten awaits nothing).
      this.store.recordWritten([[key, written]], arrived ? { now, idleUntil: now + this.options.idleMs } : undefined).catch((err: unknown) => this.options.log(`Upload reservations: recording written bytes failed: ${String(err)}`));
      return;
    }
    this.written.set(key, written);
    if (arrived) this.arrived.add(key);
  }

  /** Releases `key` for every node; a failure is logged, not thrown (see the class's note). */
  async release(key: string): Promise<void> {
    this.leased.delete(key);
    this.written.delete(key);
    this.arrived.delete(key);
    await this.store.release(key).catch((err: unknown) => this.options.log(`Upload reservations: releasing ${key} failed (it lapses at its expiry): ${String(err)}`));
  }

  /** Starts the ticks: written bytes every second at most, leases every third of a lease. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), Math.min(WRITTEN_FLUSH_MS, Math.floor(this.leaseMs / 3)));
    this.timer.unref();
  }

  /** Stops the ticks after carrying what is left. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Carries the written bytes noted since the last tick, and renews the leases when a third of a lease has passed. */
  flush(): Promise<void> {
    // One at a time: a slow database must not pile statements up.
    this.flushing ??= this.flushNow().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async flushNow(): Promise<void> {
    const now = this.now();
    const written = [...this.written];
    const arrived = new Set(this.arrived);
    this.written.clear();
    this.arrived.clear();
    try {
      // The idle time runs from this tick: bytes noted up to a tick ago make a reservation
      // outlive its idle time by that much at most.
      await this.store.recordWritten(written.filter(([key]) => arrived.has(key)), { now, idleUntil: now + this.options.idleMs });
      await this.store.recordWritten(written.filter(([key]) => !arrived.has(key)));
    } catch (err) {
      // Newer counts noted meanwhile win; the rest is tried again.
      for (const [key, n] of written) {
        if (this.written.has(key)) continue;
        this.written.set(key, n);
        if (arrived.has(key)) this.arrived.add(key);
      }
      this.options.log(`Upload reservations: recording written bytes failed: ${String(err)}`);
    }
    if (this.leased.size === 0 || now - this.lastRenewal < this.leaseMs / 3) return;
    try {
      await this.store.renew([...this.leased], this.leaseUntil(now));
      this.lastRenewal = now;
    } catch (err) {
      this.options.log(`Upload reservations: renewing leases failed: ${String(err)}`);
    }
  }
}
