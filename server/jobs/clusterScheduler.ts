/**
 * Cluster mode's scheduler: nodes take turns of a shared queue (turnQueue.ts). Each turn claims
 * one job under a lease `<turn>/<nonce>`; a node that dies or stops answering loses its turn, and
 * the node that takes the turn next takes the job over, from the start, after its type's
 * recover. A node checks every few seconds that the jobs it runs are still its own (cancelled or
 * taken over elsewhere), and now and then queues again the jobs whose holder is gone for good.
 */
import crypto from 'node:crypto';
import type { JobRecord } from '../storage/jobRecords.js';
import type { JobTypeDefinition } from './jobHandler.js';
import { mustYield, type JobScheduling, type QueueCore, type RunningJob } from './scheduling.js';
import { turnOfLease, type Turn, type TurnQueue } from './turnQueue.js';

/** The shared queue and this node's part in it. */
export interface ClusterJobs {
  turns: TurnQueue;
  /** What this node is: an API node runs no job type that runs on workers only (JobTypeDefinition.runsOn). */
  role: 'all' | 'api' | 'worker';
  /** How often a node checks that the jobs it runs are still its own (cancelled or taken over elsewhere). */
  watchMs?: number;
}

/** How often, in cluster mode, a node checks by default that its running jobs are still its own. */
const WATCH_MS = 2_000;
/** How soon a turn that yielded to another type's jobs (JobTypeDefinition.yieldsTo) comes back. */
const YIELD_RETRY_MS = 1_000;

