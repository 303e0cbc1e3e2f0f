/**
 * What a backup proves, with real processes (docs/backup.md, "What verify proves"): a backup
 * resealed by someone who put a trigger into its database is named by `vop verify` and refused by
 * `vop restore`; a keyed seal (`--seal-key-file`, `backups.sealKeyFile`) verifies only under its key.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import initSqlJs from 'sql.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackupWriter, type PartRecord } from '../../server/backup/backupArchive.js';
import { collect, readBackup } from '../../server/backup/backupReader.js';
import { verifyBackup } from '../../server/backup/verifyBackup.js';
import type { BackupManifest } from '../../server/backup/writeBackup.js';
import { createServer } from '../../server/app.js';
import { CLI_ENTRY, killStrayProcesses, runToExit, startServer, tempDataDir, type TestServer } from '../helpers/server.js';

/** Runs the CLI to its end (a backup or a restore may take a while on a loaded machine). */
const cli = (args: string[]) => runToExit(args, {}, CLI_ENTRY, 120_000);

/**
 * `file` taken apart and written again with its database changed by `alter`, its manifest's
 * checksums and its plain seal made anew: what anyone holding a backup can do.
 */
async function reseal(file: string, out: string, alter: (db: import('sql.js').Database) => void): Promise<void> {
  const parts = new Map<string, Buffer>();
  const read = await readBackup<BackupManifest>(file, { onPart: async (part, stream) => void parts.set(part.name, await collect(stream, part.size)) });
  expect(read.problems).toEqual([]);
  const { format: _f, formatVersion: _v, parts: records, ...fields } = read.manifest!;
  const SQL = await initSqlJs();
  const db = new SQL.Database(parts.get('database/vop.db')!);
  alter(db);
  parts.set('database/vop.db', Buffer.from(db.export()));
  db.close();
  const w = new BackupWriter(fs.createWriteStream(out));
  for (const r of records as PartRecord[]) await w.add({ name: r.name, ...(r.key !== undefined ? { key: r.key } : {}), data: parts.get(r.name)! });
  await w.finish(fields);
}

