/**
 * A backup's database checked for objects vop does not make (storage/sqljs/imageCheck.ts) and
 * read as data into a fresh schema (imageRebuild.ts), on databases made here.
 */
import initSqlJs, { type Database } from 'sql.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkSqliteImage, referenceDatabase } from '../../server/storage/sqljs/imageCheck.js';
import { rebuildSqliteImage } from '../../server/storage/sqljs/imageRebuild.js';
import { MIGRATIONS } from '../../server/storage/sqljs/migrations.js';

let SQL: Awaited<ReturnType<typeof initSqlJs>>;
beforeAll(async () => {
  SQL = await initSqlJs();
});

/** A database of the latest schema with a few rows, then `alter` run on it; its file. */
function library(alter?: (db: Database) => void, version = MIGRATIONS.length): Uint8Array {
  const db = referenceDatabase(SQL, version);
  db.run("INSERT INTO apps (app_id, name, secret, created_at, updated_at) VALUES ('a1', 'one', 's3cr3t', 1, 2)");
  db.run("INSERT INTO videos (id, app_id, title, status, source_type, created_at, updated_at) VALUES ('v1', 'a1', 'first', 1, 1, 3, 4)");
  alter?.(db);
  const image = db.export();
  db.close();
  return image;
}

/** Every row of every vop table, with its rowid, each value with its type, as text. */
function contents(image: Uint8Array): string[] {
  const db = new SQL.Database(image);
  try {
    const tables = db.exec("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")[0]!.values.map((r) => String(r[0]));
    return tables.flatMap((t) => {
      const columns = db.exec(`PRAGMA table_info("${t}")`)[0]!.values.map((r) => String(r[1]));
      const select = ['rowid', ...columns].map((c) => `typeof("${c}") || ':' || quote("${c}")`).join(" || ' | ' || ");
      return (db.exec(`SELECT ${select} FROM "${t}" ORDER BY rowid`)[0]?.values ?? []).map((r) => `${t}: ${String(r[0])}`);
    });
  } finally {
    db.close();
  }
}

describe("a backup's database", () => {
  it.each([
    ['a trigger', "CREATE TRIGGER leak AFTER UPDATE ON apps BEGIN UPDATE videos SET title = NEW.secret; END", 'trigger "leak" on apps'],
    ['a view', 'CREATE VIEW everything AS SELECT secret FROM apps', 'view "everything"'],
    ['a table', 'CREATE TABLE extra (x)', 'table "extra"'],
    ['an index', 'CREATE INDEX apps_by_secret ON apps (secret)', 'index "apps_by_secret" on apps'],
    ['a table defined otherwise', "ALTER TABLE apps ADD COLUMN extra TEXT DEFAULT 'x'", 'table "apps", defined otherwise'],
    ['a trigger named as vop names an index', 'DROP INDEX videos_by_status_age; CREATE TRIGGER videos_by_status_age AFTER INSERT ON videos BEGIN SELECT 1; END', 'trigger "videos_by_status_age" on videos, defined otherwise'],
  ])('holding %s is named by the check and refused by the rebuild', async (_what, sql, named) => {
    const image = library((db) => db.exec(sql));
    const check = await checkSqliteImage(image);
    expect(check.problem).toContain(named);
    expect(check.foreign).toHaveLength(1);
    await expect(rebuildSqliteImage(image)).rejects.toThrow(named);
  });

  it('of vop objects only passes, at every schema version', async () => {
    for (let v = 1; v <= MIGRATIONS.length; v++) {
      const db = referenceDatabase(SQL, v);
      const image = db.export();
      db.close();
      const check = await checkSqliteImage(image);
      expect(check, `version ${v}`).toEqual({ schemaVersion: v });
    }
  });

  it('is rebuilt with every row and value exactly, rowids kept, and nothing else of the file', async () => {
    const image = library((db) => {
      db.run("INSERT INTO apps (app_id, name, secret, created_at, updated_at) VALUES ('a2', 'two', 'OLD-SECRET-THAT-WAS-DELETED', 5, 6)");
      db.run("DELETE FROM apps WHERE app_id = 'a2'");
      // Past 2^53, a real, a blob, a null, text in an integer column, a rowid gap.
      db.run("INSERT INTO video_status_history (rowid, video_id, at, from_status, to_status) VALUES (7, 'v1', 9007199254740993, NULL, 1)");
      db.run("INSERT INTO video_status_history (rowid, video_id, at, from_status, to_status) VALUES (42, 'v1', 'not a number', 1, 7)");
      db.run("INSERT INTO jobs (id, type, state, seq, progress, payload, created_at, updated_at) VALUES ('j1', 'transcode', 'done', 3, 0.625, x'00ff', 1, 1)");
      db.run("INSERT INTO signing_keys (purpose, id, secret, created_at, expires_at) VALUES ('media', 'k1', 'abc', 1, NULL)");
      db.run('PRAGMA user_version = ' + MIGRATIONS.length);
    });
    expect(Buffer.from(image).includes('OLD-SECRET-THAT-WAS-DELETED')).toBe(true); // left in a free page
    const rebuilt = await rebuildSqliteImage(image);
    expect(rebuilt.schemaVersion).toBe(MIGRATIONS.length);
    expect(contents(rebuilt.image)).toEqual(contents(image));
    expect(contents(image).join('\n')).toContain("video_status_history: integer:7 | text:'v1' | integer:9007199254740993");
    expect(contents(image).join('\n')).toContain("blob:X'00FF'");
    expect(rebuilt.rows).toBe(contents(image).length);
    expect(Buffer.from(rebuilt.image).includes('OLD-SECRET-THAT-WAS-DELETED')).toBe(false);
    expect((await checkSqliteImage(rebuilt.image)).problem).toBeUndefined();
  });

  it('of an older schema is rebuilt at that version, for the server to bring forward', async () => {
    const image = library(undefined, 10);
    const rebuilt = await rebuildSqliteImage(image);
    expect(rebuilt.schemaVersion).toBe(10);
    expect(contents(rebuilt.image)).toEqual(contents(image));
  });
});
