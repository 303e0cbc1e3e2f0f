/**
 * Snapshots read the database file in place from the buffer it was loaded into (durableDatabase.ts
 * readWithRoom and liveImage), not through sql.js's export(): the image written must be exactly
 * the database, and a buffer the file has left (grown past it, or truncated by VACUUM) must never
 * be written as one.
 */
import fs from 'node:fs';
import path from 'node:path';
import initSqlJs from 'sql.js';
import { afterEach, describe, expect, it } from 'vitest';
import { DurableDatabase } from '../../server/storage/sqljs/durableDatabase.js';
import { tempDataDir } from '../helpers/server.js';

/** The parts of DurableDatabase this test looks into. */
interface Inside {
  db: import('sql.js').Database;
  loadedInto: Uint8Array | undefined;
}
const inside = (d: DurableDatabase) => d as unknown as Inside;

const open: DurableDatabase[] = [];
afterEach(async () => {
  for (const d of open.splice(0)) await d.close();
});

async function openDb(dir: string, room?: { min: number; max: number }): Promise<DurableDatabase> {
  const d = await DurableDatabase.open({ dir, idleSnapshotMs: 600_000, ...(room ? { imageRoom: room } : {}) });
  open.push(d);
  return d;
}

/** A data dir whose vop.db holds `rows` rows of about 1 KB in table t. */
async function withRows(rows: number): Promise<string> {
  const dir = tempDataDir('vop-snap-');
  const d = await DurableDatabase.open({ dir });
  await d.write([['CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)', []]]);
  for (let i = 0; i < rows; i += 100) {
    await d.write(Array.from({ length: Math.min(100, rows - i) }, (_, k): [string, string[]] => ['INSERT INTO t (body) VALUES (?)', [`row ${i + k} `.padEnd(1000, 'x')]]));
  }
  await d.close();
  return dir;
}

/** The snapshot on disk, checked by a fresh SQLite: integrity, and what it holds. */
async function onDisk(dir: string): Promise<{ integrity: string; rows: number; last: string }> {
  const SQL = await initSqlJs();
  const db = new SQL.Database(fs.readFileSync(path.join(dir, 'vop.db')));
  try {
    return {
      integrity: String(db.exec('PRAGMA integrity_check')[0]!.values[0]![0]),
      rows: Number(db.exec('SELECT COUNT(*) FROM t')[0]!.values[0]![0]),
      last: String(db.exec('SELECT body FROM t ORDER BY id DESC LIMIT 1')[0]?.values[0]?.[0] ?? ''),
    };
  } finally {
    db.close();
  }
}

