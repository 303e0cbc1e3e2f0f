/**
 * Backups made by this server (docs/backup.md): streamed to the admin API's caller (`vop backup`
 * against a running server), or written into the backup folder and verified there (the console,
 * the schedule). One at a time per node: a backup reads the whole database and, with media, every
 * file; a second asked for meanwhile is refused, not queued.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { ApiError } from '../core/errors.js';
import { fsyncDir, fsyncFile } from '../storage/fsync.js';
import { verifyBackup } from './verifyBackup.js';
import { writeBackup, type BackupInputs, type BackupManifest } from './writeBackup.js';
import type { BackupAttempt, BackupRecord, BackupUnderWay, MediaChoice } from './backupViews.js';
import { warningLine } from '../core/logLines.js';

/**
 * The part of the serving thread a backup's hashing may take (backup/pacer.ts): a backup of the
 * 111 MB database of 100,000 videos took 0.9 s at 0.2 and 1.1 s at 0.1, against 0.4 s unpaced, on
 * an idle server; under full load (npm run bench -- backup) p99 during/without went from 3.9 to 3.0.
 */
const SERVING_SHARE = 0.1;

/** Names of backup files this service writes; nothing else in the folder is listed or served. */
const NAME = /^vop-backup-\d{8}-\d{6}(-\d+)?(-full)?\.tar$/;
const PARTIAL_SUFFIX = '.partial';
const RECORD_SUFFIX = '.json';

export class BackupService {
  private running: string | undefined;
  private underWayNow: BackupUnderWay | undefined;
  private lastAttempt: BackupAttempt | undefined;

  constructor(
    private readonly inputs: BackupInputs,
    /** The backup folder. */
    readonly folder: string,
    private readonly log: (line: string) => void,
    /** The seal key (backup/backupSeal.ts): every backup made here carries a keyed seal; none, a plain one. */
    private readonly sealKey?: Buffer,
  ) {}

  /** Media in a backup unless asked otherwise: the files on local disk, the list in object storage. */
  get defaultMedia(): MediaChoice {
    return this.inputs.objects.kind === 's3' ? 'list' : 'include';
  }

  /** What is under way now, if anything. */
  busy(): string | undefined {
    return this.running;
  }

  /** What is under way now, with its progress (the console shows it). */
  underWay(): BackupUnderWay | undefined {
    return this.underWayNow && { ...this.underWayNow };
  }

  /** The last backup attempted in this process (undefined before the first). */
  last(): BackupAttempt | undefined {
    return this.lastAttempt;
  }

  /** Streams a new backup to `out` (the admin API's download). */
  async stream(out: Writable, media: MediaChoice, signal?: AbortSignal): Promise<{ bytes: number; manifest: BackupManifest }> {
    return this.exclusive('a download', () => writeBackup(out, this.inputs, { media, signal, threadShare: SERVING_SHARE, sealKey: this.sealKey, progress: (p) => this.noteProgress(p.bytes) }));
  }

  /**
   * Writes a new backup into the folder (as `<name>.partial`, renamed once whole and on disk),
   * verifies it, and records the result beside it.
   */
  async make(media: MediaChoice, by: BackupRecord['by']): Promise<BackupRecord> {
    const at = new Date();
    try {
      const record = await this.exclusive(`a ${by} backup`, async () => {
        await fs.promises.mkdir(this.folder, { recursive: true, mode: 0o700 });
        await this.removePartials();
        const name = await this.freeName(at, media === 'include');
        const file = path.join(this.folder, name);
        const partial = `${file}${PARTIAL_SUFFIX}`;
        const out = fs.createWriteStream(partial, { flags: 'wx', mode: 0o600 });
        let written;
        try {
          written = await writeBackup(out, this.inputs, { media, threadShare: SERVING_SHARE, sealKey: this.sealKey, progress: (p) => this.noteProgress(p.bytes) });
          await fsyncFile(partial);
          await fs.promises.rename(partial, file);
          await fsyncDir(this.folder);
        } catch (err) {
          await fs.promises.rm(partial, { force: true });
          throw err;
        }
        // Every checksum and the seal, read back from the disk; SQLite's full check of the database
        // would hold this server's thread for seconds on a large library: that is `vop verify`'s.
        const checked = await verifyBackup(file, { database: 'structure', threadShare: SERVING_SHARE, sealKey: this.sealKey });
        const record: BackupRecord = {
          name,
          bytes: written.bytes,
          createdAt: written.manifest.createdAt,
          media,
          by,
          verified: checked.problems.length === 0,
          ...(checked.problems.length ? { problems: checked.problems } : {}),
          counts: written.manifest.counts,
          ...(checked.seal ? { seal: checked.seal } : {}),
        };
        await fs.promises.writeFile(path.join(this.folder, `${name}${RECORD_SUFFIX}`), JSON.stringify(record), { mode: 0o600 });
        return record;
      });
      this.lastAttempt = { at: at.toISOString(), by, ok: record.verified, record, ...(record.verified ? {} : { error: `it did not verify: ${record.problems![0]}` }) };
      this.log(record.verified ? `Backup ${record.name} written and verified (${record.bytes} bytes).` : warningLine(`backup ${record.name} did not verify: ${record.problems!.join('; ')}`));
      return record;
    } catch (err) {
      if (!(err instanceof ApiError)) {
        this.lastAttempt = { at: at.toISOString(), by, ok: false, error: (err as Error).message };
        this.log(warningLine(`the ${by} backup failed: ${(err as Error).message}`));
      }
      throw err;
    }
  }

