import fs from 'node:fs';
import path from 'node:path';
import initSqlJs, { type Database, type SqlJsStatic, type Statement } from 'sql.js';
import { DataDirLock } from './dataDirLock.js';
import { Journal, fsyncDir, type JournalRecord, type SqlParam } from './journal.js';
import { MIGRATIONS } from './migrations.js';

export type { SqlParam } from './journal.js';
export type Row = Record<string, SqlParam>;

/** Options of {@link DurableDatabase.open}. */
export interface DurableDatabaseOptions {
  /** Directory holding `vop.db`, `journal/` and `vop.lock`; created if missing. */
  dir: string;
  /** Take a snapshot once this many records are in the journal. */
  snapshotEveryRecords?: number;
  /** Take a snapshot once the journal holds this many bytes. */
  snapshotEveryBytes?: number;
  /** Take a snapshot this long after the last write, if the journal is not empty. */
  idleSnapshotMs?: number;
  /** Where warnings go (damaged files set aside, torn journal tails). */
  log?: (message: string) => void;
}

const DEFAULTS = {
  snapshotEveryRecords: 20_000,
  snapshotEveryBytes: 16 * 1024 * 1024,
  idleSnapshotMs: 30_000,
} satisfies Partial<DurableDatabaseOptions>;

let sqlJs: Promise<SqlJsStatic> | undefined;

/**
 * sql.js with durability: the database lives in memory, every write is journaled and fsynced
 * before it is acknowledged, and snapshots (temp file, fsync, rename) compact the journal.
 * See journal.ts for the record format and the crash cases.
 */
export class DurableDatabase {
  private statements = new Map<string, Statement>();
  private seq = 0;
  private snapshotting: Promise<void> | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /**
   * Set while a snapshot switches journal segments: the records of writes made after its image
   * was taken, in order. They must not reach the segment the snapshot closes (it is deleted once
   * the snapshot is on disk, and the image does not hold them), and nothing may append while the
   * journal closes that segment's file.
   */
  private held: Array<{ record: JournalRecord; done: (err?: unknown) => void }> | undefined;
  /** Problems found on open, for /healthz and the console. */
  readonly warnings: string[] = [];

  private constructor(
    private db: Database,
    private readonly journal: Journal,
    private readonly lock: DataDirLock,
    private readonly opts: Required<Omit<DurableDatabaseOptions, 'log'>> & Pick<DurableDatabaseOptions, 'log'>,
  ) {}

  static async open(options: DurableDatabaseOptions): Promise<DurableDatabase> {
    const opts = { ...DEFAULTS, ...options };
    fs.mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
    const lock = DataDirLock.acquire(opts.dir);
    try {
      const SQL = await (sqlJs ??= initSqlJs());
      const warnings: string[] = [];
      const warn = (m: string) => {
        warnings.push(m);
        opts.log?.(m);
      };
      const dbFile = path.join(opts.dir, 'vop.db');
      const journalDir = path.join(opts.dir, 'journal');
      fs.rmSync(`${dbFile}.tmp`, { force: true }); // a snapshot cut off before its rename

      const db = loadChecked(SQL, dbFile, journalDir, warn);
      const lastSeq = Number(metaValue(db, 'journal_seq') ?? 0);

      // Replay what the journal holds beyond the snapshot.
      let seq = lastSeq;
      let replayed = 0;
      const segments = Journal.segments(journalDir);
      for (const [i, n] of segments.entries()) {
        const file = Journal.segmentPath(journalDir, n);
        const { records, damagedAt, trailingBytes } = Journal.readSegment(file);
        for (const record of records) {
          if (record.seq <= seq) continue;
          applyOps(db, record.ops);
          seq = record.seq;
          replayed++;
        }
        if (damagedAt !== undefined) {
          // A torn last line of the last segment is the normal trace of a crash mid-append: that
          // write was never acknowledged. Anything else means acknowledged data was damaged on
          // disk: keep a copy, say so, and apply nothing after it.
          const tornTail = i === segments.length - 1 && !fs.readFileSync(file).subarray(damagedAt).includes(0x0a);
          if (!tornTail) {
            const aside = `${file}.damaged-${stamp()}`;
            fs.copyFileSync(file, aside);
            warn(`Journal ${file} is damaged at byte ${damagedAt} (${trailingBytes} bytes after it could not be applied). A copy is at ${aside}.`);
            for (const later of segments.slice(i + 1)) {
              const laterFile = Journal.segmentPath(journalDir, later);
              fs.renameSync(laterFile, `${laterFile}.damaged-${stamp()}`);
            }
          }
          fs.truncateSync(file, damagedAt);
          if (!tornTail) break;
        }
      }

      const migrated = migrate(db);
      const journal = Journal.open(journalDir, segments.at(-1) ?? 0);
      const self = new DurableDatabase(db, journal, lock, opts);
      self.seq = seq;
      self.warnings.push(...warnings);
      applyPragmas(db);
      if (replayed > 0 || migrated || !fs.existsSync(dbFile)) await self.snapshot();
      return self;
    } catch (err) {
      lock.release();
      throw err;
    }
  }

