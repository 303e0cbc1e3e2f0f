import type { JobFilter, JobRecord, JobStore } from '../storage/jobRecords.js';

/**
 * The queue as the console reads it: jobs by id, filtered lists in queue order, and the counts
 * of live jobs by type. What the console does to jobs (cancel, retry, priority, moves) is the
 * queue's own (JobQueue). Used by routes/adminJobs.ts and routes/adminOverview.ts; no HTTP here.
 */
export class JobAdmin {
  constructor(private readonly jobStore: JobStore) {}

  get(id: string): Promise<JobRecord | undefined> {
    return this.jobStore.get(id);
  }

  /** Jobs `filter` matches: running, then queued in queue order, then finished, newest first. */
  list(filter: JobFilter): Promise<JobRecord[]> {
    return this.jobStore.list(filter);
  }

  /** Queued and running jobs by type: `{<type>: {queued, running}}`. */
  async activeCounts(): Promise<Record<string, { queued: number; running: number }>> {
    const counts: Record<string, { queued: number; running: number }> = {};
    for (const { type, state, count } of await this.jobStore.countByTypeAndState(['queued', 'running'])) {
      const c = (counts[type] ??= { queued: 0, running: 0 });
      if (state === 'running') c.running += count;
      else c.queued += count;
    }
    return counts;
  }
}