export class ClusterScheduler implements JobScheduling {
  /** True once start() serves the registered types: a type registered later is served at once. */
  private started = false;
  private watchTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly core: QueueCore,
    private readonly cluster: ClusterJobs,
  ) {}

  /**
   * Jobs whose holder is gone for good (its turn is finished or unknown: a cluster stopped all at
   * once, a queue emptied by hand) are queued again; the queued jobs of each type get turns
   * enough; this node then takes turns of the types its role runs.
   */
  async start(): Promise<void> {
    const { turns } = this.cluster;
    await this.requeueOrphans();
    this.started = true;
    for (const [type, def] of this.core.defs) this.serve(type, def);
    this.watchTimer = setInterval(() => {
      for (const entry of this.core.running.values()) void this.core.check(entry).catch(() => undefined);
    }, this.cluster.watchMs ?? WATCH_MS);
    this.watchTimer.unref();
    // Again now and then: a turn can end while its job still runs in the database (its node lost
    // the lock and the turn was completed before anyone took it over), and nothing else finds that.
    this.sweepTimer = setInterval(() => void this.requeueOrphans().catch((err: unknown) => this.core.log(`Job queue: ${String(err)}`)), 2 * (turns.describe().leaseMs ?? 15_000));
    this.sweepTimer.unref();
  }

  /** Every write of an attempt is fenced on its lease. */
  leaseOf(job: JobRecord): string {
    return job.lease ?? '';
  }

  async fence(entry: RunningJob): Promise<void> {
    await this.core.check(entry);
  }

  /** A running job this node does not run is another node's: its cancel is written, and that node's watch stops it. */
  runsElsewhere(job: JobRecord): boolean {
    return job.state === 'running';
  }

  registered(type: string, def: JobTypeDefinition): void {
    if (this.started) this.serve(type, def);
  }

  async queued(type: string, count: number, delayMs?: number): Promise<void> {
    await this.cluster.turns.add(type, count, delayMs);
  }

  /** Turns start jobs, not free slots. */
  poke(): void {}

  setConcurrency(type: string, concurrency: number): void {
    this.cluster.turns.setConcurrency(type, concurrency);
  }

  runs(type: string): boolean {
    return this.cluster.role !== 'api' || this.core.defs.get(type)?.runsOn !== 'workers';
  }

  describe(): { engine: string; leaseMs: number } {
    return this.cluster.turns.describe();
  }

  halt(): void {
    clearInterval(this.watchTimer);
    clearInterval(this.sweepTimer);
  }

  async close(): Promise<void> {
    await this.cluster.turns.close();
  }

  busy(): boolean {
    return false;
  }

  /**
   * Running jobs whose turn has ended or is unknown (their node is gone), queued again; and
   * queued jobs given turns enough (a node stopped between inserting a job and adding its turn).
   */
  private async requeueOrphans(): Promise<void> {
    const { turns } = this.cluster;
    const { store } = this.core;
    for (const job of await store.list({ states: ['running'], limit: 100_000 })) {
      if (this.core.running.has(job.id)) continue;
      const lease = job.lease ?? '';
      if (lease !== '' && (await turns.isLive(job.type, turnOfLease(lease)))) continue;
      await this.requeueOrphan(job, 'its node is gone');
    }
    for (const { type, count } of await store.countByTypeAndState(['queued'])) {
      // A turn is taken off the pending ones before its job is claimed: a few more than needed
      // may be added meanwhile, and an extra turn finds nothing and ends.
      const missing = count - (await turns.pending(type));
      if (missing > 0) await turns.add(type, missing);
    }
  }

  /**
   * A running job whose holder is gone, queued again (its cut-off attempt not counted), with a
   * turn. Held first under a lease of its own, so that nothing else takes it while its partial
   * outputs are removed, and so that a job that ended meanwhile is left alone.
   */
  private async requeueOrphan(job: JobRecord, why: string): Promise<void> {
    const { core } = this;
    const hold = `${turnOfLease(job.lease ?? '') || 'orphan'}/requeue-${crypto.randomBytes(4).toString('hex')}`;
    if (!(await core.store.update(job.id, { lease: hold, updatedAt: core.now() }, ['running'], job.lease ?? ''))) return;
    await core.recover(job);
    if (await core.endAttempt(job.id, core.cutOff(job), hold)) {
      core.log(`Job ${job.id} (${job.type}) queued again: ${why}.`);
      await this.cluster.turns.add(job.type, 1);
    }
  }

  /** This node takes turns of `type` if its role runs that type. */
  private serve(type: string, def: JobTypeDefinition): void {
    const { core } = this;
    if (!this.runs(type)) return;
    this.cluster.turns.serve(
      type,
      def.concurrency,
      (turn) => this.runTurn(type, def, turn),
      async (turnId) => {
        // The queue gave the turn up (its holders kept stopping): the job is queued again with a
        // turn of its own, its attempt counted, so a job that kills every node ends failed.
        const job = await core.store.takeOver(type, turnId, `${turnId}/given-up`, core.now());
        if (!job) return;
        if (job.attempts >= job.maxAttempts) {
          if (await core.finish(job, { state: 'failed', error: 'the nodes running it stopped answering' }, job.lease)) await core.giveUp(job, 'the nodes running it stopped answering');
          return;
        }
        await this.requeueOrphan({ ...job, attempts: job.attempts + 1 }, 'the nodes running it stopped answering');
      },
    );
  }

  /** One turn: the job it held before (taken over from a node that stopped answering) or the next in the fair order. */
  private async runTurn(type: string, def: JobTypeDefinition, turn: Turn): Promise<void> {
    const { core } = this;
    if (core.stopping()) {
      // Taken while stopping: handed back, so the job it stands for keeps a turn.
      await this.cluster.turns.add(type, 1);
      return;
    }
    const lease = `${turn.id}/${crypto.randomBytes(6).toString('hex')}`;
    let job = await core.store.takeOver(type, turn.id, lease, core.now());
    if (!job && (await mustYield(core, def))) {
      // Another type's jobs go first (JobTypeDefinition.yieldsTo): the turn comes back a little
      // later, when those have started, on whichever node takes it then.
      await this.cluster.turns.add(type, 1, YIELD_RETRY_MS);
      return;
    }
    if (job) {
      core.log(`Job ${job.id} (${type}): taken over from a node that stopped answering; it runs again from the start.`);
      await core.recover(job);
    } else {
      job = await core.store.claimNext([type], core.now(), lease);
    }
    if (!job) return;
    await core.run(job, def, turn).promise;
  }
}
