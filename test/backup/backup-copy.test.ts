/**
 * A backup's copy of the embedded database is taken a few MiB per turn of the event loop
 * (durableDatabase.ts copySoon), so that a serving server is not held for the whole copy. It must
 * still be the database at one instant: a write that comes while the copy is under way first
 * copies the rest, and the copy never holds what came after.
 */
import initSqlJs from 'sql.js';
import { afterEach, describe, expect, it } from 'vitest';
import { DurableDatabase } from '../../server/storage/sqljs/durableDatabase.js';
import { tempDataDir } from '../helpers/server.js';

const open: DurableDatabase[] = [];
afterEach(async () => {
  for (const d of open.splice(0)) await d.close();
});

/** A database of about 12 MB (several steps of the copy) holding `rows` rows in table t. */
async function bigDatabase(rows = 12_000): Promise<DurableDatabase> {
  const dir = tempDataDir('vop-copy-');
  const made = await DurableDatabase.open({ dir });
  await made.write([['CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)', []]]);
  for (let i = 0; i < rows; i += 500) {
    await made.write(Array.from({ length: 500 }, (_, k): [string, string[]] => ['INSERT INTO t (body) VALUES (?)', [`row ${i + k} `.padEnd(1000, 'x')]]));
  }
  await made.close();
  // Opened again, as a server opens its folder: sql.js keeps the file in the buffer it was read into.
  const d = await DurableDatabase.open({ dir, idleSnapshotMs: 600_000 });
  open.push(d);
  return d;
}

/** What a fresh SQLite finds in a copy: integrity, row count, the highest id. */
async function inCopy(image: Uint8Array): Promise<{ integrity: string; rows: number; maxId: number }> {
  const SQL = await initSqlJs();
  const db = new SQL.Database(image);
  try {
    const one = (sql: string) => db.exec(sql)[0]!.values[0]![0];
    return { integrity: String(one('PRAGMA integrity_check')), rows: Number(one('SELECT COUNT(*) FROM t')), maxId: Number(one('SELECT MAX(id) FROM t')) };
  } finally {
    db.close();
  }
}

const count = (d: DurableDatabase) => () => d.get<{ n: number }>('SELECT COUNT(*) AS n FROM t')!.n;

describe("a backup's copy taken across turns", () => {
  it('is the database as it was when it began, though a write and a delete come while it is under way', async () => {
    const d = await bigDatabase();
    const copying = d.copySoon(count(d));
    // The copy has taken its first step only: these run while it is under way.
    const wrote = d.write([
      ['INSERT INTO t (body) VALUES (?)', ['written during the copy']],
      ['DELETE FROM t WHERE id <= 100', []],
    ]);
    const { image, read } = await copying;
    await wrote;
    expect(read).toBe(12_000);
    expect(await inCopy(image)).toEqual({ integrity: 'ok', rows: 12_000, maxId: 12_000 });
    expect(count(d)()).toBe(11_901);
  });

  it('lets reads run between its steps, and holds the whole database', async () => {
    const d = await bigDatabase();
    const copying = d.copySoon(count(d));
    let readsMeanwhile = 0;
    let done = false;
    void copying.then(() => (done = true));
    while (!done) {
      expect(count(d)()).toBe(12_000);
      readsMeanwhile++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const { image } = await copying;
    expect(readsMeanwhile).toBeGreaterThan(1); // about 12 MB: three steps
    expect(await inCopy(image)).toEqual({ integrity: 'ok', rows: 12_000, maxId: 12_000 });
  });
});
