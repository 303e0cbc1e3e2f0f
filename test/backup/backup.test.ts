/**
 * Backups in the embedded mode (docs/backup.md), with real processes: the CLI against a serving
 * server, sql.js files, ffmpeg's renditions, SIGKILL to a process group.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyBackup } from '../../server/backup/verifyBackup.js';
import { DEFAULT_VIDEO_OPTIONS } from '../../server/services/videoService.js';
import { startCallbackReceiver } from '../helpers/callbackReceiver.js';
import { makeClip } from '../helpers/clips.js';
import { sha256File } from '../helpers/ingest.js';
import { listFiles, placeSource, TINY_PROCESSING } from '../helpers/processing.js';
import { notYet, waitForStatus, waitUntil } from '../helpers/wait.js';
import { CLI_ENTRY, killStrayProcesses, ROOT, runToExit, signalGroup, startServer, tempDataDir, type TestServer } from '../helpers/server.js';
import type { SpecClient } from '../helpers/client.js';

/** Runs the CLI to its end (two minutes at most: a backup of a few videos with their media). */
function cli(args: string[]): Promise<{ code: number | null; output: string }> {
  return runToExit(args, {}, CLI_ENTRY, 120_000);
}

/** The CLI in a process group of its own, as a supervisor runs it, so a test can SIGKILL the group. */
function cliGroup(args: string[]) {
  const child = spawn(process.execPath, [path.join(ROOT, CLI_ENTRY), ...args], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { pid: child.pid!, output: () => out, exited };
}

/** Every file under a folder, by path from it, with its SHA-256. */
function digests(dir: string): Map<string, string> {
  return new Map(listFiles(dir).map((f) => [f, sha256File(path.join(dir, f))]));
}

/** A folder as it is: names, sizes, times and contents, to show it untouched. */
function snapshotOf(dir: string): string {
  return listFiles(dir)
    .map((f) => {
      const st = fs.statSync(path.join(dir, f));
      return `${f} ${st.size} ${st.mtimeMs} ${sha256File(path.join(dir, f))}`;
    })
    .join('\n');
}

afterAll(() => killStrayProcesses());

describe('a backup taken while registrations go on', () => {
  let s: TestServer;
  let restored: TestServer | undefined;
  let client: SpecClient;
  let receiver: Awaited<ReturnType<typeof startCallbackReceiver>>;
  let played: string;
  const work = tempDataDir('vop-backup-work-');
  const file = path.join(work, 'library.tar');
  const acked: Array<{ id: string; at: number }> = [];
  let began = 0;
  let ended = 0;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    // No rate limit: four clients register as fast as they can.
    s = await startServer({ processing: TINY_PROCESSING, videos: { ...DEFAULT_VIDEO_OPTIONS, registrationsPerMinute: 0 } });
    const { appId, appSecret } = await s.admin.createApp('library', receiver.url);
    client = new (await import('../helpers/client.js')).SpecClient(s.baseUrl, appId, appSecret);
    expect((await s.admin.request('PUT', '/settings', { pullAllow: ['127.0.0.0/8'] })).status).toBe(200);
    played = await client.register({ VideoTitle: 'played' });
    await placeSource(s.vop, played, await makeClip({ seconds: 2 }));
    await waitForStatus(s.vop, played, [1], { timeoutMs: 60_000 });
    await waitUntil('a callback delivered', () => (receiver.received.length > 0 ? true : undefined));

    // Four clients register without pause, before, during and after the backup.
    let stop = false;
    const clients = [0, 1, 2, 3].map(async (c) => {
      for (let i = 0; i < 3000 && !stop; i++) {
        const id = await client.register({ VideoTitle: `r${c}-${i}` });
        acked.push({ id, at: Date.now() });
      }
    });
    // Some registrations acknowledged before the backup begins.
    await waitUntil('registrations acknowledged before the backup', () => acked.length >= 20 || notYet(acked.length), { timeoutMs: 30_000 });
    began = Date.now();
    try {
      const made = await cli(['backup', '--data-dir', s.dataDir, '--admin-token', s.admin.token, '--out', file]);
      ended = Date.now();
      expect(made.code, made.output).toBe(0);
      expect(made.output).toContain(s.baseUrl); // through the serving server, found from the data folder
      // And some after it ended.
      const after = acked.length;
      await waitUntil('registrations acknowledged after the backup', () => acked.length >= after + 20 || notYet(acked.length - after), { timeoutMs: 30_000 });
    } finally {
      stop = true;
      await Promise.all(clients);
    }
  }, 180_000);

  afterAll(async () => {
    await restored?.close();
    await s?.close();
    await receiver?.close();
  });

  it('went on registering while the backup ran', () => {
    expect(acked.filter((a) => a.at < began).length).toBeGreaterThan(0);
    expect(acked.filter((a) => a.at > began && a.at < ended).length).toBeGreaterThan(0);
  });

  it('verifies, and restores into a new folder a server serves with every acknowledged registration, setting, callback record and rendition', async () => {
    expect((await verifyBackup(file)).problems).toEqual([]);
    const into = path.join(work, 'restored');
    const r = await cli(['restore', '--in', file, '--data-dir', into]);
    expect(r.code, r.output).toBe(0);
    restored = await startServer({ dataDir: into, processing: TINY_PROCESSING });

    // Every registration acknowledged before the backup began.
    const before = acked.filter((a) => a.at < began);
    for (const { id } of before) expect(await restored.vop.stores.videos.get(id), id).toBeDefined();
    const there = new (await import('../helpers/client.js')).SpecClient(restored.baseUrl, client.appId, client.secret);
    const detail = await there.get('/Api/Video/Get', { Id: before.at(-1)!.id });
    expect(detail.body.AuthMsg.ResultCode).toBe('1');

    // The applications (with their secrets: the client above signs with the old one), the settings, the callback records.
    // (Not their recent callers: the embedded mode keeps those in memory, see docs/backup.md.)
    const appsOf = async (t: TestServer) => ((await t.admin.request('GET', '/apps')).body.apps as Array<Record<string, unknown>>).map(({ recentCallers: _, ...app }) => app);
    const apps = await appsOf(s);
    expect(apps).toHaveLength(1);
    expect(await appsOf(restored)).toEqual(apps);
    expect((await restored.admin.request('GET', '/settings')).body.saved).toEqual((await s.admin.request('GET', '/settings')).body.saved);
    const deliveries = (await s.admin.request('GET', `/apps/${client.appId}/deliveries`)).body;
    expect(deliveries.deliveries?.length ?? deliveries.length).toBeGreaterThan(0);
    expect((await restored.admin.request('GET', `/apps/${client.appId}/deliveries`)).body).toEqual(deliveries);

    // Every rendition, HLS file and cover, byte for byte; and the restored server plays them.
    for (const area of ['play', 'hls', 'covers', 'sources']) {
      const original = digests(path.join(s.dataDir, 'media', area));
      expect(digests(path.join(into, 'media', area))).toEqual(original);
      if (area !== 'sources') expect(original.size).toBeGreaterThan(0);
    }
    const v = await there.get('/Api/Video/Get', { Id: played });
    expect(v.body.AuthMsg.ResultCode).toBe('1');
    const url = `${v.body.MediaSever.PlayURL}${v.body.VideoPlayFile[0].VideoURL}`;
    expect(url.startsWith(restored.baseUrl)).toBe(true);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    const rel = v.body.VideoPlayFile[0].VideoURL as string;
    expect(crypto.createHash('sha256').update(Buffer.from(await res.arrayBuffer())).digest('hex')).toBe(sha256File(path.join(s.dataDir, 'media', 'play', rel)));
  }, 120_000);

  it('is refused by verify with one flipped byte anywhere', async () => {
    const bytes = fs.readFileSync(file);
    const size = bytes.length;
    // Parts' headers and data, a header's checksum terminator, padding, the manifest, the seal, tar's end.
    const offsets = [0, 155, 700, Math.floor(size / 3), Math.floor(size / 2), size - 5000, size - 2048 + 3, size - 1536 + 10, size - 1536 + 100, size - 700, size - 1];
    for (let i = 0; i < 6; i++) offsets.push(crypto.randomInt(size));
    const damaged = path.join(work, 'damaged.tar');
    for (const at of offsets) {
      const copy = Buffer.from(bytes);
      copy[at]! ^= 0x10;
      fs.writeFileSync(damaged, copy);
      expect((await verifyBackup(damaged)).problems.length, `byte ${at} of ${size}`).toBeGreaterThan(0);
    }
    const r = await cli(['verify', '--in', damaged]);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain(damaged);
  }, 120_000);

  it('refuses a folder that holds files, and leaves it untouched', async () => {
    const dir = path.join(work, 'occupied');
    fs.mkdirSync(path.join(dir, 'media'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'mine');
    fs.writeFileSync(path.join(dir, 'media', 'keep.bin'), crypto.randomBytes(1000));
    const before = snapshotOf(dir);
    const r = await cli(['restore', '--in', file, '--data-dir', dir]);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain('notes.txt');
    expect(snapshotOf(dir)).toBe(before);
    expect(fs.readdirSync(dir).sort()).toEqual(['media', 'notes.txt']);
  }, 60_000);

  it('refuses a damaged backup before it writes anything', async () => {
    const copy = fs.readFileSync(file);
    copy[Math.floor(copy.length / 2)]! ^= 1;
    const damaged = path.join(work, 'damaged-restore.tar');
    fs.writeFileSync(damaged, copy);
    const into = path.join(work, 'never');
    const r = await cli(['restore', '--in', damaged, '--data-dir', into]);
    expect(r.code).not.toBe(0);
    expect(fs.existsSync(into)).toBe(false);
  }, 60_000);

  it('makes a backup from the admin API into the backup folder, verified, listed and downloadable', async () => {
    const made = await s.admin.request('POST', '/backups', { media: 'none' });
    expect(made.status).toBe(200);
    expect(made.body).toMatchObject({ verified: true, media: 'none' });
    const listed = await s.admin.request('GET', '/backups');
    expect(listed.body.backups.map((b: { name: string }) => b.name)).toContain(made.body.name);
    const res = await fetch(`${s.baseUrl}/admin/api/backups/${made.body.name}`, { headers: { authorization: `Bearer ${s.admin.token}` } });
    expect(res.status).toBe(200);
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.equals(fs.readFileSync(path.join(s.dataDir, 'backups', made.body.name)))).toBe(true);
    for (const name of ['..%2Fvop.db', 'vop.db', `${made.body.name}.json`]) {
      const r = await s.admin.request('GET', `/backups/${name}`);
      expect(r.status, name).toBe(404);
    }
    expect((await s.admin.request('POST', '/backups', { media: 'all' })).status).toBe(400);
  }, 60_000);
});

