import type { VopEvents } from '../core/events.js';

type JobProgress = VopEvents['job.progress'][0];

/** A per-job throttle of progress reports, for the console's events stream. */
export interface ProgressThrottle {
  /** Sends a report now, or holds it until the job's interval ends (keeping only the newest). */
  report(p: JobProgress): void;
  /** Drops what is held for a job that ended, so no report arrives after its end. */
  jobEnded(jobId: string): void;
  /** Drops everything held and every timer (the last stream closed). */
  clear(): void;
}

/**
 * At most one `job.progress` per job per `intervalMs`: an encoder reports many times a second,
 * and a console only needs to move a bar. The newest report within an interval is sent when it
 * ends, so the bar never stops short of where the job is.
 */
export function createProgressThrottle(intervalMs: number, send: (p: JobProgress) => void): ProgressThrottle {
  const throttles = new Map<string, { lastSentAt: number; pending?: JobProgress; timer?: NodeJS.Timeout }>();
  return {
    report(p) {
      const now = Date.now();
      const t = throttles.get(p.jobId) ?? { lastSentAt: 0 };
      throttles.set(p.jobId, t);
      if (now - t.lastSentAt >= intervalMs) {
        t.lastSentAt = now;
        t.pending = undefined;
        send(p);
        return;
      }
      // Within the interval: keep only the newest report and send it when the interval ends.
      t.pending = p;
      t.timer ??= setTimeout(() => {
        t.timer = undefined;
        if (!t.pending) return;
        t.lastSentAt = Date.now();
        send(t.pending);
        t.pending = undefined;
      }, intervalMs - (now - t.lastSentAt));
    },
    jobEnded(jobId) {
      const t = throttles.get(jobId);
      clearTimeout(t?.timer);
      throttles.delete(jobId);
    },
    clear() {
      for (const t of throttles.values()) clearTimeout(t.timer);
      throttles.clear();
    },
  };
}