  /** Runs a read and returns every row. */
  all<T = Row>(sql: string, params: SqlParam[] = []): T[] {
    const stmt = this.prepare(sql);
    try {
      stmt.bind(params);
      const rows: T[] = [];
      while (stmt.step()) rows.push(stmt.getAsObject() as T);
      return rows;
    } finally {
      stmt.reset();
    }
  }

  /** Runs a read and returns the first row. */
  get<T = Row>(sql: string, params: SqlParam[] = []): T | undefined {
    const stmt = this.prepare(sql);
    try {
      stmt.bind(params);
      return stmt.step() ? (stmt.getAsObject() as T) : undefined;
    } finally {
      stmt.reset();
    }
  }

  /**
   * Runs the statements as one transaction in memory, now, and resolves with each statement's
   * count of changed rows once the journal record is on disk. If a statement fails the
   * transaction is rolled back and nothing is journaled. The statements must be deterministic
   * (values computed by the caller, no random() or CURRENT_TIMESTAMP): replay re-runs them.
   */
  write(ops: Array<[string, SqlParam[]]>): Promise<number[]> {
    if (this.closed) return Promise.reject(new Error('The database is closed.'));
    if (this.journal.failure) return Promise.reject(this.journal.failure);
    let changes: number[];
    try {
      changes = this.runInTransaction(ops);
    } catch (err) {
      return Promise.reject(err);
    }
    const record: JournalRecord = { seq: ++this.seq, ops };
    const held = this.held;
    const durable = held
      ? new Promise<void>((resolve, reject) => held.push({ record, done: (err) => (err ? reject(err) : resolve()) }))
      : this.journal.append(record);
    this.afterWrite();
    return durable.then(() => changes);
  }

  /** Writes a snapshot (temp file, fsync, rename) and drops the journal segments it covers. */
  snapshot(): Promise<void> {
    this.snapshotting ??= this.doSnapshot().finally(() => {
      this.snapshotting = undefined;
    });
    return this.snapshotting;
  }

  /** Flushes, snapshots and releases the lock. Further writes are refused. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.idleTimer);
    await this.journal.drain();
    await this.snapshotting;
    if (!this.journal.failure && this.journal.recordsSinceRotate > 0) await this.doSnapshot();
    await this.journal.close();
    for (const s of this.statements.values()) s.free();
    this.statements.clear();
    this.db.close();
    this.lock.release();
  }

  /** Figures for /healthz and the README's sizing notes. */
  stats(): { journalRecords: number; journalBytes: number; seq: number } {
    return { journalRecords: this.journal.recordsSinceRotate, journalBytes: this.journal.bytesSinceRotate, seq: this.seq };
  }

