import { describe, expect, it } from 'vitest';
import type { ReservationView, UploadReservation, UploadReservationStore } from '../../server/storage/types.js';

/**
 * The contract of the upload reservations' stores (server/storage/types.ts
 * UploadReservationStore), written once and run against both: the embedded mode's ledger in this
 * process's memory (test/storage/store-contract-embedded.test.ts), and PostgreSQL, where two nodes are two
 * pools on one database (test/storage/store-contract-postgres.test.ts). A store passes by what it
 * answers, never by how it keeps reservations.
 */

/** Two handles on one empty store, as two nodes (in memory, the one process twice). */
export type UploadReservationStorePair = () => Promise<[UploadReservationStore, UploadReservationStore]>;

const T0 = 1_800_000_000_000;
let n = 0;
const reservation = (overrides: Partial<UploadReservation> = {}): UploadReservation => ({
  key: `upload-${++n}`,
  kind: 'tus',
  videoId: `video-${n}`,
  disk: 'media',
  size: 100,
  written: 0,
  expiresAt: T0 + 60_000,
  ...overrides,
});

/** A decision that refuses what does not fit in `free` bytes, and any second upload of a video. */
const fitsIn =
  (free: number, size: number) =>
  ({ videoUpload, reservedBytes }: ReservationView) => {
    if (videoUpload) throw new Error(`video taken by ${videoUpload.key}`);
    if (free - reservedBytes < size) throw new Error('no room');
  };

