import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ERRORS, type Lock, type Locker, type RequestRelease } from '@tus/server';
import type { Notification, Pool, PoolClient } from 'pg';
import type { RetryConfig } from '../../core/retry.js';
import { PostgresDatabase } from './postgresDatabase.js';

/** Options of {@link AdvisoryLocker}; defaults in {@link DEFAULT_ADVISORY_LOCKER_OPTIONS}. */
export interface AdvisoryLockerOptions {
  /** How long `lock()` waits for a lock held elsewhere before it gives up with ERR_LOCK_TIMEOUT, in ms (MemoryLocker's 30 s). */
  acquireTimeoutMs: number;
  /** First pause between two tries of a held lock, in ms; doubled per try up to {@link pollMaxDelayMs}. */
  pollBaseDelayMs: number;
  /** Longest pause between two tries, in ms. */
  pollMaxDelayMs: number;
  /** Keys are hashed from `<namespace>:<id>`, so these locks never meet other users of advisory locks. */
  namespace: string;
  /** Where a lost connection (and with it a lock) is reported. */
  log: (line: string) => void;
}

export const DEFAULT_ADVISORY_LOCKER_OPTIONS = {
  acquireTimeoutMs: 30_000,
  pollBaseDelayMs: 25,
  pollMaxDelayMs: 500,
  namespace: 'tus',
} satisfies Partial<AdvisoryLockerOptions>;

/**
 * The channel on which a waiter asks the holder of a lock, on whatever node, to let it go: the
 * payload is `<namespace>:<id>`.
 */
const RELEASE_CHANNEL = 'vop_lock_release';

/** The 64-bit advisory lock key of `<namespace>:<id>` (as text: node-postgres sends BIGINTs so). */
export function advisoryLockKey(namespace: string, id: string): string {
  return crypto.createHash('sha256').update(`${namespace}:${id}`).digest().readBigInt64BE(0).toString();
}

/**
 * @tus/server's Locker over PostgreSQL advisory locks, for uploads that several API nodes serve
 * (issue 11, item 3): a thin adapter over the database's own lock, so no lock outlives the
 * connection that holds it (a node that dies releases its locks with its sessions).
 *
 * The protocol is MemoryLocker's (node_modules/@tus/server/dist/lockers/MemoryLocker.js):
 * `lock(stopSignal, requestRelease)` takes the lock or, while another request holds it, asks that
 * holder to let go (its `requestRelease`, which makes @tus/server end that request's write after
 * `lockDrainTimeout`) and tries again, until it has it, the wait passes `acquireTimeoutMs`, or
 * `stopSignal` aborts (the request went away): then ERR_LOCK_TIMEOUT. Across nodes the request to
 * let go travels by NOTIFY on {@link RELEASE_CHANNEL}; every node LISTENs and calls the
 * `requestRelease` of the lock it holds under that name.
 *
 * Each held lock has a connection of its own (session-level `pg_try_advisory_lock`, never the
 * blocking form, so every wait is bounded here), from a pool apart from the stores' so that
 * uploads in flight never starve metadata queries.
 */
export class AdvisoryLocker implements Locker {
  readonly options: AdvisoryLockerOptions;
  /** The `requestRelease` of each lock held by this process, by `<namespace>:<id>`. */
  private readonly held = new Map<string, RequestRelease>();
  private listener: PoolClient | undefined;
  private closed = false;

  /**
   * @param pool where each lock takes its connection, and the listener its own
   * @param endPool how {@link close} ends the pool, when the locker owns it
   */
  constructor(
    readonly pool: Pool,
    options: Partial<AdvisoryLockerOptions> & Pick<AdvisoryLockerOptions, 'log'>,
    private readonly endPool: () => Promise<void> = async () => undefined,
  ) {
    this.options = { ...DEFAULT_ADVISORY_LOCKER_OPTIONS, ...options };
    const o = this.options;
    if (!(o.acquireTimeoutMs > 0)) throw new Error('Invalid advisory locker option acquireTimeoutMs: must be > 0');
    if (!(o.pollBaseDelayMs > 0 && o.pollMaxDelayMs >= o.pollBaseDelayMs)) throw new Error('Invalid advisory locker options: need 0 < pollBaseDelayMs ≤ pollMaxDelayMs');
  }

  /** Starts listening for requests to let go of the locks this process holds. */
  async start(): Promise<void> {
    const client = await this.pool.connect();
    client.on('notification', (n: Notification) => this.onReleaseRequest(n.payload ?? ''));
    // A listening connection that fails is replaced: without it, waiters elsewhere would wait
    // out their timeout instead of taking the lock from a request of this node.
    client.on('error', (err) => {
      if (this.listener !== client) return;
      this.listener = undefined;
      client.release(err);
      if (this.closed) return;
      this.options.log(`Upload locks: the connection listening for release requests failed (${err.message}); listening again.`);
      void this.relisten();
    });
    await client.query(`LISTEN ${RELEASE_CHANNEL}`);
    this.listener = client;
  }

  newLock(id: string): Lock {
    return new AdvisoryLock(this, id);
  }

