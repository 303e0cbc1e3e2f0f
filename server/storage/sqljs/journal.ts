import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fsyncDir } from '../fsync.js';

/** One acknowledged write: the statements of one transaction, in order. */
export interface JournalRecord {
  /** Sequence number, increasing by one per record for the life of the database. */
  seq: number;
  /** The statements as [sql, params]; replay runs them in order, so they must be deterministic. */
  ops: Array<[string, SqlParam[]]>;
}

export type SqlParam = string | number | null | Uint8Array;

const SEGMENT_RE = /^segment-(\d{8})\.log$/;

/**
 * The write-ahead journal that makes sql.js durable between snapshots.
 *
 * sql.js keeps the database in memory, so a write is acknowledged only once its record is on disk:
 * each record is one line `<crc32 hex> <json>\n`, appended and fdatasync'ed before the caller's
 * promise resolves. Writes that arrive while a flush is in flight are grouped into the next one
 * (group commit), so many concurrent writers share one fsync.
 *
 * Records live in numbered segment files. A snapshot starts a new segment and, once the snapshot
 * is safely renamed into place, deletes the older ones; on open, records at or below the
 * snapshot's sequence number are skipped, so a crash between the two steps loses nothing.
 */
export class Journal {
  private segment: number;
  private handle: fs.promises.FileHandle | undefined;
  private pending: Array<{ line: Buffer; done: (err?: Error) => void }> = [];
  private flushing: Promise<void> | undefined;
  private failed: Error | undefined;
  /** Bytes and records written to segments since the last rotation. */
  bytesSinceRotate = 0;
  recordsSinceRotate = 0;

  private constructor(
    private readonly dir: string,
    segment: number,
  ) {
    this.segment = segment;
  }

  /** Opens the journal directory for appending after the highest existing segment. */
  static open(dir: string, lastSegment: number): Journal {
    fs.mkdirSync(dir, { recursive: true });
    return new Journal(dir, lastSegment + 1);
  }

  /** Lists segment numbers in order. */
  static segments(dir: string): number[] {
    if (!fs.existsSync(dir)) return [];
    return fs
      .readdirSync(dir)
      .map((name) => SEGMENT_RE.exec(name))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
  }

  static segmentPath(dir: string, n: number): string {
    return path.join(dir, `segment-${String(n).padStart(8, '0')}.log`);
  }

  /**
   * Reads every intact record of a segment. A torn or corrupt line ends the read: what follows it
   * cannot be trusted. `damagedAt` is the byte offset of the first bad line, if any.
   */
  static readSegment(file: string): { records: JournalRecord[]; damagedAt?: number; trailingBytes: number } {
    const buf = fs.readFileSync(file);
    const records: JournalRecord[] = [];
    let offset = 0;
    while (offset < buf.length) {
      const nl = buf.indexOf(0x0a, offset);
      if (nl === -1) return { records, damagedAt: offset, trailingBytes: buf.length - offset };
      const line = buf.subarray(offset, nl);
      const record = decodeLine(line);
      if (!record) return { records, damagedAt: offset, trailingBytes: buf.length - offset };
      records.push(record);
      offset = nl + 1;
    }
    return { records, trailingBytes: 0 };
  }

  /** Appends a record; resolves once it is on disk (fdatasync), rejects if it could not be. */
  append(record: JournalRecord): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const line = encodeLine(record);
    this.bytesSinceRotate += line.length;
    this.recordsSinceRotate++;
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ line, done: (err) => (err ? reject(err) : resolve()) });
      if (!this.flushing) this.flushing = this.flushLoop();
    });
  }

  /**
   * Starts a new segment for the records that follow, and returns the number of the segment that
   * was closed: once a snapshot covers it, it and all before it may be deleted.
   */
  async rotate(): Promise<number> {
    const closed = this.segment;
    await this.drain();
    if (this.handle) {
      await this.handle.close();
      this.handle = undefined;
    }
    this.segment++;
    this.bytesSinceRotate = 0;
    this.recordsSinceRotate = 0;
    return closed;
  }

  /** Deletes segments numbered `upTo` and below (their records are in a durable snapshot). */
  removeSegmentsUpTo(upTo: number): void {
    for (const n of Journal.segments(this.dir)) {
      if (n <= upTo) fs.rmSync(Journal.segmentPath(this.dir, n), { force: true });
    }
  }

  /** Waits for every appended record to be flushed. */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing.catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.drain();
    if (this.handle) {
      await this.handle.close();
      this.handle = undefined;
    }
  }

  /** Set when a flush failed: the database refuses further writes rather than lose them. */
  get failure(): Error | undefined {
    return this.failed;
  }

  private async flushLoop(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending;
        this.pending = [];
        try {
          if (this.failed) throw this.failed;
          if (!this.handle) {
            this.handle = await fs.promises.open(Journal.segmentPath(this.dir, this.segment), 'a', 0o600);
            await fsyncDir(this.dir);
          }
          await this.handle.write(Buffer.concat(batch.map((p) => p.line)));
          await this.handle.datasync();
          for (const p of batch) p.done();
        } catch (err) {
          this.failed ??= err instanceof Error ? err : new Error(String(err));
          for (const p of batch) p.done(this.failed);
        }
      }
    } finally {
      this.flushing = undefined;
    }
  }
}

function encodeLine(record: JournalRecord): Buffer {
  const json = JSON.stringify({ s: record.seq, o: record.ops.map(([sql, params]) => [sql, params.map(encodeParam)]) });
  const body = Buffer.from(json, 'utf8');
  const crc = zlib.crc32(body).toString(16).padStart(8, '0');
  return Buffer.concat([Buffer.from(`${crc} `, 'ascii'), body, Buffer.from('\n', 'ascii')]);
}

function decodeLine(line: Buffer): JournalRecord | undefined {
  if (line.length < 10 || line[8] !== 0x20) return undefined;
  const crc = line.subarray(0, 8).toString('ascii');
  const body = line.subarray(9);
  if (zlib.crc32(body).toString(16).padStart(8, '0') !== crc) return undefined;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { s: number; o: Array<[string, unknown[]]> };
    return { seq: parsed.s, ops: parsed.o.map(([sql, params]) => [sql, params.map(decodeParam)]) };
  } catch {
    return undefined;
  }
}

// Blobs are rare (none in the schema today) but must survive JSON: tag them.
function encodeParam(p: SqlParam): unknown {
  return p instanceof Uint8Array ? { b64: Buffer.from(p).toString('base64') } : p;
}

function decodeParam(p: unknown): SqlParam {
  if (p && typeof p === 'object' && 'b64' in p) return new Uint8Array(Buffer.from(String(p.b64), 'base64'));
  return p as SqlParam;
}