function keyFile(dir: string, name: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `${crypto.randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  return file;
}

afterAll(() => killStrayProcesses());

describe('a backup resealed with a trigger in its database', () => {
  const work = tempDataDir('vop-backup-trust-');
  const plain = path.join(work, 'plain.tar');
  const doctored = path.join(work, 'doctored.tar');
  let s: TestServer;

  beforeAll(async () => {
    s = await startServer();
    const client = await s.newApp('public');
    await client.register({ VideoTitle: 'a public video' });
    const made = await cli(['backup', '--data-dir', s.dataDir, '--admin-token', s.admin.token, '--no-media', '--out', plain]);
    expect(made.code, made.output).toBe(0);
    // The finding: every later secret copied into a public video's title.
    await reseal(plain, doctored, (db) =>
      db.run("CREATE TRIGGER leak AFTER UPDATE OF secret ON apps BEGIN UPDATE videos SET title = NEW.secret, description = NEW.app_id; END"),
    );
    // Whole and sealed as far as checksums go: only its database gives it away.
    expect((await readBackup(doctored)).problems).toEqual([]);
  }, 120_000);

  afterAll(async () => {
    await s?.close();
  });

  it('is named by verify', async () => {
    const r = await cli(['verify', '--in', doctored]);
    expect(r.code, r.output).toBe(1);
    expect(r.output).toContain('trigger "leak" on apps');
    const untouched = await cli(['verify', '--in', plain]);
    expect(untouched.code, untouched.output).toBe(0);
  }, 60_000);

  it('is refused by restore, naming it, and nothing is written', async () => {
    const into = path.join(work, 'restored');
    const r = await cli(['restore', '--in', doctored, '--data-dir', into]);
    expect(r.code, r.output).toBe(1);
    expect(r.output).toContain('trigger "leak" on apps');
    expect(fs.existsSync(into)).toBe(false);
  }, 60_000);

  it('is refused as well with a view, a table or a redefined table of its own', async () => {
    for (const [sql, named] of [
      ['CREATE VIEW secrets AS SELECT secret FROM apps', 'view "secrets"'],
      ['CREATE TABLE notes (x)', 'table "notes"'],
      ["ALTER TABLE videos ADD COLUMN spare TEXT DEFAULT 'x'", 'table "videos", defined otherwise'],
    ] as const) {
      const file = path.join(work, 'other.tar');
      fs.rmSync(file, { force: true });
      await reseal(plain, file, (db) => db.run(sql));
      expect((await verifyBackup(file)).problems.join('\n')).toContain(named);
    }
  }, 60_000);
});

describe('a keyed seal', () => {
  const work = tempDataDir('vop-backup-keyed-');
  const keyA = keyFile(work, 'a.key');
  const keyB = keyFile(work, 'b.key');
  let s: TestServer;

  beforeAll(async () => {
    s = await startServer();
    const client = await s.newApp('sealed');
    await client.register({ VideoTitle: 'kept' });
  }, 60_000);

  afterAll(async () => {
    await s?.close();
  });

  it('made through a running server verifies under its key only, and restores under it only', async () => {
    const file = path.join(work, 'through-server.tar');
    const made = await cli(['backup', '--data-dir', s.dataDir, '--admin-token', s.admin.token, '--no-media', '--seal-key-file', keyA, '--out', file]);
    expect(made.code, made.output).toBe(0);
    expect(made.output).toContain('with a keyed seal');

    const underA = await cli(['verify', '--in', file, '--seal-key-file', keyA]);
    expect(underA.code, underA.output).toBe(0);
    expect(underA.output).toContain(`made with the key in ${keyA}`);
    const underB = await cli(['verify', '--in', file, '--seal-key-file', keyB]);
    expect(underB.code, underB.output).toBe(1);
    expect(underB.output).toContain('not made with this key');
    const without = await cli(['verify', '--in', file]);
    expect(without.code, without.output).toBe(0);
    expect(without.output).toContain('not checked');

    const refused = path.join(work, 'restored-b');
    const r = await cli(['restore', '--in', file, '--data-dir', refused, '--seal-key-file', keyB]);
    expect(r.code, r.output).toBe(1);
    expect(fs.existsSync(refused)).toBe(false);
    const into = path.join(work, 'restored-a');
    const ok = await cli(['restore', '--in', file, '--data-dir', into, '--seal-key-file', keyA]);
    expect(ok.code, ok.output).toBe(0);
    const restored = await startServer({ dataDir: into });
    try {
      const apps = (await restored.admin.request('GET', '/apps')).body.apps as Array<{ name: string }>;
      expect(apps.map((a) => a.name)).toEqual(['sealed']);
    } finally {
      await restored.close();
    }
  }, 120_000);

  it('is required under a key: a plain backup, or one resealed plain after a change, fails', async () => {
    const file = path.join(work, 'plain.tar');
    const made = await cli(['backup', '--data-dir', s.dataDir, '--admin-token', s.admin.token, '--no-media', '--out', file]);
    expect(made.code, made.output).toBe(0);
    const r = await cli(['verify', '--in', file, '--seal-key-file', keyA]);
    expect(r.code, r.output).toBe(1);
    expect(r.output).toContain('no keyed seal');
  }, 60_000);

  it('comes on every backup of a server given backups.sealKeyFile; a short key stops its start', async () => {
    const t = await startServer({ backups: { sealKeyFile: keyA } });
    try {
      const { status, body } = await t.admin.request('POST', '/backups', { media: 'none' });
      expect(status, JSON.stringify(body)).toBe(200);
      expect(body.seal).toBe('keyed');
      const file = path.join(t.dataDir, 'backups', body.name);
      expect((await verifyBackup(file, { sealKey: Buffer.from(fs.readFileSync(keyA, 'utf8').trim()) })).problems).toEqual([]);
      expect((await verifyBackup(file, { sealKey: Buffer.from(fs.readFileSync(keyB, 'utf8').trim()) })).problems.join('\n')).toContain('not made with this key');
    } finally {
      await t.close();
    }
    const short = path.join(work, 'short.key');
    fs.writeFileSync(short, 'too short\n');
    const dataDir = tempDataDir('vop-backup-shortkey-');
    await expect(createServer({ dataDir, log: () => undefined, backups: { sealKeyFile: short } })).rejects.toThrow(/a seal key needs 32 at least/);
    expect(fs.readdirSync(dataDir)).toEqual([]);
  }, 60_000);
});
