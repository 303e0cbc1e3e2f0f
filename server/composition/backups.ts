/**
 * Backups (docs/backup.md): the database at one instant, the settings files, the media; made on
 * request and on a schedule. The schedule runs on the nodes that serve the console (their folder
 * is the one it lists); each run is claimed once in the counters (in cluster mode the shared
 * database's, so one node of several makes it; embedded, the one process claims every run).
 */
import path from 'node:path';
import type { ServerOptions } from '../config.js';
import { VOP_VERSION } from '../core/version.js';
import { BackupService } from '../backup/backupService.js';
import { ScheduledBackups } from '../backup/scheduledBackups.js';
import type { Foundation } from './foundation.js';
import type { Part } from './parts.js';

/**
 * The counter window of a scheduled backup's claim, counted at the run's own time: runs fall on
 * whole minutes, so every node counts the same slot in the same window (the key names the slot
 * too). The shared counters forget windows after an hour, long after the nodes claimed.
 */
const SCHEDULE_CLAIM_WINDOW_MS = 60_000;

export interface Backups {
  service: BackupService;
  schedule: ScheduledBackups;
  /** Starts the schedule; stops it before the database closes (a scheduled backup under way reads it). */
  part: Part;
}

/** `sealKey`: read before anything is made (readSealKey), so that a missing or short key stops the start first. */
export function createBackups(options: ServerOptions, { stores, objects }: Foundation, sealKey: Buffer | undefined): Backups {
  const { log } = options;
  const service = new BackupService(
    { stores, objects, dataDir: options.dataDir, mode: options.databaseUrl ? 'cluster' : 'embedded', vopVersion: VOP_VERSION },
    options.backups.dir ?? path.join(options.dataDir, 'backups'),
    log,
    sealKey,
  );
  const schedule = new ScheduledBackups({
    backups: service,
    options: options.backups,
    timeZone: options.timeZone,
    fullMedia: 'include',
    runsHere: options.role !== 'worker',
    claim: async (slot, at) => (await stores.counters.hit(`backup-schedule:${slot}`, SCHEDULE_CLAIM_WINDOW_MS, at)) === 1,
    log,
  });
  return { service, schedule, part: { name: 'the backup schedule', start: () => schedule.start(), stop: (graceMs) => schedule.stop(graceMs) } };
}
