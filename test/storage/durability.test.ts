/**
 * Durable storage on sql.js (issue 2, item 9): acknowledged writes survive kill -9, a torn journal
 * tail is ignored, a damaged database is set aside, one process per data dir, schema versions.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import initSqlJs from 'sql.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createServer } from '../../server/app.js';
import { DurableDatabase } from '../../server/storage/sqljs/durableDatabase.js';
import { MIGRATIONS } from '../../server/storage/sqljs/migrations.js';
import { AdminClient, SpecClient } from '../helpers/client.js';
import { ADMIN_TOKEN, killStrayProcesses, runToExit, startServer, startServerProcess, tempDataDir, type ServerProcess } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';

afterAll(() => killStrayProcesses());

const startArgs = (dir: string) => ['--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--admin-token', ADMIN_TOKEN];

function journalLines(dir: string): number {
  const jdir = path.join(dir, 'journal');
  let n = 0;
  for (const f of fs.readdirSync(jdir)) {
    if (/^segment-\d+\.log$/.test(f)) n += fs.readFileSync(path.join(jdir, f), 'utf8').split('\n').filter(Boolean).length;
  }
  return n;
}

function newestSegment(dir: string): string {
  const jdir = path.join(dir, 'journal');
  const segs = fs.readdirSync(jdir).filter((f) => /^segment-\d+\.log$/.test(f)).sort();
  return path.join(jdir, segs.at(-1)!);
}

/** Asserts that every id is there, with its title, through the spec API. */
async function expectVideos(c: SpecClient, expected: Map<string, string>): Promise<void> {
  const list = await c.get('/Api/Video/GetList', { PageSize: 200 });
  expect(list.body.AuthMsg.ResultCode).toBe('1');
  const found = new Map<string, string>(list.body.VideoList.map((v: any) => [v.Id, v.VideoTitle]));
  let page = 1;
  while (found.size < list.body.Total) {
    const more = await c.get('/Api/Video/GetList', { PageSize: 200, PageIndex: page++ });
    for (const v of more.body.VideoList) found.set(v.Id, v.VideoTitle);
  }
  for (const [id, title] of expected) expect(found.get(id), `video ${id}`).toBe(title);
}

