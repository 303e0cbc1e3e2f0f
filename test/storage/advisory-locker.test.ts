/**
 * The tus lock of cluster mode (server/storage/postgres/advisoryLocker.ts) on a real PostgreSQL:
 * @tus/server's lock protocol (MemoryLocker's) across two lockers, as two API nodes have, each on
 * its own pool.
 */
import { ERRORS, type Lock } from '@tus/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAdvisoryLocker, type AdvisoryLocker } from '../../server/storage/postgres/advisoryLocker.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

let pg: TestPostgres;
let one: AdvisoryLocker;
let two: AdvisoryLocker;

beforeAll(async () => {
  pg = await startPostgres();
  const url = await pg.createDatabase();
  const open = () => openAdvisoryLocker({ url, connectRetry: { maxRetries: 0, baseDelayMs: 0, maxDelayMs: 0, jitter: false }, maxConnections: 4, acquireTimeoutMs: 1_000, log: () => undefined });
  [one, two] = [await open(), await open()];
}, 60_000);

afterAll(async () => {
  await one?.close();
  await two?.close();
  pg?.stop();
});

const never = () => new AbortController().signal;

describe('AdvisoryLocker', () => {
  it("asks the holder on the other node to let go, and takes the lock once it has", async () => {
    const held = one.newLock('upload-a');
    let asked = 0;
    await held.lock(never(), () => {
      asked++;
      // The holder ends its request, then lets go: as @tus/server does after lockDrainTimeout.
      void held.unlock();
    });
    const waiter = two.newLock('upload-a');
    await waiter.lock(never(), () => undefined);
    expect(asked).toBeGreaterThanOrEqual(1);
    await waiter.unlock();
  });

  it('gives up with ERR_LOCK_TIMEOUT when the holder does not let go, and returns its connection', async () => {
    const held = one.newLock('upload-b');
    await held.lock(never(), () => undefined);
    try {
      // More tries than the pool has connections: a failed try must not keep one.
      for (let i = 0; i < 5; i++) await expect(two.newLock('upload-b').lock(never(), () => undefined)).rejects.toBe(ERRORS.ERR_LOCK_TIMEOUT);
      expect(two.pool.totalCount - two.pool.idleCount).toBe(1); // the listener only
    } finally {
      await held.unlock();
    }
    const after = two.newLock('upload-b');
    await after.lock(never(), () => undefined);
    await after.unlock();
  }, 30_000);

  it('stops waiting when the request goes away (its stop signal)', async () => {
    const held = one.newLock('upload-c');
    await held.lock(never(), () => undefined);
    try {
      const gone = new AbortController();
      const waiting = two.newLock('upload-c').lock(gone.signal, () => undefined);
      gone.abort();
      await expect(waiting).rejects.toBe(ERRORS.ERR_LOCK_TIMEOUT);
    } finally {
      await held.unlock();
    }
  });

  it('keeps two locks of one process apart, and other ids free', async () => {
    const first = one.newLock('upload-d');
    await first.lock(never(), () => undefined);
    const other: Lock = one.newLock('upload-e');
    await other.lock(never(), () => undefined); // another id: not in the way
    const gone = new AbortController();
    const second = one.newLock('upload-d').lock(gone.signal, () => undefined);
    gone.abort();
    await expect(second).rejects.toBe(ERRORS.ERR_LOCK_TIMEOUT);
    await other.unlock();
    await first.unlock();
    await expect(first.unlock()).rejects.toThrow('Releasing an unlocked lock!');
  });
});
