import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import initSqlJs, { type Database, type SqlJsStatic, type Statement } from 'sql.js';
import { DataDirLock } from '../dataDirLock.js';
import { fsyncDir, fsyncFile, writeFileSynced } from '../fsync.js';
import { assertNoUnfinishedRestore } from '../restoreMarker.js';
import { Journal, type JournalRecord, type SqlParam } from './journal.js';
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
  /** Bytes of room after the database in memory (see readWithRoom); tests make it small. */
  imageRoom?: { min: number; max: number };
}

const DEFAULTS = {
  snapshotEveryRecords: 20_000,
  snapshotEveryBytes: 16 * 1024 * 1024,
  idleSnapshotMs: 30_000,
  imageRoom: { min: 64 * 1024 * 1024, max: 1024 * 1024 * 1024 },
} satisfies Partial<DurableDatabaseOptions>;

let sqlJs: Promise<SqlJsStatic> | undefined;

/** Bytes of a backup's copy taken per turn of the event loop (copySoon): about a millisecond each (4 MiB steps held the API's p99 up). */
const COPY_STEP = 1 << 20;

/**
 * sql.js with durability: the database lives in memory, every write is journaled and fsynced
 * before it is acknowledged, and snapshots (temp file, fsync, rename) compact the journal.
 * See journal.ts for the record format and the crash cases.
 */
export class DurableDatabase {
  private statements = new Map<string, Statement>();
  /**
   * Result column names of each prepared statement, asked for once: sql.js fetches and decodes
   * them from SQLite on every call otherwise (getAsObject() does it per row), 5 to 10 µs for a
   * row of the videos table. They cannot change under a statement: the schema changes only in
   * open(), before any statement here is prepared.
   */
  private columnNames = new WeakMap<Statement, string[]>();
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
  /** How the file was found sound on open (see loadChecked); `new` when there was none. */
  openCheck: OpenCheck = 'new';
  /**
   * The buffer the database file was read into, which sql.js keeps as its in-memory file until
   * the file outgrows it (see readWithRoom and liveImage); undefined once it did, or for a new
   * database.
   */
  private loadedInto: Uint8Array<ArrayBuffer> | undefined;
  /** A backup's copy under way (copySoon): finished at once before anything changes the file. */
  private copying: { from: Uint8Array; into: Uint8Array; at: number } | undefined;

  private constructor(
    private db: Database,
    private readonly journal: Journal,
    private readonly lock: DataDirLock,
    private readonly opts: Required<Omit<DurableDatabaseOptions, 'log'>> & Pick<DurableDatabaseOptions, 'log'>,
  ) {}

  static async open(options: DurableDatabaseOptions): Promise<DurableDatabase> {
    const opts = { ...DEFAULTS, ...options };
    const room = opts.imageRoom;
    // Checked before anything is touched: readWithRoom would quietly clamp a negative or inverted
    // room, and fail on NaN only halfway through reading the file.
    if (!Number.isSafeInteger(room.min) || !Number.isSafeInteger(room.max) || room.min < 0 || room.max < room.min) {
      throw new RangeError(`imageRoom must be whole byte counts with 0 <= min <= max, not ${JSON.stringify(room)}`);
    }
    fs.mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
    const lock = DataDirLock.acquire(opts.dir);
    let opened: Database | undefined;
    try {
      assertNoUnfinishedRestore(opts.dir);
      const SQL = await (sqlJs ??= initSqlJs());
      const warnings: string[] = [];
      const warn = (m: string) => {
        warnings.push(m);
        opts.log?.(m);
      };
      const dbFile = path.join(opts.dir, 'vop.db');
      const journalDir = path.join(opts.dir, 'journal');
      // A snapshot cut off before its renames.
      fs.rmSync(`${dbFile}.tmp`, { force: true });
      fs.rmSync(`${checksumFile(dbFile)}.tmp`, { force: true });

      const { db, check, loadedInto } = loadChecked(SQL, dbFile, journalDir, warn, opts.imageRoom);
      opened = db;
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
      self.openCheck = check;
      self.loadedInto = loadedInto;
      self.warnings.push(...warnings);
      applyPragmas(db);
      if (replayed > 0 || migrated || !fs.existsSync(dbFile)) await self.snapshot();
      return self;
    } catch (err) {
      // sql.js keeps a database's memory (the whole file) until it is closed.
      try {
        opened?.close();
      } catch {
        // already closed, or never fully opened: nothing more to free
      }
      lock.release();
      throw err;
    }
  }