describe('acknowledged writes survive SIGKILL (child process)', () => {
  it('finds every acknowledged registration and application after kill -9, twice, and past a torn journal tail', async () => {
    const dir = tempDataDir('vop-durable-');
    let p: ServerProcess = await startServerProcess(startArgs(dir));
    let admin = new AdminClient(p.baseUrl, ADMIN_TOKEN);

    // Phase 1: applications and registrations, all acknowledged, then kill -9.
    const a = await admin.createApp('durable A');
    const b = await admin.createApp('durable B');
    let ca = new SpecClient(p.baseUrl, a.appId, a.appSecret);
    const expected = new Map<string, string>();
    for (let batch = 0; batch < 6; batch++) {
      const titles = Array.from({ length: 20 }, (_, i) => `p1-${batch}-${i}`);
      const ids = await Promise.all(titles.map((t) => ca.register({ VideoTitle: t, CreateUser: 'u' })));
      ids.forEach((id, i) => expected.set(id, titles[i]!));
    }
    p.child.kill('SIGKILL');
    expect(await p.exited).toBe(null);
    // Nothing was snapshotted since start: every one of those writes is in the journal only.
    expect(journalLines(dir)).toBeGreaterThanOrEqual(expected.size + 2);

    p = await startServerProcess(startArgs(dir));
    admin = new AdminClient(p.baseUrl, ADMIN_TOKEN);
    ca = new SpecClient(p.baseUrl, a.appId, a.appSecret);
    await expectVideos(ca, expected);
    const apps = (await admin.request('GET', '/apps')).body.apps.map((x: any) => x.appId);
    expect(apps).toEqual(expect.arrayContaining([a.appId, b.appId]));

    // Phase 2: more kinds of writes, then kill -9 while registrations are still arriving. Phase 1
    // is in the snapshot taken on restart; phase 2 is only in the journal.
    const c = await admin.createApp('durable C');
    const rotated = (await admin.request('POST', `/apps/${b.appId}/secret`)).body.appSecret as string;
    expect((await admin.request('PATCH', `/apps/${c.appId}`, { grants: [a.appId], callbackUrl: 'http://cb.example/h' })).status).toBe(200);
    expect((await admin.request('PATCH', `/apps/${b.appId}`, { disabled: true })).status).toBe(200);
    const acknowledged: Array<Promise<void>> = [];
    let sent = 0;
    let killed = false;
    let running = 0;
    const fire = async () => {
      running++;
      try {
        while (!killed) {
          const title = `p2-${sent++}`;
          const id = await ca.register({ VideoTitle: title });
          expected.set(id, title); // acknowledged: it must survive
        }
      } catch {
        // cut off by the kill: never acknowledged
      } finally {
        running--;
      }
    };
    for (let i = 0; i < 8; i++) acknowledged.push(fire());
    await waitUntil('270 registrations acknowledged (or every client stopped)', () => expected.size >= 120 + 150 || running === 0 || notYet({ acknowledged: expected.size, running }), { timeoutMs: 120_000, pollMs: 5 });
    expect(expected.size, 'registrations failed before the kill').toBeGreaterThanOrEqual(270);
    killed = true;
    p.child.kill('SIGKILL');
    await p.exited;
    await Promise.all(acknowledged);
    expect(journalLines(dir)).toBeGreaterThan(150);

    // A crash mid-append leaves half a line at the end of the newest segment: it is ignored.
    fs.appendFileSync(newestSegment(dir), '1a2b3c4d {"s":999999,"o":[["INSERT INTO apps');

    p = await startServerProcess(startArgs(dir));
    admin = new AdminClient(p.baseUrl, ADMIN_TOKEN);
    ca = new SpecClient(p.baseUrl, a.appId, a.appSecret);
    await expectVideos(ca, expected);
    const health = await (await fetch(`${p.baseUrl}/healthz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json();
    expect(health.warnings).toEqual([]);
    const views = new Map<string, any>((await admin.request('GET', '/apps')).body.apps.map((x: any) => [x.appId, x]));
    expect([...views.keys()].sort()).toEqual([a.appId, b.appId, c.appId].sort());
    expect(views.get(c.appId)).toMatchObject({ grants: [a.appId], callbackUrl: 'http://cb.example/h' });
    expect(views.get(b.appId).disabled).toBe(true);
    await admin.request('PATCH', `/apps/${b.appId}`, { disabled: false });
    const cb = new SpecClient(p.baseUrl, b.appId, rotated);
    expect((await cb.get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('1');
    expect((await new SpecClient(p.baseUrl, b.appId, b.appSecret).get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('104');

    // The journal goes on cleanly after the torn tail: one more write, a clean stop, a restart.
    const last = await ca.register({ VideoTitle: 'after the tear' });
    expected.set(last, 'after the tear');
    expect(await p.stop('SIGTERM')).toBe(0);
    p = await startServerProcess(startArgs(dir));
    await expectVideos(new SpecClient(p.baseUrl, a.appId, a.appSecret), expected);
    expect(await p.stop('SIGTERM')).toBe(0);
  }, 180_000); // four server starts: room for a loaded CI machine
});

describe('writes made while a snapshot is being taken', () => {
  it('survive a crash right after the snapshot (no acknowledged record is compacted away)', async () => {
    const dir = tempDataDir('vop-snap-');
    const db = await DurableDatabase.open({ dir, snapshotEveryRecords: 5, idleSnapshotMs: 600_000 });
    const acks: Array<Promise<number[]>> = [];
    for (let i = 0; i < 400; i++) {
      acks.push(db.write([['INSERT INTO meta (key, value) VALUES (?, ?)', [`k${i}`, String(i)]]]));
      // Let flushes and snapshots run between writes, as concurrent requests would.
      if (i % 3 === 0) await new Promise((r) => setImmediate(r));
    }
    await Promise.all(acks);
    await (db as unknown as { snapshotting?: Promise<void> }).snapshotting;
    // The files as they are now are what a kill -9 would leave: open a copy of them.
    const crashed = tempDataDir('vop-snap-crash-');
    fs.cpSync(dir, crashed, { recursive: true, filter: (src) => path.basename(src) !== 'vop.lock' });
    const reopened = await DurableDatabase.open({ dir: crashed });
    try {
      const n = reopened.get<{ n: number }>("SELECT COUNT(*) AS n FROM meta WHERE key LIKE 'k%'")?.n;
      expect(n).toBe(400);
    } finally {
      await reopened.close();
      await db.close();
    }
  });
});

describe('damaged files, locks and schema versions', () => {
  async function seededDir(): Promise<{ dir: string; appId: string; secret: string; videoId: string }> {
    const s = await startServer();
    const c = await s.newApp('seed');
    const videoId = await c.register({ VideoTitle: 'seeded' });
    await s.close();
    return { dir: s.dataDir, appId: c.appId, secret: c.secret, videoId };
  }

  it.each([
    ['overwritten with garbage', (f: string) => fs.writeFileSync(f, Buffer.alloc(fs.statSync(f).size, 0x5a))],
    ['cut in half', (f: string) => fs.truncateSync(f, Math.floor(fs.statSync(f).size / 2))],
    ['a text file', (f: string) => fs.writeFileSync(f, 'this is not a database\n')],
  ])('sets a vop.db that is %s aside as vop.db.damaged-*, says so in /healthz, and starts', async (_what, damage) => {
    const { dir } = await seededDir();
    const original = fs.readFileSync(path.join(dir, 'vop.db'));
    damage(path.join(dir, 'vop.db'));
    const damagedBytes = fs.readFileSync(path.join(dir, 'vop.db'));
    expect(damagedBytes.equals(original)).toBe(false);
    const s = await startServer({ dataDir: dir });
    try {
      const aside = fs.readdirSync(dir).filter((f) => /^vop\.db\.damaged-/.test(f));
      expect(aside).toHaveLength(1);
      // Kept as it was, not replaced silently.
      expect(fs.readFileSync(path.join(dir, aside[0]!)).equals(damagedBytes)).toBe(true);
      const health = await (await fetch(`${s.baseUrl}/healthz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json();
      expect(health.status).toBe('ok');
      expect(health.warnings).toHaveLength(1);
      expect(health.warnings[0]).toContain('is damaged');
      expect(health.warnings[0]).toContain(aside[0]);
      expect(s.logs.join('\n')).toContain(aside[0]);
      // It works on the fresh database.
      const c = await s.newApp('after damage');
      expect((await c.get('/Api/Video/GetList')).body.Total).toBe(0);
    } finally {
      await s.close();
    }
  });

  it('trusts a vop.db that matches its checksum without PRAGMA quick_check, and checks any other', async () => {
    const { dir, appId, secret, videoId } = await seededDir();
    const file = path.join(dir, 'vop.db');
    const image = fs.readFileSync(file);
    expect(fs.readFileSync(`${file}.crc`, 'ascii')).toMatch(new RegExp(`^crc32 [0-9a-f]{8} bytes ${image.length}\\n$`));
    const reopened = await DurableDatabase.open({ dir });
    expect(reopened.openCheck).toBe('checksum');
    await reopened.close(); // nothing written: the file and its checksum stay as they were
    expect(fs.readFileSync(file).equals(image)).toBe(true);

    // A backup copied in (no checksum, or a stale one) is checked the slow way, and used.
    fs.rmSync(`${file}.crc`);
    const restored = await DurableDatabase.open({ dir });
    expect(restored.openCheck).toBe('quick_check');
    await restored.close();
    const s = await startServer({ dataDir: dir });
    try {
      expect((await new SpecClient(s.baseUrl, appId, secret).get('/Api/Video/Get', { Id: videoId })).body.VideoModel.VideoTitle).toBe('seeded');
    } finally {
      await s.close();
    }
  });

  it('sets aside a vop.db with one flipped byte whose checksum is stale', async () => {
    const { dir } = await seededDir();
    const file = path.join(dir, 'vop.db');
    const checksum = fs.readFileSync(`${file}.crc`);
    const bytes = fs.readFileSync(file);
    // The first byte of page 3: the type of a b-tree page, which quick_check reads.
    const at = bytes.readUInt16BE(16) * 2;
    bytes[at] = bytes[at]! ^ 0xff;
    fs.writeFileSync(file, bytes);
    expect(fs.readFileSync(`${file}.crc`).equals(checksum)).toBe(true);
    const s = await startServer({ dataDir: dir });
    try {
      const aside = fs.readdirSync(dir).filter((f) => /^vop\.db\.damaged-/.test(f));
      expect(aside).toHaveLength(1);
      expect(fs.readFileSync(path.join(dir, aside[0]!)).equals(bytes)).toBe(true);
      const health = await (await fetch(`${s.baseUrl}/healthz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json();
      expect(health.warnings).toHaveLength(1);
      expect(health.warnings[0]).toContain('is damaged');
    } finally {
      await s.close();
    }
  });

  it('refuses a second process on the same data dir with a clear message while the first runs', async () => {
    const dir = tempDataDir('vop-lock-');
    const first = await startServerProcess(startArgs(dir));
    try {
      const second = await runToExit(startArgs(dir));
      expect(second.code).toBe(1);
      expect(second.output).toContain(`is in use by another vop process (pid ${first.child.pid})`);
      expect(second.output).not.toMatch(/\n\s+at /); // a message, not a stack trace
      expect((await fetch(`${first.baseUrl}/healthz`)).status).toBe(200);
    } finally {
      expect(await first.stop('SIGTERM')).toBe(0);
    }
    expect(fs.existsSync(path.join(dir, 'vop.lock'))).toBe(false);
  });

  it('refuses a second open in the same process', async () => {
    const s = await startServer();
    try {
      await expect(createServer({ dataDir: s.dataDir, adminToken: ADMIN_TOKEN, log: () => {} })).rejects.toThrow(/already open in this process/);
    } finally {
      await s.close();
    }
  });

  it('takes over a stale lock left by a process that died, and a half-written one', async () => {
    const { dir, appId, secret, videoId } = await seededDir();
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    for (const body of [JSON.stringify({ pid: dead, host: os.hostname(), since: new Date().toISOString() }), '{"pid": 12']) {
      fs.writeFileSync(path.join(dir, 'vop.lock'), body);
      const s = await startServer({ dataDir: dir });
      try {
        expect(JSON.parse(fs.readFileSync(path.join(dir, 'vop.lock'), 'utf8')).pid).toBe(process.pid);
        const r = await new SpecClient(s.baseUrl, appId, secret).get('/Api/Video/Get', { Id: videoId });
        expect(r.body.VideoModel.VideoTitle).toBe('seeded');
      } finally {
        await s.close();
      }
    }
  });

  async function databaseFile(dir: string, build: (db: import('sql.js').Database) => void): Promise<void> {
    const SQL = await initSqlJs();
    const db = new SQL.Database();
    build(db);
    fs.writeFileSync(path.join(dir, 'vop.db'), db.export());
    db.close();
  }

  it('refuses a database from a newer vop with a clear message, and leaves it as it was', async () => {
    const dir = tempDataDir('vop-newer-');
    await databaseFile(dir, (db) => db.run('PRAGMA user_version = 99'));
    const before = fs.readFileSync(path.join(dir, 'vop.db'));
    await expect(createServer({ dataDir: dir, adminToken: ADMIN_TOKEN, log: () => {} })).rejects.toThrow(
      `The database has schema version 99, newer than this vop understands (${MIGRATIONS.length}). Use a newer vop.`,
    );
    const child = await runToExit(startArgs(dir));
    expect(child.code).toBe(1);
    expect(child.output).toContain('vop could not start: The database has schema version 99');
    expect(fs.readFileSync(path.join(dir, 'vop.db')).equals(before)).toBe(true);
    expect(fs.existsSync(path.join(dir, 'vop.lock'))).toBe(false);
  });

  it('migrates an older database forward, keeping its data', async () => {
    const dir = tempDataDir('vop-migrate-');
    const t = Date.UTC(2024, 2, 3, 4, 5, 6);
    await databaseFile(dir, (db) => {
      for (const sql of MIGRATIONS[0]!) db.run(sql);
      db.run('PRAGMA user_version = 1');
      db.run("INSERT INTO apps (app_id, name, secret, created_at, updated_at) VALUES ('oldapp', 'old', 'oldsecret', ?, ?)", [t, t]);
      db.run(
        `INSERT INTO videos (id, app_id, title, status, source_type, created_at, updated_at)
         VALUES ('0f8fad5b-d9cb-469f-a165-70867728950e', 'oldapp', 'from v1', 8, 1, ?, ?)`,
        [t, t],
      );
    });
    const s = await startServer({ dataDir: dir, timeZone: 'UTC' });
    try {
      const r = await new SpecClient(s.baseUrl, 'oldapp', 'oldsecret').get('/Api/Video/Get', { Id: '0f8fad5b-d9cb-469f-a165-70867728950e' });
      expect(r.body.VideoModel).toMatchObject({ VideoTitle: 'from v1', Status: 8, CreateDate: '2024-03-03T04:05:06' });
    } finally {
      await s.close();
    }
    const SQL = await initSqlJs();
    const db = new SQL.Database(fs.readFileSync(path.join(dir, 'vop.db')));
    expect(db.exec('PRAGMA user_version')[0]!.values[0]![0]).toBe(MIGRATIONS.length);
    const cols = db.exec('PRAGMA table_info(videos)')[0]!.values.map((row) => row[1]);
    expect(cols).toEqual(expect.arrayContaining(['source_file', 'keep_source']));
    db.close();
  });

  it('creates a fresh data dir at the newest schema version', async () => {
    const s = await startServer();
    await s.close();
    const SQL = await initSqlJs();
    const db = new SQL.Database(fs.readFileSync(path.join(s.dataDir, 'vop.db')));
    expect(db.exec('PRAGMA user_version')[0]!.values[0]![0]).toBe(MIGRATIONS.length);
    expect(db.exec('PRAGMA quick_check')[0]!.values[0]![0]).toBe('ok');
    db.close();
  });
});
