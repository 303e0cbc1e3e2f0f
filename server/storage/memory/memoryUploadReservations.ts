import { InTurn } from '../../core/inTurn.js';
import type { ReservationView, UploadReservation, UploadReservationStore } from '../types.js';
import { UploadLedger } from './uploadLedger.js';

/**
 * {@link UploadReservationStore} over a ledger of its own: the embedded mode's, where one process
 * receives every upload, beside that process's own record (ingest/uploadRoom.ts) as a cluster's
 * database is beside each node's. Reserves run one at a time (a decision awaits the disk's free
 * space; the next reserve waits for its entry), so two concurrent creations cannot both take the
 * last free bytes or the same video.
 */
export class MemoryUploadReservations implements UploadReservationStore {
  /** Reserves and resumes, one after another, so that no two decide at once. */
  private readonly turns = new InTurn();

  readonly inProcess = true;

  constructor(readonly ledger: UploadLedger = new UploadLedger()) {}

  reserve(r: UploadReservation, now: number, decide?: (seen: ReservationView) => void | Promise<void>): Promise<void> {
    const { key, ...entry } = r;
    const step = async () => {
      if (!decide) {
        if (!this.ledger.get(key)) this.ledger.add(key, entry, now);
        return;
      }
      await decide(this.ledger.viewOf(r, now));
      this.ledger.add(key, entry, now);
    };
    return this.turns.run(step);
  }

  resume(r: UploadReservation, now: number, decide: (seen: ReservationView) => void | Promise<void>): Promise<void> {
    const { key, ...entry } = r;
    return this.turns.run(async () => {
      const held = this.ledger.get(key);
      if (held && this.ledger.counts(held, now)) {
        if (held.idleUntil !== undefined && r.idleUntil !== undefined) held.idleUntil = Math.max(held.idleUntil, r.idleUntil);
        return;
      }
      await decide(this.ledger.viewOf(r, now, key));
      this.ledger.add(key, { ...entry, written: Math.max(entry.written, held?.written ?? 0) }, now);
    });
  }

  async reservedBytes(disk: string, now: number): Promise<number> {
    return this.ledger.reservedOn(disk, now);
  }

  async recordWritten(entries: ReadonlyArray<readonly [key: string, written: number]>, active?: { now: number; idleUntil: number }): Promise<void> {
    for (const [key, written] of entries) this.ledger.progress(key, Math.max(written, this.ledger.get(key)?.written ?? 0), active);
  }

  async renew(keys: readonly string[], expiresAt: number): Promise<void> {
    for (const key of keys) {
      const e = this.ledger.get(key);
      if (e) e.expiresAt = expiresAt;
    }
  }

  async release(key: string): Promise<void> {
    this.ledger.release(key);
  }

  async releaseAbsent(kind: UploadReservation['kind'], present: readonly string[], madeBefore: number): Promise<number> {
    const keep = new Set(present);
    let n = 0;
    for (const key of this.ledger.keys()) {
      const e = this.ledger.get(key)!;
      if (e.kind === kind && e.since < madeBefore && !keep.has(key)) {
        this.ledger.release(key);
        n++;
      }
    }
    return n;
  }
}