  private prepare(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  private runInTransaction(ops: Array<[string, SqlParam[]]>): number[] {
    const changes: number[] = [];
    this.db.run('BEGIN');
    try {
      for (const [sql, params] of ops) {
        const stmt = this.prepare(sql);
        try {
          stmt.run(params);
        } finally {
          stmt.reset();
        }
        changes.push(this.db.getRowsModified());
      }
      this.db.run('COMMIT');
    } catch (err) {
      this.db.run('ROLLBACK');
      throw err;
    }
    return changes;
  }

  private afterWrite(): void {
    if (
      this.journal.recordsSinceRotate >= this.opts.snapshotEveryRecords ||
      this.journal.bytesSinceRotate >= this.opts.snapshotEveryBytes
    ) {
      void this.snapshot().catch((err) => this.opts.log?.(`Snapshot failed: ${String(err)}`));
    }
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.journal.recordsSinceRotate > 0 && !this.closed) {
        void this.snapshot().catch((err) => this.opts.log?.(`Snapshot failed: ${String(err)}`));
      }
    }, this.opts.idleSnapshotMs);
    this.idleTimer.unref();
  }

  private async doSnapshot(): Promise<void> {
    // Synchronous part: everything executed so far is in this image, up to this.seq.
    this.db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('journal_seq', ?)", [String(this.seq)]);
    // export() frees prepared statements and resets connection pragmas (a known sql.js trap).
    for (const s of this.statements.values()) s.free();
    this.statements.clear();
    const image = this.db.export();
    applyPragmas(this.db);
    // From here on, writes are not in the image: hold their records until the next segment is open.
    this.held = [];
    let closedSegment: number;
    try {
      closedSegment = await this.journal.rotate();
    } finally {
      const held = this.held;
      this.held = undefined;
      for (const h of held) this.journal.append(h.record).then(() => h.done(), h.done);
    }

    const file = path.join(this.opts.dir, 'vop.db');
    const tmp = `${file}.tmp`;
    const fh = await fs.promises.open(tmp, 'w', 0o600);
    try {
      await fh.write(image);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.promises.rename(tmp, file);
    await fsyncDir(this.opts.dir);
    this.journal.removeSegmentsUpTo(closedSegment);
  }
}

function loadChecked(SQL: SqlJsStatic, dbFile: string, journalDir: string, warn: (m: string) => void): Database {
  if (!fs.existsSync(dbFile)) return new SQL.Database();
  let db: Database | undefined;
  let problem: string;
  try {
    db = new SQL.Database(fs.readFileSync(dbFile));
    const result = db.exec('PRAGMA quick_check');
    const verdict = String(result[0]?.values[0]?.[0] ?? '');
    if (verdict === 'ok') return db;
    problem = verdict;
  } catch (err) {
    problem = err instanceof Error ? err.message : String(err);
  }
  db?.close();
  // Never silently replace: keep the damaged file (and the journal that belongs to it) aside.
  const when = stamp();
  const aside = `${dbFile}.damaged-${when}`;
  fs.renameSync(dbFile, aside);
  if (fs.existsSync(journalDir)) fs.renameSync(journalDir, `${journalDir}.damaged-${when}`);
  warn(
    `The database ${dbFile} is damaged (${problem}). It was moved to ${aside} and an empty database was started. ` +
      `Restore a backup by stopping vop and copying it to ${dbFile}.`,
  );
  return new SQL.Database();
}

function metaValue(db: Database, key: string): string | undefined {
  const hasMeta = db.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  if (hasMeta.length === 0) return undefined;
  const res = db.exec('SELECT value FROM meta WHERE key = ?', [key]);
  const v = res[0]?.values[0]?.[0];
  return v === undefined || v === null ? undefined : String(v);
}

function applyOps(db: Database, ops: Array<[string, SqlParam[]]>): void {
  db.run('BEGIN');
  try {
    for (const [sql, params] of ops) db.run(sql, params);
    db.run('COMMIT');
  } catch (err) {
    db.run('ROLLBACK');
    throw err;
  }
}

function applyPragmas(db: Database): void {
  db.run('PRAGMA foreign_keys = ON');
}

/** Brings the schema forward; refuses a database written by a newer vop. */
function migrate(db: Database): boolean {
  const current = Number(db.exec('PRAGMA user_version')[0]?.values[0]?.[0] ?? 0);
  const latest = MIGRATIONS.length;
  if (current > latest) {
    throw new Error(`The database has schema version ${current}, newer than this vop understands (${latest}). Use a newer vop.`);
  }
  if (current === latest) return false;
  db.run('BEGIN');
  try {
    for (let v = current; v < latest; v++) {
      for (const sql of MIGRATIONS[v]!) db.run(sql);
    }
    db.run(`PRAGMA user_version = ${latest}`);
    db.run('COMMIT');
  } catch (err) {
    db.run('ROLLBACK');
    throw err;
  }
  return true;
}

function stamp(): string {
  return new Date().toISOString().replace(/[:.]/g, '-');
}
