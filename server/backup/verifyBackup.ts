/**
 * `vop verify`: every checksum of a backup and its seal (backupReader.ts), and the database's own
 * integrity: SQLite's full check of the embedded database's file and nothing in its schema that
 * vop's migrations do not make (storage/sqljs/imageCheck.ts); a readable row on every line of a
 * cluster database's tables, and no table vop does not know.
 *
 * What this proves is that the file is whole and well-formed. It cannot prove who wrote it: a
 * plain seal is a SHA-256 anyone can recompute. A keyed seal checked with its key can
 * (backupSeal.ts).
 */
import readline from 'node:readline';
import type { Readable } from 'node:stream';
import { checkSqliteImage } from '../storage/sqljs/imageCheck.js';
import { PG_BACKUP_TABLES, tablePartName } from '../storage/postgres/postgresExport.js';
import { SQLITE_BACKUP_PART } from '../storage/sqljs/openSqlJsStores.js';
import { collect, readBackup, type ReadBackupOptions } from './backupReader.js';
import type { BackupManifestFields } from './writeBackup.js';

export interface VerifyResult {
  /** Empty when the backup is whole and sound. */
  problems: string[];
  manifest?: Awaited<ReturnType<typeof readBackup<BackupManifestFields>>>['manifest'];
  bytes: number;
  /** The seal found: plain, or keyed (its HMAC checked when `sealKey` was given). */
  seal?: 'plain' | 'keyed';
}

/** Options of {@link verifyBackup}. */
export interface VerifyOptions {
  /** Sees every part but the database's (restore's writing pass). */
  onPart?: ReadBackupOptions['onPart'];
  /** Told of the embedded database's part, after its check, with the bytes. */
  onDatabasePart?: (name: string, bytes: Buffer) => Promise<void>;
  /** A cluster database's table part (`database/<table>.jsonl`): its rows, a batch at a time, each line checked first. */
  onTableRows?: (name: string, lines: string[]) => Promise<void>;
  /**
   * 'full' (the default): SQLite's integrity_check of the embedded database, which holds the
   * thread for a second or more on a large library. 'structure': its header and length only, for
   * a server checking the backup it just wrote without stalling its answers (the checksums and
   * the seal are read either way).
   */
  database?: 'full' | 'structure';
  /**
   * Skip SQLite's integrity check of the database's file: only for a second pass over a file
   * whose first pass ran it. Every part is still checked against its SHA-256 and the seal, so
   * bytes that differ from the ones checked are found all the same. The check is most of the
   * time of a pass (5 to 10 s of the 117 MB of a 100,000-video library, on a busy 2-core machine).
   */
  skipDatabaseCheck?: boolean;
  /** The part of the thread the check's hashing may take (a serving server's; see pacer.ts). */
  threadShare?: number;
  /** The seal key: the backup must carry a keyed seal made with it (backupSeal.ts). */
  sealKey?: Buffer;
}

/** The part names of the tables a cluster's backup holds. */
const CLUSTER_TABLE_PARTS = new Set(PG_BACKUP_TABLES.map((t) => tablePartName(t.table)));

/**
 * Reads `file` through and checks it whole. `onPart` (restore's writing pass) sees every part but
 * the database's, which this checks itself; it is told of those too, after their check, with the
 * bytes (an embedded database's file) or the rows (a cluster database's tables).
 */
export async function verifyBackup(file: string, options: VerifyOptions = {}): Promise<VerifyResult> {
  const databaseProblems: string[] = [];
  const result = await readBackup<BackupManifestFields>(file, {
    threadShare: options.threadShare,
    sealKey: options.sealKey,
    onPart: async (part, stream) => {
      if (part.name === SQLITE_BACKUP_PART && options.database === 'structure') {
        const problem = await checkSqliteStructure(stream, part.size);
        if (problem) databaseProblems.push(`${part.name}: ${problem}`);
        return;
      }
      if (part.name === SQLITE_BACKUP_PART) {
        const image = await collect(stream, part.size);
        const check = options.skipDatabaseCheck ? {} : await checkSqliteImage(image);
        if (check.problem) databaseProblems.push(`${part.name}: ${check.problem}`);
        else await options.onDatabasePart?.(part.name, image);
        return;
      }
      if (part.name.startsWith('database/') && part.name.endsWith('.jsonl')) {
        if (!CLUSTER_TABLE_PARTS.has(part.name)) {
          databaseProblems.push(`${part.name}: a table that is not vop's (or is a newer vop's)`);
          for await (const _ of stream); // read through: the checksums are taken as it passes
          return;
        }
        const onRows = options.onTableRows;
        const problem = await checkJsonLines(stream, onRows && ((lines) => onRows(part.name, lines)));
        if (problem) databaseProblems.push(`${part.name}: ${problem}`);
        return;
      }
      if (options.onPart) await options.onPart(part, stream);
      else for await (const _ of stream); // read through: the checksums are taken as it passes
    },
  });
  return { ...result, problems: [...result.problems, ...databaseProblems] };
}

/** Rows handed on at once by checkJsonLines: a few hundred KB, whatever the table's size. */
const ROWS_PER_BATCH = 500;

/** Every line of a table's part must be one JSON object (a row); the rows go to `onRows` in batches until a line is not one. */
async function checkJsonLines(stream: Readable, onRows?: (lines: string[]) => Promise<void>): Promise<string | undefined> {
  let n = 0;
  let problem: string | undefined;
  let batch: string[] = [];
  for await (const line of readline.createInterface({ input: stream, crlfDelay: Infinity })) {
    n++;
    if (problem || line === '') continue;
    try {
      const row: unknown = JSON.parse(line);
      if (typeof row !== 'object' || row === null || Array.isArray(row)) problem = `line ${n} is not a row`;
    } catch {
      problem = `line ${n} is not readable JSON`;
    }
    if (problem || !onRows) continue;
    batch.push(line);
    if (batch.length >= ROWS_PER_BATCH) {
      await onRows(batch);
      batch = [];
    }
  }
  if (!problem && onRows && batch.length > 0) await onRows(batch);
  return problem;
}

/** A SQLite file's header, and a length that is its page size times its page count. */
async function checkSqliteStructure(stream: Readable, size: number): Promise<string | undefined> {
  let head = Buffer.alloc(0);
  for await (const chunk of stream as AsyncIterable<Buffer>) if (head.length < 100) head = Buffer.concat([head, chunk.subarray(0, 100 - head.length)]);
  if (head.length < 100 || head.toString('latin1', 0, 16) !== 'SQLite format 3\0') return 'it is not a SQLite database file';
  const pageSize = head.readUInt16BE(16) === 1 ? 65536 : head.readUInt16BE(16);
  const pages = head.readUInt32BE(28);
  if (pageSize * pages !== size) return `its header says ${pages} pages of ${pageSize} bytes, but it has ${size} bytes`;
  return undefined;
}
