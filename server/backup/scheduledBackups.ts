/**
 * The backup schedule (docs/backup.md, "Scheduled backups and the console"): a small daily backup
 * (database and settings) and, if the admin chose, a full one with media, each at its time of day
 * in the server's time zone, the oldest removed beyond what is kept. A failed one (or one that did
 * not verify) stays a warning of /healthz until the next of its kind succeeds.
 *
 * One timer, unref'd, re-armed at most `tickMs` ahead: a machine that slept or a clock set
 * forward is caught up within a tick, and a long wait never needs a timer of days. The backup
 * itself streams (backupService.ts), so a run never stops the server answering.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '../core/errors.js';
import { WEEKDAYS, type BackupOptions } from './backupOptions.js';
import { nextRunAt } from './backupSchedule.js';
import type { BackupService } from './backupService.js';
import type { BackupRecord, BackupScheduleView, MediaChoice, ScheduledKind, ScheduledRun } from './backupViews.js';
import { warningLine } from '../core/logLines.js';

export interface ScheduledBackupsDeps {
  backups: Pick<BackupService, 'make' | 'prune' | 'busy'>;
  options: BackupOptions;
  timeZone: string | undefined;
  /** Media in a full backup: the files themselves, on local disk and in object storage alike. */
  fullMedia: MediaChoice;
  /**
   * Takes the run named `slot` for this node, or answers false if it was taken (in cluster mode
   * by another node: a row claim in the shared database). Absent: this node runs every slot.
   */
  claim?: (slot: string, at: number) => Promise<boolean>;
  /** Whether this node runs the schedule at all (false: it only shows it). */
  runsHere: boolean;
  log: (line: string) => void;
  /** The clock (tests give a fixed one). */
  now?: () => number;
  /** The longest the timer waits before it looks at the clock again, ms (60 s). */
  tickMs?: number;
  /** While another backup is under way, how often to look again, ms (5 s), and for how long in all (30 min), before the run is skipped. */
  busyRetryMs?: number;
  busyWaitMs?: number;
}

export class ScheduledBackups {
  private readonly now: () => number;
  private readonly tickMs: number;
  private readonly busyRetryMs: number;
  private readonly busyWaitMs: number;
  /** When each enabled kind runs next. */
  private readonly due = new Map<ScheduledKind, number>();
  private readonly lastRun: Partial<Record<ScheduledKind, ScheduledRun>> = {};
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly stopping = new AbortController();

  constructor(private readonly deps: ScheduledBackupsDeps) {
    this.now = deps.now ?? Date.now;
    this.tickMs = deps.tickMs ?? 60_000;
    this.busyRetryMs = deps.busyRetryMs ?? 5_000;
    this.busyWaitMs = deps.busyWaitMs ?? 30 * 60_000;
  }

  /** Computes the next runs from now and arms the timer (on a node that runs the schedule). */
  start(): void {
    const now = this.now();
    for (const kind of this.kinds()) this.due.set(kind, this.nextAfter(kind, now));
    if (this.deps.runsHere && this.due.size > 0) this.arm();
  }