  /** The backups in the folder, newest first. */
  async list(): Promise<BackupRecord[]> {
    const names = await fs.promises.readdir(this.folder).catch(() => [] as string[]);
    const records: BackupRecord[] = [];
    for (const name of names.filter((n) => NAME.test(n))) {
      const record = await fs.promises
        .readFile(path.join(this.folder, `${name}${RECORD_SUFFIX}`), 'utf8')
        .then((t) => JSON.parse(t) as BackupRecord)
        .catch(() => undefined);
      const st = await fs.promises.stat(path.join(this.folder, name)).catch(() => undefined);
      if (!st) continue;
      // A file without its record (copied in, or its record lost): listed, not vouched for.
      records.push(record ?? { name, bytes: st.size, createdAt: st.mtime.toISOString(), media: name.endsWith('-full.tar') ? 'include' : 'none', by: 'api', verified: false });
    }
    // By time, then name: names of one second (`…-123456.tar`, `…-123456-1.tar`) sort the wrong way as text.
    return records.sort((a, b) => (a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? 1 : -1) : a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  }

  /** The file of a listed backup, for its download; a name not listed is not found. */
  async file(name: string): Promise<{ path: string; bytes: number }> {
    if (!NAME.test(name)) throw new ApiError('BACKUP_NOT_FOUND', `no backup is named ${JSON.stringify(name)}`);
    const file = path.join(this.folder, name);
    const st = await fs.promises.stat(file).catch(() => undefined);
    if (!st?.isFile()) throw new ApiError('BACKUP_NOT_FOUND', `no backup is named ${JSON.stringify(name)}`);
    return { path: file, bytes: st.size };
  }

  /** Removes the oldest backups of a kind beyond `keep` (the schedule's rotation). */
  async prune(full: boolean, keep: number): Promise<string[]> {
    const ofKind = (await this.list()).filter((r) => r.name.endsWith('-full.tar') === full);
    const removed: string[] = [];
    for (const r of ofKind.slice(Math.max(0, keep))) {
      await fs.promises.rm(path.join(this.folder, r.name), { force: true });
      await fs.promises.rm(path.join(this.folder, `${r.name}${RECORD_SUFFIX}`), { force: true });
      removed.push(r.name);
    }
    return removed;
  }

  private async exclusive<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (this.running) throw new ApiError('BACKUP_IN_PROGRESS', `${this.running} is under way; try again when it is done`);
    this.running = what;
    this.underWayNow = { what, since: new Date().toISOString(), bytes: 0 };
    try {
      return await fn();
    } finally {
      this.running = undefined;
      this.underWayNow = undefined;
    }
  }

  private noteProgress(bytes: number): void {
    if (this.underWayNow) this.underWayNow.bytes = bytes;
  }

  /** Leftovers of backups cut off (a crash, a kill): never listed, removed before the next. */
  private async removePartials(): Promise<void> {
    for (const n of await fs.promises.readdir(this.folder)) {
      if (n.endsWith(PARTIAL_SUFFIX)) await fs.promises.rm(path.join(this.folder, n), { force: true });
    }
  }

  private async freeName(at: Date, full: boolean): Promise<string> {
    const p = (n: number) => String(n).padStart(2, '0');
    const stamp = `${at.getUTCFullYear()}${p(at.getUTCMonth() + 1)}${p(at.getUTCDate())}-${p(at.getUTCHours())}${p(at.getUTCMinutes())}${p(at.getUTCSeconds())}`;
    for (let i = 0; ; i++) {
      const name = `vop-backup-${stamp}${i ? `-${i}` : ''}${full ? '-full' : ''}.tar`;
      if (!fs.existsSync(path.join(this.folder, name)) && !fs.existsSync(path.join(this.folder, `${name}${PARTIAL_SUFFIX}`))) return name;
    }
  }
}