export function uploadReservationStoreContract(engine: string, pair: UploadReservationStorePair): void {
  describe(`upload reservation store contract: ${engine}`, () => {
    it('shows a decision the bytes promised on the same disk and the video\'s reservation, and stores what passes', async () => {
      const [s, other] = await pair();
      const a = reservation({ size: 100, written: 30, owner: 'page-1', node: 'node-a' });
      await s.reserve(a, T0, () => undefined);
      await s.reserve(reservation({ disk: 'node:b', size: 1000 }), T0, () => undefined);
      expect(await other.reservedBytes('media', T0)).toBe(70);
      expect(await other.reservedBytes('node:b', T0)).toBe(1000);
      expect(await other.reservedBytes('elsewhere', T0)).toBe(0);

      const seen: ReservationView[] = [];
      await other.reserve(reservation({ videoId: a.videoId, size: 5 }), T0, (view) => {
        seen.push(view);
      });
      expect(seen).toEqual([{ videoUpload: a, reservedBytes: 70, appReservedBytes: 0, clientReservedBytes: 0 }]);
      const fresh: ReservationView[] = [];
      await other.reserve(reservation({ disk: 'node:b' }), T0, (view) => void fresh.push(view));
      expect(fresh).toEqual([{ reservedBytes: 1000, appReservedBytes: 0, clientReservedBytes: 0 }]);
    });

    it('stores nothing when the decision throws, and throws its error', async () => {
      const [s, other] = await pair();
      const refused = reservation();
      await expect(s.reserve(refused, T0, () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
      expect(await other.reservedBytes('media', T0)).toBe(0);
      const seen: ReservationView[] = [];
      await other.reserve(reservation({ videoId: refused.videoId }), T0, (view) => void seen.push(view));
      expect(seen[0]!.videoUpload).toBeUndefined();
    });

    it('counts a reservation until its expiry, and one without an expiry until it is released', async () => {
      const [s, other] = await pair();
      const expiring = reservation({ size: 10, expiresAt: T0 + 1000 });
      const held = reservation({ size: 20, expiresAt: undefined });
      await s.reserve(expiring, T0, () => undefined);
      await s.reserve(held, T0, () => undefined);
      expect(await other.reservedBytes('media', T0 + 999)).toBe(30);
      expect(await other.reservedBytes('media', T0 + 1000)).toBe(20);
      expect(await other.reservedBytes('media', T0 + 10 * 365 * 86_400_000)).toBe(20);
      // Past its expiry it holds its video no longer either.
      const seen: ReservationView[] = [];
      await other.reserve(reservation({ videoId: expiring.videoId, size: 0 }), T0 + 1000, (view) => void seen.push(view));
      expect(seen).toEqual([{ reservedBytes: 20, appReservedBytes: 0, clientReservedBytes: 0 }]);
      await s.release(held.key);
      expect(await other.reservedBytes('media', T0 + 1000)).toBe(0);
    });

    it('shrinks a reservation as bytes are written, never below nothing, and never back up', async () => {
      const [s, other] = await pair();
      const a = reservation({ size: 100 });
      const b = reservation({ size: 50 });
      await s.reserve(a, T0, () => undefined);
      await s.reserve(b, T0, () => undefined);
      await other.recordWritten([
        [a.key, 40],
        [b.key, 80],
        ['unknown', 5],
      ]);
      expect(await s.reservedBytes('media', T0)).toBe(60);
      // A late report of an earlier count (another node's, for an earlier PATCH) changes nothing.
      await s.recordWritten([[a.key, 10]]);
      expect(await other.reservedBytes('media', T0)).toBe(60);
      await s.recordWritten([]);
    });

    it('moves the expiry of renewed leases, and of those only', async () => {
      const [s, other] = await pair();
      const a = reservation({ size: 10, expiresAt: T0 + 1000, kind: 'multipart' });
      const b = reservation({ size: 20, expiresAt: T0 + 1000, kind: 'multipart' });
      await s.reserve(a, T0, () => undefined);
      await s.reserve(b, T0, () => undefined);
      await other.renew([a.key, 'unknown'], T0 + 5000);
      expect(await s.reservedBytes('media', T0 + 2000)).toBe(10);
      expect(await s.reservedBytes('media', T0 + 5000)).toBe(0);
      await other.renew([], T0);
    });

    it('releases for every handle; releasing an unknown key is no error', async () => {
      const [s, other] = await pair();
      const a = reservation();
      await s.reserve(a, T0, () => undefined);
      await other.release(a.key);
      await other.release('unknown');
      expect(await s.reservedBytes('media', T0)).toBe(0);
      const seen: ReservationView[] = [];
      await s.reserve(reservation({ videoId: a.videoId }), T0, (view) => void seen.push(view));
      expect(seen[0]!.videoUpload).toBeUndefined();
    });

    it('takes back a reservation without a decision only if its key is not there', async () => {
      const [s, other] = await pair();
      const a = reservation({ size: 100 });
      await s.reserve(a, T0, () => undefined);
      await other.recordWritten([[a.key, 60]]);
      await other.reserve({ ...a, written: 0 }, T0 + 10);
      expect(await s.reservedBytes('media', T0)).toBe(40);
      const b = reservation({ size: 7 });
      await other.reserve(b, T0 + 10);
      expect(await s.reservedBytes('media', T0)).toBe(47);
    });

    it('releases the reservations of a kind that storage no longer holds, made before the grace', async () => {
      const [s, other] = await pair();
      const kept = reservation({ size: 1 });
      const gone = reservation({ size: 2 });
      const young = reservation({ size: 4 });
      const body = reservation({ size: 8, kind: 'multipart' });
      await s.reserve(kept, T0, () => undefined);
      await s.reserve(gone, T0, () => undefined);
      await s.reserve(body, T0, () => undefined);
      await s.reserve(young, T0 + 100, () => undefined);
      expect(await other.releaseAbsent('tus', [kept.key], T0 + 50)).toBe(1);
      expect(await s.reservedBytes('media', T0)).toBe(1 + 4 + 8);
      expect(await other.releaseAbsent('tus', [], T0)).toBe(0);
    });

    it("shows a decision the bytes promised on the disk to the same application and to the same address", async () => {
      const [s, other] = await pair();
      await s.reserve(reservation({ size: 100, appId: 'app-1', client: '10.0.0.1' }), T0, () => undefined);
      await s.reserve(reservation({ size: 40, appId: 'app-1', client: '10.0.0.2' }), T0, () => undefined);
      await s.reserve(reservation({ size: 7, appId: 'app-2', client: '10.0.0.1' }), T0, () => undefined);
      await s.reserve(reservation({ size: 1000, disk: 'node:b', appId: 'app-1', client: '10.0.0.1' }), T0, () => undefined);
      const seen: ReservationView[] = [];
      await other.reserve(reservation({ size: 1, appId: 'app-1', client: '10.0.0.1' }), T0, (view) => void seen.push(view));
      // Neither an application nor an address left unsaid matches anything.
      await other.reserve(reservation({ size: 1 }), T0, (view) => void seen.push(view));
      expect(seen).toEqual([
        { reservedBytes: 147, appReservedBytes: 140, clientReservedBytes: 107 },
        { reservedBytes: 148, appReservedBytes: 0, clientReservedBytes: 0 },
      ]);
    });

    it('stops counting the bytes of a reservation gone idle, which still holds its video; bytes that arrive in time keep it counting', async () => {
      const [s, other] = await pair();
      const quiet = reservation({ size: 10, idleUntil: T0 + 1000, appId: 'app-1' });
      const busy = reservation({ size: 20, idleUntil: T0 + 1000, appId: 'app-1' });
      await s.reserve(quiet, T0, () => undefined);
      await s.reserve(busy, T0, () => undefined);
      await other.recordWritten([[busy.key, 5]], { now: T0 + 900, idleUntil: T0 + 1900 });
      expect(await other.reservedBytes('media', T0 + 999)).toBe(25);
      expect(await other.reservedBytes('media', T0 + 1000)).toBe(15);
      // Bytes reported once it has gone idle do not revive it: that takes resume's decision.
      await s.recordWritten([[quiet.key, 2]], { now: T0 + 1500, idleUntil: T0 + 2500 });
      expect(await other.reservedBytes('media', T0 + 1500)).toBe(15);
      // A report without `active` (an offset read again) moves no idle time.
      await s.recordWritten([[busy.key, 6]]);
      expect(await other.reservedBytes('media', T0 + 1900)).toBe(0);
      const seen: ReservationView[] = [];
      await other.reserve(reservation({ videoId: quiet.videoId, appId: 'app-1' }), T0 + 1500, (view) => void seen.push(view));
      expect(seen).toEqual([{ videoUpload: { ...quiet, written: 2 }, reservedBytes: 14, appReservedBytes: 14, clientReservedBytes: 0 }]);
    });

    it('resumes a reservation that still counts by moving its idle time on, without a decision', async () => {
      const [s, other] = await pair();
      const a = reservation({ size: 10, idleUntil: T0 + 1000 });
      await s.reserve(a, T0, () => undefined);
      await other.resume({ ...a, idleUntil: T0 + 1800 }, T0 + 800, () => {
        throw new Error('no decision for a reservation that counts');
      });
      expect(await s.reservedBytes('media', T0 + 1700)).toBe(10);
      expect(await s.reservedBytes('media', T0 + 1800)).toBe(0);
    });

    it('resumes a reservation gone idle (or missing) only through a decision that leaves it out, and then counts it again', async () => {
      const [s, other] = await pair();
      const a = reservation({ size: 100, idleUntil: T0 + 1000, appId: 'app-1', client: '10.0.0.1' });
      const b = reservation({ size: 30, appId: 'app-1', client: '10.0.0.1' });
      await s.reserve(a, T0, () => undefined);
      await s.reserve(b, T0, () => undefined);
      await s.recordWritten([[a.key, 40]]);
      const later = T0 + 5000;
      const again = { ...a, written: 40, idleUntil: later + 1000, client: '10.0.0.2' };
      // Refused: nothing changes, it still holds its video and counts no bytes.
      await expect(other.resume(again, later, () => Promise.reject(new Error('no room')))).rejects.toThrow('no room');
      expect(await s.reservedBytes('media', later)).toBe(30);
      const seen: ReservationView[] = [];
      const look = (view: ReservationView) => {
        seen.push(view);
        throw new Error('looked only');
      };
      await expect(s.reserve(reservation({ videoId: a.videoId }), later, look)).rejects.toThrow('looked only');
      expect(seen[0]!.videoUpload?.key).toBe(a.key);

      const views: ReservationView[] = [];
      await other.resume(again, later, (view) => void views.push(view));
      expect(views).toEqual([{ reservedBytes: 30, appReservedBytes: 30, clientReservedBytes: 0 }]);
      expect(await s.reservedBytes('media', later + 999)).toBe(90);
      expect(await s.reservedBytes('media', later + 1000)).toBe(30);

      // One not there at all (released meanwhile) is reserved anew through the decision.
      await s.release(b.key);
      const decided: ReservationView[] = [];
      await other.resume({ ...b, written: 10, idleUntil: later + 1000 }, later, (view) => void decided.push(view));
      expect(decided).toHaveLength(1);
      expect(await s.reservedBytes('media', later)).toBe(60 + 20);
    });

    it('two handles reserving at once never promise the same bytes twice, nor take one video twice', async () => {
      const [s, other] = await pair();
      // 10 creations of 30 bytes against 100 free, each decision slow (the free space is read
      // from the disk then): three fit, whichever handle made them.
      const slowFit = (view: ReservationView) => new Promise<void>((resolve) => setTimeout(resolve, 5)).then(() => fitsIn(100, 30)(view));
      const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => (i % 2 ? s : other).reserve(reservation({ size: 30 }), T0, slowFit)));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(3);
      expect(await s.reservedBytes('media', T0)).toBe(90);
      // And 10 creations of one video: one is taken.
      const video = reservation().videoId;
      const taken = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? s : other).reserve(reservation({ videoId: video, disk: 'other', size: 1 }), T0, slowFit)),
      );
      expect(taken.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    });
  });
}