  /**
   * Stops the timer and waits up to `graceMs` for a run under way to end. One still going after
   * that is left behind as a `.partial` file, never listed, removed before the next backup.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping.abort();
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.running) await Promise.race([this.running.catch(() => undefined), sleep(graceMs, undefined, { ref: false })]);
  }

  /**
   * Runs every kind whose time has come by `now` (the timer's clock unless given: tests pass a
   * fixed time to make the schedule fire at once), then moves each to its next time.
   */
  async runDue(now = this.now()): Promise<void> {
    // One pass at a time: a tick that meets a pass still running leaves it to that pass.
    if (this.running) return this.running;
    this.running = (async () => {
      for (const kind of this.kinds()) {
        const due = this.due.get(kind) ?? this.nextAfter(kind, now - 1);
        if (now < due) continue;
        // The next run is after this one's time and after now (a machine that slept through
        // several runs makes one).
        this.due.set(kind, this.nextAfter(kind, Math.max(now, due)));
        if (this.deps.claim && !(await this.deps.claim(`${kind}:${due}`, due).catch((err: unknown) => this.claimFailed(kind, err)))) continue;
        await this.runOne(kind);
      }
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** The warnings of /healthz: each kind whose last scheduled run failed or did not verify. */
  warnings(): string[] {
    const out: string[] = [];
    for (const kind of ['daily', 'full'] as const) {
      const r = this.lastRun[kind];
      if (r && !r.ok && !r.skipped) out.push(`The scheduled ${kind} backup at ${r.at} failed: ${r.error}`);
    }
    return out;
  }

  /** What the console shows. */
  view(): BackupScheduleView {
    const o = this.deps.options;
    const next = (kind: ScheduledKind) => {
      const t = this.due.get(kind);
      return t === undefined ? null : new Date(t).toISOString();
    };
    return {
      timeZone: this.deps.timeZone ?? null,
      daily: { ...o.daily, next: next('daily') },
      full: { ...o.full, media: this.deps.fullMedia, next: next('full') },
      runsHere: this.deps.runsHere,
      last: { ...this.lastRun },
    };
  }

  private kinds(): ScheduledKind[] {
    const o = this.deps.options;
    return [...(o.daily.enabled ? (['daily'] as const) : []), ...(o.full.every !== 'off' ? (['full'] as const) : [])];
  }

  private nextAfter(kind: ScheduledKind, after: number): number {
    const o = this.deps.options;
    if (kind === 'daily') return nextRunAt(after, o.daily.at, this.deps.timeZone);
    return nextRunAt(after, o.full.at, this.deps.timeZone, o.full.every === 'weekly' ? WEEKDAYS.indexOf(o.full.weekday) : undefined);
  }

  private arm(): void {
    if (this.stopping.signal.aborted) return;
    const soonest = Math.min(...this.due.values());
    const wait = Math.max(0, Math.min(this.tickMs, soonest - this.now()));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.runDue()
        .catch((err: unknown) => this.deps.log(warningLine(`the backup schedule failed: ${(err as Error).message}`)))
        .finally(() => this.arm());
    }, wait);
    this.timer.unref();
  }

  private claimFailed(kind: ScheduledKind, err: unknown): false {
    this.note(kind, { at: new Date(this.now()).toISOString(), ok: false, error: `could not claim the run in the shared database: ${(err as Error).message}` });
    this.deps.log(warningLine(`the scheduled ${kind} backup did not run: claiming it in the shared database failed: ${(err as Error).message}`));
    return false;
  }

  private async runOne(kind: ScheduledKind): Promise<void> {
    const at = new Date(this.now()).toISOString();
    const o = this.deps.options[kind];
    const media: MediaChoice = kind === 'full' ? this.deps.fullMedia : 'none';
    // Another backup (the console's, a download) is under way: wait for it, within reason.
    if (this.deps.backups.busy()) {
      this.deps.log(`The scheduled ${kind} backup waits: ${this.deps.backups.busy()} is under way.`);
      const deadline = this.now() + this.busyWaitMs;
      while (this.deps.backups.busy() && this.now() < deadline && !this.stopping.signal.aborted) {
        await sleep(this.busyRetryMs, undefined, { ref: false, signal: this.stopping.signal }).catch(() => undefined);
      }
    }
    if (this.stopping.signal.aborted) return;
    let record: BackupRecord;
    try {
      record = await this.deps.backups.make(media, 'schedule');
    } catch (err) {
      if (err instanceof ApiError && err.code === 'BACKUP_IN_PROGRESS') {
        this.deps.log(`The scheduled ${kind} backup was skipped: ${(err as Error).message}.`);
        this.note(kind, { at, ok: false, skipped: true, error: (err as Error).message });
        return;
      }
      // The service has logged the WARNING line.
      this.note(kind, { at, ok: false, error: (err as Error).message });
      return;
    }
    if (!record.verified) {
      this.note(kind, { at, ok: false, name: record.name, error: `${record.name} did not verify: ${record.problems?.[0] ?? 'unknown problem'}` });
      return;
    }
    this.note(kind, { at, ok: true, name: record.name });
    // Only after a backup that verified: a run of failures never removes the good ones.
    try {
      const removed = await this.deps.backups.prune(kind === 'full', o.keep);
      if (removed.length) this.deps.log(`Backups removed beyond the ${o.keep} kept (${kind}): ${removed.join(', ')}.`);
    } catch (err) {
      this.deps.log(warningLine(`removing old ${kind} backups failed: ${(err as Error).message}`));
    }
  }

  private note(kind: ScheduledKind, run: ScheduledRun): void {
    // A skip says nothing of the backups: a failure before it stays the warning.
    if (run.skipped && this.lastRun[kind]?.ok === false) return;
    this.lastRun[kind] = run;
  }
}