  /** Runs a read and returns every row. */
  all<T = Row>(sql: string, params: SqlParam[] = []): T[] {
    const stmt = this.prepare(sql);
    try {
      stmt.bind(params);
      // Not getAsObject(): it asks SQLite for the column names again on every row, which made
      // reading a 50-row page three to four times slower.
      const names = this.namesOf(stmt);
      const rows: T[] = [];
      while (stmt.step()) rows.push(toRow(names, stmt.get()) as T);
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
      return stmt.step() ? (toRow(this.namesOf(stmt), stmt.get()) as T) : undefined;
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
    this.finishCopy();
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

  /**
   * A copy of the database file as it is now, with every write executed so far, and what `read`
   * finds in that same state (both before anything else runs), for a backup. Taken from the buffer
   * sql.js keeps the file in when it still does (one copy of memory, about 40 ms for 117 MB), else
   * through export().
   */
  copyNow<T>(read: () => T): { image: Uint8Array; read: T; schemaVersion: number } {
    if (this.closed) throw new Error('The database is closed.');
    const found = read();
    const schemaVersion = pragmaNumber(this.db, 'user_version');
    const live = this.liveImage();
    if (live) return { image: Uint8Array.prototype.slice.call(live), read: found, schemaVersion };
    for (const s of this.statements.values()) s.free();
    this.statements.clear();
    const image = this.db.export();
    applyPragmas(this.db);
    return { image, read: found, schemaVersion };
  }

  /**
   * {@link copyNow}, without holding the event loop for the whole copy: a backup of a server that
   * serves. copyNow's single copy of 117 MB took 90 to 170 ms, most of it the kernel handing the
   * new buffer its pages as the copy first touched them, and no request was answered meanwhile.
   * Here the file is copied {@link COPY_STEP} per turn; reads go on between the steps, and they
   * do not change the file. Whatever would change it (a write, a snapshot, close) first copies the
   * rest at once (finishCopy), so the copy is still the file as it was when it began, and `read`
   * sees that same state. Falls back to copyNow when sql.js no longer keeps the file in its buffer.
   */
  async copySoon<T>(read: () => T): Promise<{ image: Uint8Array; read: T; schemaVersion: number }> {
    if (this.closed) throw new Error('The database is closed.');
    if (!this.loadedInto || this.copying) return this.copyNow(read);
    const found = read();
    const schemaVersion = pragmaNumber(this.db, 'user_version');
    const live = this.liveImage();
    if (!live) return this.copyNow(read);
    const copy = { from: live, into: new Uint8Array(live.length), at: 0 };
    this.copying = copy;
    try {
      for (;;) {
        const end = Math.min(copy.from.length, copy.at + COPY_STEP);
        copy.into.set(copy.from.subarray(copy.at, end), copy.at);
        copy.at = end;
        if (copy.at >= copy.from.length) break;
        await new Promise((resolve) => setImmediate(resolve));
        if (copy.at >= copy.from.length) break; // finished by a write meanwhile
      }
    } finally {
      if (this.copying === copy) this.copying = undefined;
    }
    return { image: copy.into, read: found, schemaVersion };
  }

  /** Flushes, snapshots and releases the lock. Further writes are refused. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.finishCopy();
    this.closed = true;
    clearTimeout(this.idleTimer);
    await this.journal.drain();
    await this.snapshotting;
    if (!this.journal.failure && this.journal.recordsSinceRotate > 0) await this.doSnapshot();
    await this.journal.close();
    for (const s of this.statements.values()) s.free();
    this.statements.clear();
    this.db.close();
    this.loadedInto = undefined;
    this.lock.release();
  }

  /** Figures for /healthz. */
  stats(): { journalRecords: number; journalBytes: number; seq: number; openCheck: OpenCheck } {
    return { journalRecords: this.journal.recordsSinceRotate, journalBytes: this.journal.bytesSinceRotate, seq: this.seq, openCheck: this.openCheck };
  }

  private namesOf(stmt: Statement): string[] {
    let names = this.columnNames.get(stmt);
    if (!names) this.columnNames.set(stmt, (names = stmt.getColumnNames()));
    return names;
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
    const file = path.join(this.opts.dir, 'vop.db');
    const tmp = `${file}.tmp`;
    // Synchronous part: everything executed so far is in this image, up to this.seq.
    this.finishCopy();
    this.db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('journal_seq', ?)", [String(this.seq)]);
    let sumText: string | undefined;
    let image: Uint8Array | undefined;
    const live = this.liveImage();
    if (live) {
      // Written and summed before anything else runs: the next write changes these very bytes.
      writeNow(tmp, live);
      sumText = checksumText(live);
    } else {
      // Older sql.js closed and reopened the database in export(), freeing prepared statements
      // and resetting connection pragmas; 1.16 copies through the backup API. Kept safe for both.
      for (const s of this.statements.values()) s.free();
      this.statements.clear();
      image = this.db.export();
      applyPragmas(this.db);
    }
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

    if (image) {
      await writeFileSynced(tmp, image);
      sumText = checksumText(image);
      image = undefined; // for releaseImage(): an async function's locals live until it returns
    } else {
      await fsyncFile(tmp);
    }
    // The checksum goes into place first: if a crash comes between the two renames, it names an
    // image that is not there and the one that is gets the full check on open, as before.
    const sum = checksumFile(file);
    await writeFileSynced(`${sum}.tmp`, Buffer.from(sumText!, 'ascii'));
    await fs.promises.rename(`${sum}.tmp`, sum);
    await fs.promises.rename(tmp, file);
    await fsyncDir(this.opts.dir);
    this.journal.removeSegmentsUpTo(closedSegment);
    if (!live) releaseImage();
  }

  /** Copies the rest of a backup's copy under way, before the file changes (see copySoon). */
  private finishCopy(): void {
    const copy = this.copying;
    if (!copy) return;
    this.copying = undefined;
    copy.into.set(copy.from.subarray(copy.at), copy.at);
    copy.at = copy.from.length;
  }

  /**
   * The database file as it is now, read in place from the buffer it was loaded into, if sql.js
   * still keeps the file there; undefined otherwise, and a snapshot then takes export(), which
   * copies the whole file.
   *
   * Whether it still does is not taken on trust: sql.js (MEMFS) moves the file to a new buffer
   * when it outgrows this one, or when it is truncated (VACUUM, or the rollback of a write that
   * spilled to the file). So a new number is written to the header's application_id (bytes 68
   * to 71 of page 1, which SQLite writes to the file at commit, as it does every page: between
   * transactions the file is a complete database) and read back from the buffer; a buffer the
   * file has left does not have it. The application_id of a vop database is therefore a counter
   * of these checks, and means nothing else.
   *
   * The image is written and summed synchronously (about 0.1 s for 100 MB here, more on a slow
   * disk under write-back pressure): the next write would change these very bytes. export()
   * made a whole copy in that time instead, and wrote it later.
   */
  private liveImage(): Uint8Array | undefined {
    this.finishCopy(); // its check writes the file's header
    const whole = this.loadedInto;
    if (!whole || whole.length < 100) return undefined;
    const header = new DataView(whole.buffer, whole.byteOffset, 100);
    // Another number than the buffer holds: nothing writes to a buffer the file has left, so the
    // check cannot pass by chance.
    const before = header.getInt32(68);
    const nonce = before === 0x7fffffff ? 1 : before + 1;
    this.db.run(`PRAGMA application_id = ${nonce}`);
    const size = pragmaNumber(this.db, 'page_size') * pragmaNumber(this.db, 'page_count');
    if (size <= whole.length && size >= 100 && header.getInt32(68) === nonce) {
      return whole.subarray(0, size);
    }
    this.loadedInto = undefined; // for good: the file does not come back to it
    return undefined;
  }
}

/**
 * Asks V8 for a full collection once an exported snapshot image is written, when the process
 * runs with --expose-gc (`npm start` does). export() hands back a copy of the whole database (117
 * MB for 100,000 videos) that V8 frees only at its next collection, and a server that has gone
 * quiet (snapshots follow the last write) makes none: it stayed resident for as long as the
 * server was idle. The collection takes milliseconds and comes at most once per snapshot.
 */
function releaseImage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** How the database file was found sound on open. */
export type OpenCheck = 'checksum' | 'quick_check' | 'new';

/** Writes `data` to `file` synchronously (the caller needs it written before anything else runs). */
function writeNow(file: string, data: Uint8Array): void {
  const fd = fs.openSync(file, 'w', 0o600);
  try {
    let written = 0;
    while (written < data.length) written += fs.writeSync(fd, data, written, data.length - written);
  } finally {
    fs.closeSync(fd);
  }
}

function pragmaNumber(db: Database, name: string): number {
  return Number(db.exec(`PRAGMA ${name}`)[0]?.values[0]?.[0]);
}

/**
 * Next to each snapshot, `vop.db.crc` holds the CRC-32 and length of the image as written. On
 * open, a file that matches it is the snapshot exactly as it was exported, so PRAGMA quick_check
 * is not needed: it reads every page, 0.45 to 0.85 s for the 117 MB of a 100,000-video library
 * (1.4 s on a busier machine), the largest part of start-up, where the CRC takes 60 to 90 ms. A
 * file without one, or that differs (damaged, restored from a backup, or a crash between the two
 * renames of a snapshot), gets quick_check as before.
 */
function checksumFile(dbFile: string): string {
  return `${dbFile}.crc`;
}

function checksumText(image: Uint8Array): string {
  return `crc32 ${zlib.crc32(image).toString(16).padStart(8, '0')} bytes ${image.length}\n`;
}

function checksumMatches(dbFile: string, image: Uint8Array): boolean {
  let written: string;
  try {
    written = fs.readFileSync(checksumFile(dbFile), 'ascii');
  } catch {
    return false;
  }
  return written === checksumText(image);
}

function loadChecked(
  SQL: SqlJsStatic,
  dbFile: string,
  journalDir: string,
  warn: (m: string) => void,
  room: { min: number; max: number },
): { db: Database; check: OpenCheck; loadedInto?: Uint8Array<ArrayBuffer> } {
  if (!fs.existsSync(dbFile)) return { db: new SQL.Database(), check: 'new' };
  let db: Database | undefined;
  let problem: string;
  try {
    const image = readWithRoom(dbFile, room);
    const asWritten = checksumMatches(dbFile, image);
    db = new SQL.Database(image);
    if (asWritten) return { db, check: 'checksum', loadedInto: image.whole };
    const result = db.exec('PRAGMA quick_check');
    const verdict = String(result[0]?.values[0]?.[0] ?? '');
    if (verdict === 'ok') return { db, check: 'quick_check', loadedInto: image.whole };
    problem = verdict;
  } catch (err) {
    problem = err instanceof Error ? err.message : String(err);
  }
  db?.close();
  // Never silently replace: keep the damaged file (and the journal that belongs to it) aside.
  const when = stamp();
  const aside = `${dbFile}.damaged-${when}`;
  fs.renameSync(dbFile, aside);
  fs.rmSync(checksumFile(dbFile), { force: true });
  if (fs.existsSync(journalDir)) fs.renameSync(journalDir, `${journalDir}.damaged-${when}`);
  warn(
    `The database ${dbFile} is damaged (${problem}). It was moved to ${aside} and an empty database was started. ` +
      `Restore a backup by stopping vop and copying it to ${dbFile}.`,
  );
  return { db: new SQL.Database(), check: 'new' };
}

/**
 * The database file read into memory with room after it: sql.js keeps it there as its in-memory
 * file (Emscripten's MEMFS) instead of copying it.
 *
 * MEMFS takes a new file's bytes with `slice(0, length)`, a copy, and when a write goes past the
 * end of its buffer it allocates one 12.5% larger and copies the file over. For a 105 MB database
 * that was the server's memory peak, twice: the copy on open (the read buffer and sql.js's copy
 * side by side until a collection), and the first write after every start (211 MB resident,
 * then 326 MB). The file is read into a buffer with room for as much again (64 MiB at least,
 * 1 GiB at most) whose unwritten part the kernel does not back with memory until written, and
 * `slice` hands MEMFS that whole buffer: MEMFS keeps the file's length apart from the buffer's,
 * so it writes into the room and copies only once the file has doubled. The buffer also lets a
 * snapshot read the file in place instead of through export(), another whole copy (see
 * DurableDatabase.liveImage, which checks that the file is still there). Should a later sql.js
 * take the bytes another way, it copies them and snapshots export, as before: nothing but the
 * memory figure depends on this.
 */
class ImageWithRoom extends Uint8Array {
  // Derived arrays (subarray, slice of a part, map) are plain Uint8Arrays.
  static get [Symbol.species]() {
    return Uint8Array;
  }

  constructor(
    readonly whole: Uint8Array<ArrayBuffer>,
    length: number,
  ) {
    super(whole.buffer, whole.byteOffset, length);
  }

  override slice(start?: number, end?: number): Uint8Array<ArrayBuffer> {
    if ((start ?? 0) === 0 && (end ?? this.length) === this.length) return this.whole;
    return super.slice(start, end);
  }
}

function readWithRoom(file: string, room: { min: number; max: number }): ImageWithRoom {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    let whole: Uint8Array<ArrayBuffer>;
    try {
      whole = new Uint8Array(size + Math.min(room.max, Math.max(room.min, size)));
    } catch {
      whole = new Uint8Array(size); // no address space for the room: sql.js copies as it grows
    }
    let read = 0;
    while (read < size) {
      const n = fs.readSync(fd, whole, read, size - read, read);
      if (n === 0) break; // shorter than its size said: the checks after this judge what is there
      read += n;
    }
    return new ImageWithRoom(whole, read);
  } finally {
    fs.closeSync(fd);
  }
}

function toRow(names: string[], values: SqlParam[]): Row {
  const row: Row = {};
  for (let i = 0; i < names.length; i++) row[names[i]!] = values[i]!;
  return row;
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
  // Only this connection ever sees the in-memory file (the data-dir lock keeps other processes
  // out). In the default mode SQLite takes and drops its lock around every statement and, each
  // time, reads the file header again through sql.js's JavaScript file system to check that no
  // one else wrote: that doubled the cost of a one-row read (apps.get 25-39 µs, 7 µs without).
  db.run('PRAGMA locking_mode = EXCLUSIVE');
}

/** Brings the schema forward; refuses a database written by a newer vop. */
function migrate(db: Database): boolean {
  const current = pragmaNumber(db, 'user_version');
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
