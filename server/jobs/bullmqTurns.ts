/**
 * Turns (jobs/turnQueue.ts) on BullMQ with its PostgreSQL backend: the lease is BullMQ's job lock,
 * renewed while a node runs the turn; its stalled-job check (run by every serving node) gives a
 * turn whose lock ran out to another node. BullMQ because it is the reference the issue names
 * (PeerTube runs on it) and its PostgreSQL backend runs in the database cluster mode already
 * has: no Redis to operate, and it runs on Node 20 (pg-boss 11 and graphile-worker 0.18 need 22;
 * pg-boss 10 has no heartbeat, so a transcode longer than its expiry would be taken twice).
 * Loaded only in cluster mode, as PostgreSQL's client is.
 */
import pg from 'pg';
import { createPostgresBackend, runMigrations, withBackend } from 'bullmq';
import { IDLE_IN_TRANSACTION_MS } from '../storage/postgres/postgresDatabase.js';
import type { Turn, TurnQueue } from './turnQueue.js';

export interface BullTurnsOptions {
  databaseUrl: string;
  /**
   * How long a turn's lock lasts without renewal: a node that stops answering loses its jobs
   * after this, and another node takes them within about one and a third of it.
   */
  leaseMs: number;
  log: (line: string) => void;
}

/** BullMQ's classes bound to its PostgreSQL backend. */
const { Queue, Worker } = withBackend(createPostgresBackend);
/** A turn carries nothing: which job it runs is decided when it is taken. */
type TurnData = Record<string, never>;
type TurnsQueue = InstanceType<typeof Queue<TurnData, void>>;
type TurnsWorker = InstanceType<typeof Worker<TurnData, void>>;

/** BullMQ's tables live in their own schema, apart from vop's. */
const SCHEMA = 'bullmq';

/** Connections of one node's pool for the queue: one held by each type's wait for turns, the rest for short queries. */
const POOL_MAX = 8;

/** Times a turn may be given to another node after its holder stopped answering before it is given up (TurnQueue.serve's `lost`). */
const MAX_STALLS = 3;

/** Turns kept after they failed, for whoever looks into BullMQ's tables. */
const FAILED_KEPT = 1_000;

/** Opens the queue: BullMQ's schema is created or brought up to date (once, under BullMQ's own lock). */
export async function openBullTurns(opts: BullTurnsOptions): Promise<BullTurns> {
  // Sessions of a paused node end as ours do (postgresDatabase.ts), or its locks would hold the others.
  const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: POOL_MAX, options: `-c search_path=${SCHEMA} -c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS}` });
  // A connection that breaks is reported here rather than crashing the process; the pool replaces it.
  pool.on('error', (err) => opts.log(`Job queue: a database connection failed: ${err.message}`));
  try {
    const client = await pool.connect();
    try {
      await runMigrations(client);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  return new BullTurns(pool, opts);
}

export class BullTurns implements TurnQueue {
  private readonly queues = new Map<string, TurnsQueue>();
  private readonly workers = new Map<string, TurnsWorker>();
  /** The turns this node runs, by id: aborted when their lock could not be renewed. */
  private readonly held = new Map<string, AbortController>();
  private lastErrorLog = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly opts: BullTurnsOptions,
  ) {}

  async add(type: string, count: number, delayMs = 0): Promise<void> {
    if (count <= 0) return;
    const opts = delayMs > 0 ? { delay: Math.ceil(delayMs) } : {};
    await this.queue(type).addBulk(Array.from({ length: count }, () => ({ name: 'turn', data: {}, opts })));
  }

  serve(type: string, concurrency: number, run: (turn: Turn) => Promise<void>, lost: (turnId: string) => Promise<void>): void {
    if (this.workers.has(type)) return;
    const worker: TurnsWorker = new Worker<TurnData, void>(
      queueName(type),
      // One parameter: BullMQ makes an abort signal only for processors that take a third, and
      // ours comes from `held` (aborted on a failed lock renewal).
      async (job) => {
        const id = job.id!;
        const controller = new AbortController();
        this.held.set(id, controller);
        try {
          await run({ id, signal: controller.signal });
        } finally {
          this.held.delete(id);
        }
      },
      {
        connection: this.pool,
        concurrency,
        lockDuration: this.opts.leaseMs,
        // Every serving node checks for turns whose lock ran out this often.
        stalledInterval: Math.max(1_000, Math.round(this.opts.leaseMs / 3)),
        maxStalledCount: MAX_STALLS,
        removeOnComplete: { count: 0 },
        removeOnFail: { count: FAILED_KEPT },
      },
    );
    worker.on('lockRenewalFailed', (ids) => {
      for (const id of ids) this.held.get(id)?.abort(new Error('the lock could not be renewed'));
    });
    // Only the stalled check fails a turn (a run never throws): its holders kept stopping.
    worker.on('failed', (job) => {
      if (job?.id) lost(job.id).catch((err: unknown) => this.opts.log(`Job queue: giving up turn ${job.id} failed: ${String(err)}`));
    });
    worker.on('error', (err) => this.logError(err));
    this.workers.set(type, worker);
  }

  setConcurrency(type: string, concurrency: number): void {
    const worker = this.workers.get(type);
    if (worker) worker.concurrency = concurrency;
  }

  async pending(type: string): Promise<number> {
    const counts = await this.queue(type).getJobCounts('wait', 'delayed', 'prioritized');
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  async isLive(type: string, id: string): Promise<boolean> {
    const state = await this.queue(type).getJobState(id);
    return state === 'active' || state === 'waiting' || state === 'delayed' || state === 'prioritized';
  }

  describe(): { engine: string; leaseMs: number } {
    return { engine: 'BullMQ on PostgreSQL', leaseMs: this.opts.leaseMs };
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.workers.values()].map((w) => w.close()));
    await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
    await this.pool.end().catch(() => undefined);
  }

  private queue(type: string): TurnsQueue {
    let queue = this.queues.get(type);
    if (!queue) {
      queue = new Queue<TurnData, void>(queueName(type), {
        connection: this.pool,
        defaultJobOptions: { removeOnComplete: true, removeOnFail: { count: FAILED_KEPT } },
      });
      queue.on('error', (err) => this.logError(err));
      this.queues.set(type, queue);
    }
    return queue;
  }

  /** BullMQ reports each failed lock renewal and each lost connection: a line a minute at most. */
  private logError(err: Error): void {
    const now = Date.now();
    if (now - this.lastErrorLog < 60_000) return;
    this.lastErrorLog = now;
    this.opts.log(`Job queue: ${err.message}`);
  }
}

function queueName(type: string): string {
  return `vop-${type}`;
}
