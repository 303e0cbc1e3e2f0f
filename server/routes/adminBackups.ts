import express, { type Router } from 'express';
import { SendTimeout } from '../http/sendTimeout.js';
import { ApiError } from '../core/errors.js';
import { knownFields } from '../http/knownFields.js';
import { MEDIA_CHOICES } from '../backup/writeBackup.js';
import type { BackupsView, MediaChoice } from '../backup/backupViews.js';
import type { BackupService } from '../backup/backupService.js';
import type { ScheduledBackups } from '../backup/scheduledBackups.js';
import type { ConsoleSessions } from '../console/consoleSessions.js';

/** Where a backup's download is, under /admin/api: `/backups/<name>`. */
const DOWNLOAD_PATH = /^\/backups\/([^/]+)$/;

/**
 * The ticket purpose that opens the download at `path` (a request's path under /admin/api), if it
 * is one: requireAdmin takes such a ticket in the query on that one GET, because a browser follows
 * a plain link without the console's header. A ticket opens one backup's download, no other.
 */
export function downloadTicketPurpose(path: string): string | undefined {
  const name = DOWNLOAD_PATH.exec(path)?.[1];
  return name === undefined ? undefined : `backup:${name}`;
}

export interface AdminBackupsDeps {
  backups: BackupService;
  schedule: ScheduledBackups;
  /** The console's sessions, whose tickets open a download. */
  sessions: ConsoleSessions;
  /** Media in a streamed backup unless asked otherwise. */
  defaultMedia: MediaChoice;
  /**
   * How long a download may wait for its reader to take a byte before it is given up and the
   * backup's lock freed (ServerOptions.sendTimeoutMs, as media answers).
   */
  sendTimeoutMs: number;
}

/**
 * Admin API: backups (docs/backup.md). Mounted at `/admin/api` behind requireAdmin.
 *
 *   GET  /backup?media=include|list|none   a new backup, streamed (what `vop backup` saves)
 *   POST /backups {media?}                  a new backup into the backup folder, verified: its record
 *   GET  /backups                           the folder's backups, newest first, the last attempt,
 *                                           what is under way, and the schedule with its next runs
 *   POST /backups/:name/ticket              the console's link to a download: {url, expiresAt}
 *   GET  /backups/:name[?ticket=…]          one of them, as a download
 */
export function adminBackupsRouter(deps: AdminBackupsDeps): Router {
  const { backups, defaultMedia } = deps;
  const r = express.Router();
  r.get('/backup', async (req, res) => {
    const media = mediaChoice(req.query.media, defaultMedia);
    const controller = new AbortController();
    // The caller went away: stop reading the library for it.
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    if (backups.busy()) throw new ApiError('BACKUP_IN_PROGRESS', `${backups.busy()} is under way; try again when it is done`);
    res.setHeader('Content-Type', 'application/x-tar');
    res.setHeader('Content-Disposition', `attachment; filename="vop-backup.tar"`);
    res.setHeader('Cache-Control', 'no-store');
    // A reader that stops taking bytes holds the backup's lock (no other backup, scheduled or
    // asked, can start): given up as a stalled media answer is, which ends the stream above.
    const stall = new SendTimeout(res, deps.sendTimeoutMs, true, () => res.writableNeedDrain);
    try {
      await backups.stream(res, media, controller.signal);
    } catch (err) {
      // Headers are out: the answer ends without the seal, which verify and restore refuse.
      if (res.headersSent) res.destroy(err as Error);
      else throw err;
    } finally {
      stall.clear();
    }
  });
  r.post('/backups', async (req, res) => {
    const body = knownFields(req.body ?? {}, ['media']);
    const media = mediaChoice(body.media, 'include');
    const record = await backups.make(media, 'console').catch((err: unknown) => {
      // The admin asked and waited: the reason (a folder that cannot be written, a full disk) is theirs to fix.
      throw err instanceof ApiError ? err : new ApiError('BACKUP_FAILED', (err as Error).message);
    });
    res.json(record);
  });
  r.get('/backups', async (_req, res) => {
    res.set('Cache-Control', 'no-store').json({
      folder: backups.folder,
      busy: backups.busy() ?? null,
      underWay: backups.underWay() ?? null,
      last: backups.last() ?? null,
      schedule: deps.schedule.view(),
      backups: await backups.list(),
    } satisfies BackupsView);
  });
  r.post('/backups/:name/ticket', async (req, res) => {
    const session = await deps.sessions.sessionOf(req);
    // A bearer token downloads with its header: tickets are the console session's.
    if (!session) throw new ApiError('INVALID_PARAMETER', "tickets are for the console's session; send the bearer token with the download instead");
    const found = await backups.file(req.params.name);
    const name = encodeURIComponent(req.params.name);
    const { ticket, expiresAt } = deps.sessions.ticketOf(session, downloadTicketPurpose(`/backups/${req.params.name}`));
    res.set('Cache-Control', 'no-store').json({ url: `${req.baseUrl}/backups/${name}?ticket=${ticket}`, bytes: found.bytes, expiresAt: new Date(expiresAt).toISOString() });
  });
  r.get('/backups/:name', async (req, res) => {
    const found = await backups.file(req.params.name);
    res.setHeader('Cache-Control', 'no-store');
    res.download(found.path, req.params.name, { dotfiles: 'deny' });
  });
  return r;
}

function mediaChoice(v: unknown, otherwise: MediaChoice): MediaChoice {
  if (v === undefined || v === '') return otherwise;
  if (typeof v === 'string' && (MEDIA_CHOICES as readonly string[]).includes(v)) return v as MediaChoice;
  throw new ApiError('INVALID_PARAMETER', `media must be one of ${MEDIA_CHOICES.join(', ')}`);
}
