/**
 * Starting (issue 2, item 2): flags and environment, the printed addresses, /healthz, clean
 * shutdown on SIGTERM and SIGINT, and clear errors.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildServer, CLI_BUNDLE, serverBundleIsStale, startNodeFlags } from '../../scripts/build-server.mjs';
import { parseStartArgs } from '../../server/startArgs.js';
import { AdminClient, SpecClient } from '../helpers/client.js';
import { ROOT, killStrayProcesses, runToExit, startServerProcess, tempDataDir } from '../helpers/server.js';

afterAll(() => killStrayProcesses());

const TOKEN = 'startup-admin-token-0123456789';

/** The JSON records of a process's output (`--log-format json`); lines that are not one are skipped. */
function records(output: string): Array<Record<string, unknown>> {
  return output.split('\n').flatMap((line) => {
    try {
      const r: unknown = JSON.parse(line);
      return r && typeof r === 'object' ? [r as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

describe('npm start runs the bundle scripts/build-server.mjs makes', () => {
  it('builds dist/server/main.js, which serves the API, the widgets and the console from its place and stops cleanly', async () => {
    // The Node flags npm start runs the server with, taken from package.json so that this test runs it as npm start does.
    const flags = startNodeFlags();
    expect(flags).toContain('--expose-gc'); // durableDatabase.ts releaseImage()
    expect(await buildServer()).toBe(path.join(ROOT, 'dist/server/main.js'));

    const dir = tempDataDir('vop-start-bundle-');
    const p = await startServerProcess(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--admin-token', TOKEN], {}, 'dist/server/main.js', flags);
    expect((await fetch(`${p.baseUrl}/healthz`)).status).toBe(200);
    const widget = await fetch(`${p.baseUrl}/widget/initUploadWidget.js`);
    expect(widget.status).toBe(200);
    expect(await widget.text()).toContain('openUpload');
    expect((await fetch(`${p.baseUrl}/console/`)).status).toBe(200);
    const app = await new AdminClient(p.baseUrl, TOKEN).createApp('bundled');
    const id = await new SpecClient(p.baseUrl, app.appId, app.appSecret).register({ VideoTitle: 'through the bundle' });
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await p.stop('SIGTERM')).toBe(0);
  }, 60_000);

  it('rebuilds only when a source it read is newer than the bundle', async () => {
    await buildServer();
    expect(serverBundleIsStale()).toBe(false);
    const source = path.join(ROOT, 'server/app.ts');
    const { atime, mtime } = fs.statSync(source);
    try {
      fs.utimesSync(source, atime, new Date(Date.now() + 60_000));
      expect(serverBundleIsStale()).toBe(true);
    } finally {
      fs.utimesSync(source, atime, mtime);
    }
    expect(serverBundleIsStale()).toBe(false);
    // The command line's bundle counts as much: older than a source, both are built again.
    const cli = fs.statSync(CLI_BUNDLE);
    try {
      fs.utimesSync(CLI_BUNDLE, cli.atime, new Date(0));
      expect(serverBundleIsStale()).toBe(true);
    } finally {
      fs.utimesSync(CLI_BUNDLE, cli.atime, cli.mtime);
    }
    expect(serverBundleIsStale()).toBe(false);
  });

  // An install owned by one user and run by another: dist/ cannot be written, and the bundle
  // there runs. Needs root to run the script as another user (as CI does).
  it.skipIf(process.getuid?.() !== 0)('runs the bundle that is there when dist/ cannot be written', async () => {
    await buildServer();
    const source = path.join(ROOT, 'server/app.ts');
    const { atime, mtime } = fs.statSync(source);
    try {
      fs.utimesSync(source, atime, new Date(Date.now() + 60_000)); // stale, so it tries to build
      const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, 'scripts/build-server.mjs', '--if-stale'], {
        cwd: ROOT,
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      // Said, with the cause: the folder it could not write.
      expect(r.stderr).toContain('EACCES');
    } finally {
      fs.utimesSync(source, atime, mtime);
    }
  });
});

describe('npm start (server/main.ts as a child process)', () => {
  it('serves with the flags given, prints its addresses, answers /healthz, stops cleanly on SIGTERM and SIGINT, and finds its data again', async () => {
    const dir = tempDataDir('vop-start-');
    // Records rather than lines: what it says of itself is read by field, not by sentence.
    const args = ['--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--admin-token', TOKEN, '--log-format', 'json'];
    const p = await startServerProcess(args);
    const port = new URL(p.baseUrl).port;
    expect(p.baseUrl).toBe(`http://127.0.0.1:${port}`);
    expect(records(p.output()).find((r) => r.addresses)).toMatchObject({
      dataDir: dir,
      addresses: [p.baseUrl],
      api: [`${p.baseUrl}/Api/Video`],
      console: `${p.baseUrl}/console`,
      adminApi: `${p.baseUrl}/admin/api`,
      adminApiFrom: 'loopback only',
      adminToken: 'as given',
    });

    // The admin token on the command line is warned about (a warning naming the flag), and never printed.
    expect(records(p.output()).some((r) => r.level === 'warn' && String(r.msg).includes('--admin-token'))).toBe(true);
    expect(p.output()).not.toContain(TOKEN);

    const health = await fetch(`${p.baseUrl}/healthz`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(health.status).toBe(200);
    expect(health.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const h = await health.json();
    expect(h).toMatchObject({ status: 'ok', warnings: [] });
    // Nothing is registered yet on this fresh data directory: no status has a count.
    expect(h.videosByStatus).toEqual({});
    expect(typeof h.version).toBe('string');
    expect(Number.isInteger(h.uptimeSeconds)).toBe(true);

    const admin = new AdminClient(p.baseUrl, TOKEN);
    const app = await admin.createApp('kept');
    const c = new SpecClient(p.baseUrl, app.appId, app.appSecret);
    const id = await c.register({ VideoTitle: 'kept across restarts' });
    expect(fs.existsSync(path.join(dir, 'vop.lock'))).toBe(true);

    // A clean stop: exit 0, having said which signal stopped it, its lock released.
    expect(await p.stop('SIGTERM')).toBe(0);
    expect(records(p.output()).some((r) => String(r.msg).includes('SIGTERM'))).toBe(true);
    expect(fs.existsSync(path.join(dir, 'vop.lock'))).toBe(false);
    // A clean stop leaves everything in the snapshot.
    expect(fs.readdirSync(path.join(dir, 'journal')).filter((f) => fs.statSync(path.join(dir, 'journal', f)).size > 0)).toEqual([]);

    const again = await startServerProcess(args);
    const c2 = new SpecClient(again.baseUrl, app.appId, app.appSecret);
    expect((await c2.get('/Api/Video/Get', { Id: id })).body.VideoModel.VideoTitle).toBe('kept across restarts');
    expect(await again.stop('SIGINT')).toBe(0);
    expect(records(again.output()).some((r) => String(r.msg).includes('SIGINT'))).toBe(true);
    expect(fs.existsSync(path.join(dir, 'vop.lock'))).toBe(false);
  }, 120_000); // two server starts: room for a loaded CI machine

  it('stops cleanly on SIGHUP too (its terminal went away)', async () => {
    const dir = tempDataDir('vop-hup-');
    const p = await startServerProcess(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir], { VOP_ADMIN_TOKEN: TOKEN });
    expect(await p.stop('SIGHUP')).toBe(0);
    expect(p.output()).toContain('SIGHUP');
    expect(fs.existsSync(path.join(dir, 'vop.lock'))).toBe(false);
  });

  it('takes its settings from VOP_* environment variables, and flags win over them', async () => {
    const dir = tempDataDir('vop-env-');
    const p = await startServerProcess(['--admin-token', TOKEN], {
      VOP_PORT: '0',
      VOP_HOST: '127.0.0.1',
      VOP_DATA_DIR: dir,
      VOP_ADMIN_TOKEN: 'env-token-that-the-flag-overrides',
      VOP_PUBLIC_URL: 'http://videos.lan:9999',
      // The server's own zone: CreateDate is local time there.
      TZ: 'Asia/Tokyo',
      VOP_TIME_ZONE: '',
    });
    try {
      expect(p.output()).toContain(`from ${dir}`);
      expect(fs.existsSync(path.join(dir, 'vop.db'))).toBe(true);
      expect((await new AdminClient(p.baseUrl, 'env-token-that-the-flag-overrides').request('GET', '/apps')).status).toBe(401);
      const admin = new AdminClient(p.baseUrl, TOKEN);
      const app = await admin.createApp('env');
      const c = new SpecClient(p.baseUrl, app.appId, app.appSecret);
      const id = await c.register();
      const d = await c.get('/Api/Video/Get', { Id: id });
      expect(d.body.MediaSever.PlayURL).toBe('http://videos.lan:9999/media/play/');
      // Tokyo is UTC+9 all year: read CreateDate as UTC and take 9 hours off.
      const shown = Date.parse(`${d.body.VideoModel.CreateDate}Z`) - 9 * 3600_000;
      expect(Math.abs(shown - Date.now())).toBeLessThan(5_000);
    } finally {
      expect(await p.stop()).toBe(0);
    }
  });

  it('generates an admin token when none is given, keeps it in the data dir for the owner only, and reuses it', async () => {
    const dir = tempDataDir('vop-gen-');
    const env = { VOP_ADMIN_TOKEN: '' };
    const p = await startServerProcess(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir], env);
    const file = path.join(dir, 'admin-token');
    try {
      // Where the token is kept is said (the file, never the token).
      expect(p.output()).toContain(file);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const token = fs.readFileSync(file, 'utf8').trim();
      expect(token.length).toBeGreaterThanOrEqual(32);
      expect((await new AdminClient(p.baseUrl, token).request('GET', '/apps')).status).toBe(200);
      expect((await new AdminClient(p.baseUrl, `${token}x`).request('GET', '/apps')).status).toBe(401);
    } finally {
      expect(await p.stop()).toBe(0);
    }
    const before = fs.readFileSync(file, 'utf8');
    const again = await startServerProcess(['--port', '0', '--host', '127.0.0.1', '--data-dir', dir], env);
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    expect(await again.stop()).toBe(0);
  }, 120_000);

  it('refuses a bad --port with a clear message and exit code 2', async () => {
    const r = await runToExit(['--port', 'eighty', '--data-dir', tempDataDir()]);
    expect(r.code).toBe(2);
    expect(r.output).toContain('--port "eighty" is not a port number (0 to 65535).');
    expect(r.output).toContain('Usage: npm start');
    expect(r.output).not.toContain('vop listening');
  });

  it('says so with a hint of --port and exits 1 when the port is taken, having made no data folder', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const dataDir = path.join(tempDataDir(), 'data');
      const r = await runToExit(['--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir, '--admin-token', TOKEN]);
      expect(r.code).toBe(1);
      expect(r.output).toContain(`vop could not start: port ${port} on 127.0.0.1 is in use`);
      expect(r.output).toMatch(/npm start -- --port \d+ \(or VOP_PORT\)/);
      expect(r.output).not.toContain('EADDRINUSE');
      expect(fs.existsSync(dataDir)).toBe(false);
    } finally {
      blocker.close();
    }
  });
});

describe('start flags and environment (parseStartArgs)', () => {
  it('defaults to port 8080, every interface and ./data', () => {
    const c = parseStartArgs([], {});
    expect(c).toMatchObject({ port: 8080, host: '0.0.0.0' });
    expect(c.options).toMatchObject({ dataDir: './data', adminRemote: false });
    for (const absent of ['adminToken', 'publicUrl', 'timeZone'] as const) expect(c.options[absent]).toBeUndefined();
  });

  it('reads every flag', () => {
    const c = parseStartArgs(
      ['--port', '9000', '--host', '::1', '--data-dir', '/d', '--admin-token', 't'.repeat(20), '--public-url', 'http://x', '--admin-remote', '--time-zone', 'Asia/Shanghai'],
      {},
    );
    expect(c).toMatchObject({ port: 9000, host: '::1' });
    expect(c.options).toEqual({ dataDir: '/d', adminToken: 't'.repeat(20), publicUrl: 'http://x', adminRemote: true, timeZone: 'Asia/Shanghai' });
  });

  it('reads every VOP_* variable, and a flag wins over its variable', () => {
    const env = { VOP_PORT: '7000', VOP_HOST: '127.0.0.1', VOP_DATA_DIR: '/e', VOP_ADMIN_TOKEN: 'e'.repeat(20), VOP_PUBLIC_URL: 'http://e', VOP_ADMIN_REMOTE: 'yes', VOP_TIME_ZONE: 'UTC' };
    const c = parseStartArgs([], env);
    expect(c).toMatchObject({ port: 7000, host: '127.0.0.1' });
    expect(c.options).toEqual({ dataDir: '/e', adminToken: 'e'.repeat(20), publicUrl: 'http://e', adminRemote: true, timeZone: 'UTC' });
    expect(parseStartArgs(['--port', '1', '--data-dir', '/f'], env)).toMatchObject({ port: 1, options: { dataDir: '/f' } });
    expect(parseStartArgs([], { VOP_ADMIN_REMOTE: '0' }).options.adminRemote).toBe(false);
  });

  it.each(['abc', '65536', '-1', '1.5', '', ' 80', '0x50'])('refuses the port %j', (port) => {
    expect(() => parseStartArgs([`--port=${port}`], {})).toThrow(/--port ".*" is not a port number/);
  });

  it('refuses an unknown flag', () => {
    expect(() => parseStartArgs(['--prot', '80'], {})).toThrow(/Unknown option '--prot'/);
  });
});