describe('snapshots read the database in place', () => {
  it('writes exactly the database that export() gives, and keeps reading in place', async () => {
    const dir = await withRows(500);
    const d = await openDb(dir);
    expect(inside(d).loadedInto).toBeDefined();
    await d.write([['INSERT INTO t (body) VALUES (?)', ['after open']]]);
    await d.snapshot();
    expect(inside(d).loadedInto).toBeDefined(); // the live path was taken
    const written = fs.readFileSync(path.join(dir, 'vop.db'));
    const exported = Buffer.from(inside(d).db.export());
    // export() copies through SQLite's backup API, whose own commit counts one more change in the
    // header (the file change counter, bytes 24 to 27, and its copy at 92 to 95); every other
    // byte must be the same.
    const withoutCounter = (b: Buffer) => Buffer.concat([b.subarray(0, 24), b.subarray(28, 92), b.subarray(96)]);
    expect(written.length).toBe(exported.length);
    expect(Buffer.compare(withoutCounter(written), withoutCounter(exported))).toBe(0);
    expect(await onDisk(dir)).toEqual({ integrity: 'ok', rows: 501, last: 'after open' });
    expect(fs.readFileSync(path.join(dir, 'vop.db.crc'), 'ascii')).toMatch(new RegExp(`bytes ${written.length}\\n$`));
  });

  it('exports once the file has outgrown the buffer it was loaded into', async () => {
    const dir = await withRows(50);
    const d = await openDb(dir, { min: 4096, max: 4096 });
    expect(inside(d).loadedInto).toBeDefined();
    for (let i = 0; i < 5; i++) await d.write([['INSERT INTO t (body) VALUES (?)', [`grown ${i} `.padEnd(2000, 'y')]]]);
    await d.snapshot();
    expect(inside(d).loadedInto).toBeUndefined();
    expect(await onDisk(dir)).toEqual({ integrity: 'ok', rows: 55, last: 'grown 4 '.padEnd(2000, 'y') });
    // Later snapshots export too, and stay right.
    await d.write([['INSERT INTO t (body) VALUES (?)', ['later']]]);
    await d.snapshot();
    expect(await onDisk(dir)).toEqual({ integrity: 'ok', rows: 56, last: 'later' });
  });

  it('never writes the old buffer once VACUUM has moved the file out of it (smaller, so it would fit)', async () => {
    const dir = await withRows(500);
    const d = await openDb(dir);
    // An in-place snapshot first, so that the buffer's header holds a check number of its own.
    await d.snapshot();
    expect(inside(d).loadedInto).toBeDefined();
    await d.write([['DELETE FROM t WHERE id > 10', []]]);
    inside(d).db.run('VACUUM'); // shrinks the file: sql.js gives it a new, smaller buffer
    await d.write([['INSERT INTO t (body) VALUES (?)', ['after vacuum']]]);
    await d.snapshot();
    expect(inside(d).loadedInto).toBeUndefined();
    expect(await onDisk(dir)).toEqual({ integrity: 'ok', rows: 11, last: 'after vacuum' });
  });

  it('reopens from an in-place snapshot with its checksum, no quick_check needed', async () => {
    const dir = await withRows(200);
    const d = await openDb(dir);
    await d.write([['INSERT INTO t (body) VALUES (?)', ['kept']]]);
    await d.close();
    open.splice(open.indexOf(d), 1);
    const again = await openDb(dir);
    expect(again.openCheck).toBe('checksum');
    expect(again.get<{ body: string }>('SELECT body FROM t ORDER BY id DESC LIMIT 1')?.body).toBe('kept');
  });

  it('never writes the old buffer once a rolled-back write has truncated the file', async () => {
    const dir = await withRows(300);
    const d = await openDb(dir);
    await d.snapshot();
    // A write large enough to spill from SQLite's page cache into the file, then refused: the
    // rollback truncates the file, and sql.js gives it a new buffer.
    const big = Array.from({ length: 6000 }, (_, i): [string, string[]] => ['INSERT INTO t (body) VALUES (?)', [`spill ${i} `.padEnd(1000, 'z')]]);
    await expect(d.write([...big, ['INSERT INTO t (id, body) VALUES (1, ?)', ['duplicate id']]])).rejects.toThrow(/UNIQUE/);
    await d.write([['INSERT INTO t (body) VALUES (?)', ['after rollback']]]);
    await d.snapshot();
    expect(inside(d).loadedInto).toBeUndefined();
    expect(await onDisk(dir)).toEqual({ integrity: 'ok', rows: 301, last: 'after rollback' });
  });
});

describe('the room after the database', () => {
  it('is refused when it is not 0 <= min <= max whole bytes, before the data dir is touched', async () => {
    for (const room of [{ min: -1, max: 10 }, { min: 10, max: 5 }, { min: 0.5, max: 10 }, { min: 0, max: Number.NaN }]) {
      const dir = path.join(tempDataDir('vop-room-'), 'data');
      await expect(DurableDatabase.open({ dir, imageRoom: room })).rejects.toThrow(/imageRoom must be whole byte counts/);
      expect(fs.existsSync(dir)).toBe(false);
    }
    // The bounds themselves are taken: no room at all, on a database file read with it.
    const dir = await withRows(100);
    const d = await openDb(dir, { min: 0, max: 0 });
    expect(inside(d).loadedInto?.length).toBe(fs.statSync(path.join(dir, 'vop.db')).size);
    await d.write([['INSERT INTO t (body) VALUES (?)', ['one more']]]);
  });
});
