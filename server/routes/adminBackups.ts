import express, { type Router } from 'express';
import { ApiError } from '../core/errors.js';
import { knownFields } from '../http/knownFields.js';
import { MEDIA_CHOICES, type MediaChoice } from '../backup/writeBackup.js';
import type { BackupService } from '../services/backupService.js';

/**
 * Admin API: backups (docs/backup.md). Mounted at `/admin/api` behind requireAdmin.
 *
 *   GET  /backup?media=include|list|none   a new backup, streamed (what `vop backup` saves)
 *   POST /backups {media?}                  a new backup into the backup folder, verified: its record
 *   GET  /backups                           the folder's backups, newest first, and the last attempt
 *   GET  /backups/:name                     one of them, as a download
 */
export function adminBackupsRouter(backups: BackupService, defaultMedia: MediaChoice): Router {
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
    try {
      await backups.stream(res, media, controller.signal);
    } catch (err) {
      // Headers are out: the answer ends without the seal, which verify and restore refuse.
      if (res.headersSent) res.destroy(err as Error);
      else throw err;
    }
  });
  r.post('/backups', async (req, res) => {
    const body = knownFields(req.body ?? {}, ['media']);
    res.json(await backups.make(mediaChoice(body.media, 'include'), 'console'));
  });
  r.get('/backups', async (_req, res) => {
    res.json({ folder: backups.folder, busy: backups.busy() ?? null, last: backups.last() ?? null, backups: await backups.list() });
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