  /** Stops listening, and ends the pool if the locker owns it. */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.listener;
    this.listener = undefined;
    if (client) {
      await client.query(`UNLISTEN ${RELEASE_CHANNEL}`).catch(() => undefined);
      client.release();
    }
    await this.endPool();
  }

  /** @internal A lock of this process was taken (or let go: `release` undefined). */
  noteHeld(name: string, release: RequestRelease | undefined): void {
    if (release) this.held.set(name, release);
    else this.held.delete(name);
  }

  /** @internal Asks whoever holds `name`, on any node, to let it go. */
  async requestRelease(client: PoolClient, name: string): Promise<void> {
    await client.query('SELECT pg_notify($1, $2)', [RELEASE_CHANNEL, name]);
  }

  private onReleaseRequest(name: string): void {
    const release = this.held.get(name);
    if (!release) return;
    void Promise.resolve()
      .then(release)
      .catch((err: unknown) => this.options.log(`Upload locks: letting go of ${name} failed: ${String(err)}`));
  }

  private async relisten(): Promise<void> {
    for (let retry = 1; !this.closed && !this.listener; retry++) {
      await sleep(Math.min(this.options.pollMaxDelayMs * 2 ** retry, 30_000));
      if (this.closed) return;
      await this.start().catch((err: unknown) => this.options.log(`Upload locks: listening again failed (${(err as Error).message}); trying again.`));
    }
  }
}

class AdvisoryLock implements Lock {
  private readonly name: string;
  private readonly key: string;
  private client: PoolClient | undefined;
  private onConnectionError: ((err: Error) => void) | undefined;

  constructor(
    private readonly locker: AdvisoryLocker,
    id: string,
  ) {
    this.name = `${locker.options.namespace}:${id}`;
    this.key = advisoryLockKey(locker.options.namespace, id);
  }

  async lock(stopSignal: AbortSignal, requestRelease: RequestRelease): Promise<void> {
    const o = this.locker.options;
    const deadline = Date.now() + o.acquireTimeoutMs;
    let client: PoolClient;
    try {
      // Bounded by the pool's connection timeout (postgresDatabase.ts).
      client = await this.locker.pool.connect();
    } catch (err) {
      o.log(`Upload locks: no connection for ${this.name}: ${(err as Error).message}`);
      throw ERRORS.ERR_LOCK_TIMEOUT;
    }
    // A checked-out client that fails emits 'error', which must be listened to. While held, the
    // lock went with the session: the request is asked to stop, as if another had asked for it.
    let held = false;
    const onError = (err: Error): void => {
      if (!held) return;
      o.log(`Upload locks: the connection holding ${this.name} failed (${err.message}); its request is stopped.`);
      void Promise.resolve().then(requestRelease).catch(() => undefined);
    };
    client.on('error', onError);
    try {
      for (let attempt = 0; ; attempt++) {
        const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [this.key]);
        if (rows[0]?.ok) {
          held = true;
          this.client = client;
          this.onConnectionError = onError;
          this.locker.noteHeld(this.name, requestRelease);
          return;
        }
        // @tus/server's lock protocol: the waiter asks the holder to let go, then tries again.
        await this.locker.requestRelease(client, this.name);
        const left = deadline - Date.now();
        if (stopSignal.aborted || left <= 0) throw ERRORS.ERR_LOCK_TIMEOUT;
        const pause = Math.min(left, o.pollMaxDelayMs, o.pollBaseDelayMs * 2 ** attempt);
        await sleep(pause, undefined, { signal: stopSignal }).catch(() => undefined);
      }
    } catch (err) {
      client.off('error', onError);
      // A failed query may leave the connection unusable: destroyed rather than pooled.
      client.release(err === ERRORS.ERR_LOCK_TIMEOUT ? undefined : (err as Error));
      if (err === ERRORS.ERR_LOCK_TIMEOUT) throw err;
      o.log(`Upload locks: taking ${this.name} failed: ${(err as Error).message}`);
      throw ERRORS.ERR_LOCK_TIMEOUT;
    }
  }

  async unlock(): Promise<void> {
    const client = this.client;
    if (!client) throw new Error('Releasing an unlocked lock!');
    this.client = undefined;
    this.locker.noteHeld(this.name, undefined);
    try {
      await client.query('SELECT pg_advisory_unlock($1)', [this.key]);
      client.off('error', this.onConnectionError!);
      client.release();
    } catch (err) {
      client.off('error', this.onConnectionError!);
      // Destroying the connection ends its session, and the lock with it.
      client.release(err as Error);
    }
  }
}

/** Options of {@link openAdvisoryLocker}. */
export interface OpenAdvisoryLockerOptions extends Partial<AdvisoryLockerOptions> {
  /** The database's address (the stores' `databaseUrl`). */
  url: string;
  /** How long to wait for the database at start-up (the stores' setting). */
  connectRetry: RetryConfig;
  /** Connections of the lock pool: locks held at once, plus one that listens. */
  maxConnections: number;
  log: (line: string) => void;
}

/**
 * An {@link AdvisoryLocker} on a pool of its own (a held lock keeps its connection for as long as
 * a PATCH streams), listening; its `close` ends the pool.
 */
export async function openAdvisoryLocker(options: OpenAdvisoryLockerOptions): Promise<AdvisoryLocker> {
  const db = await PostgresDatabase.open({ url: options.url, connectRetry: options.connectRetry, maxConnections: options.maxConnections, log: options.log });
  const locker = new AdvisoryLocker(db.pool, options, () => db.close());
  try {
    await locker.start();
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
  return locker;
}