describe('nothing half-made', () => {
  const work = tempDataDir('vop-backup-kill-');
  const dataDir = path.join(work, 'data');
  const file = path.join(work, 'big.tar');

  beforeAll(async () => {
    // A library with one large source (sparse: quick to make and to read) so that a backup and a
    // restore take long enough to be killed part-way.
    const s = await startServer({ dataDir });
    const c = await s.newApp('big');
    const id = await c.register();
    await s.close();
    const source = path.join(dataDir, 'media', 'sources', id, 'source');
    fs.mkdirSync(path.dirname(source), { recursive: true });
    const fd = fs.openSync(source, 'w');
    fs.ftruncateSync(fd, 200 * 1024 * 1024);
    fs.closeSync(fd);
  }, 60_000);

  it('a backup killed part-way leaves no file that looks complete, and the next one succeeds', async () => {
    const run = cliGroup(['backup', '--data-dir', dataDir, '--out', file]);
    await waitUntil('the backup under way', () => (fs.existsSync(`${file}.partial`) && fs.statSync(`${file}.partial`).size > 1024 * 1024 ? true : undefined), { timeoutMs: 60_000, pollMs: 2 });
    signalGroup(run.pid, 'SIGKILL');
    await run.exited;
    expect(fs.existsSync(file)).toBe(false);
    expect((await verifyBackup(`${file}.partial`)).problems.length).toBeGreaterThan(0);
    const again = await cli(['backup', '--data-dir', dataDir, '--out', file]);
    expect(again.code, again.output).toBe(0);
    expect(fs.existsSync(`${file}.partial`)).toBe(false);
    expect((await verifyBackup(file)).problems).toEqual([]);
  }, 180_000);

  it('a restore killed part-way leaves a folder no server starts on, and a second restore succeeds', async () => {
    expect(fs.existsSync(file)).toBe(true);
    const into = path.join(work, 'restored');
    const run = cliGroup(['restore', '--in', file, '--data-dir', into]);
    await waitUntil('the restore writing', () => (fs.existsSync(path.join(into, 'vop.restoring')) && fs.existsSync(path.join(into, 'vop.db')) ? true : undefined), { timeoutMs: 60_000, pollMs: 2 });
    signalGroup(run.pid, 'SIGKILL');
    await run.exited;
    await expect(startServer({ dataDir: into })).rejects.toThrow(/restore/);
    const start = await cli(['restore', '--in', file, '--data-dir', into]);
    expect(start.code, start.output).toBe(0);
    const big = listFiles(path.join(into, 'media', 'sources'));
    expect(big.map((f) => fs.statSync(path.join(into, 'media', 'sources', f)).size)).toEqual([200 * 1024 * 1024]);
    const s = await startServer({ dataDir: into });
    try {
      expect((await s.admin.request('GET', '/apps')).body.apps).toHaveLength(1);
    } finally {
      await s.close();
    }
  }, 180_000);

  it('a backup of a folder that holds no vop database is refused, and nothing is made there', async () => {
    const empty = path.join(work, 'typo');
    const r = await cli(['backup', '--data-dir', empty, '--out', path.join(work, 'none.tar')]);
    expect(r.code).not.toBe(0);
    expect(fs.existsSync(empty)).toBe(false);
    expect(fs.existsSync(path.join(work, 'none.tar'))).toBe(false);
  }, 60_000);
});
