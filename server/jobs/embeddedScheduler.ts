/**
 * The embedded mode's scheduler: this process runs every job, claiming them itself as slots of
 * their type free up (JobStore.claimNext gives the fair order), and waking for the next retry
 * that is due.
 */
import { mustYield, type JobScheduling, type QueueCore } from './scheduling.js';
import { warningLine } from '../core/logLines.js';

export class EmbeddedScheduler implements JobScheduling {
  private started = false;
  private pumping: Promise<void> | undefined;
  private pumpAgain = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly core: QueueCore) {}

  /** Jobs cut off by the last stop or crash are queued again, after their type's recover. */
  async start(): Promise<void> {
    const { store } = this.core;
    for (const job of await store.list({ states: ['running'], limit: 100_000 })) {
      await this.core.recover(job);
      // The cut-off attempt does not count against the job's retries.
      await store.update(job.id, this.core.cutOff(job), ['running']);
    }
    this.started = true;
    this.poke();
  }

  leaseOf(): undefined {
    return undefined;
  }

  async fence(): Promise<void> {}

  runsElsewhere(): boolean {
    return false;
  }

  registered(): void {
    this.poke();
  }

  /** Nothing to add: the jobs are in the table, which fill() reads when the queue pokes. */
  async queued(): Promise<void> {}

  poke(): void {
    if (!this.started || this.core.stopping()) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = this.fill()
      .catch((err) => this.core.log(warningLine(`Job queue: ${String(err)}`)))
      .finally(() => {
        this.pumping = undefined;
        if (this.pumpAgain) {
          this.pumpAgain = false;
          this.poke();
        }
      });
  }

  setConcurrency(): void {
    this.poke();
  }

  runs(): boolean {
    return true;
  }

  describe(): { engine: string } {
    return { engine: 'embedded' };
  }

  halt(): void {
    clearTimeout(this.timer);
  }

  async close(): Promise<void> {
    await this.pumping;
  }

  busy(): boolean {
    return this.pumping !== undefined;
  }

  private async fill(): Promise<void> {
    const { store, defs, now } = this.core;
    for (const [type, def] of defs) {
      while (!this.core.stopping() && this.countRunning(type) < def.concurrency) {
        // Its start pokes this scheduler again once a job it yields to runs.
        if (await mustYield(this.core, def)) break;
        const job = await store.claimNext([type], now());
        if (!job) break;
        if (this.core.stopping()) {
          // stop() began while this claim was being written and will not wait for a job started
          // now (the storage closes under it): put it back untouched for the next start.
          await store.update(job.id, this.core.cutOff(job), ['running']);
          break;
        }
        this.core.run(job, def);
      }
    }
    clearTimeout(this.timer);
    const next = await store.nextRunAfter([...defs.keys()]);
    if (next !== undefined && !this.core.stopping()) {
      this.timer = setTimeout(() => this.poke(), Math.max(10, next - now()));
      this.timer.unref();
    }
  }

  private countRunning(type: string): number {
    let n = 0;
    for (const r of this.core.running.values()) if (r.job.type === type) n++;
    return n;
  }
}
