/**
 * Applications (issue 2, item 3): the admin API, its token, and the CLI that drives it.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cannotReach, noAdminToken, npmBannerHint, refusal, runCli, USAGE } from '../../server/cli.js';
import { ADMIN_TOKEN_MIN_BITS, tokenStrengthBits } from '../../server/core/tokens.js';
import { createServer } from '../../server/app.js';
import { AdminClient, SpecClient } from '../helpers/client.js';
import { freePort } from '../helpers/ports.js';
import { ADMIN_TOKEN, CLI_ENTRY, killStrayProcesses, ROOT, runToExit, startServer, tempDataDir, warningsLogged, type TestServer } from '../helpers/server.js';
import { warningLine } from '../../server/core/logLines.js';
import { weakAdminToken } from '../../server/composition/dataDir.js';

afterAll(() => killStrayProcesses());

/** At least 128 random bits, as hex. */
const SECRET_RE = /^[0-9a-f]{32,}$/;

describe('admin API', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(() => s.close());

  it('creates an application: 201 with appId, appSecret, name and callbackUrl', async () => {
    const r = await s.admin.request('POST', '/apps', { name: 'Video site', callbackUrl: 'https://site.example/vop/callback' });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ name: 'Video site', callbackUrl: 'https://site.example/vop/callback', disabled: false, grants: [] });
    expect(r.body.appId).toMatch(/^[0-9a-f]{24}$/);
    expect(r.body.appSecret).toMatch(SECRET_RE);
    // The secret works for the spec API at once.
    const c = new SpecClient(s.baseUrl, r.body.appId, r.body.appSecret);
    expect((await c.get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('1');
  });

  it('issues a different id and secret every time; callbackUrl is optional', async () => {
    const made = await Promise.all(Array.from({ length: 5 }, (_, i) => s.admin.request('POST', '/apps', { name: `n${i}` })));
    for (const r of made) {
      expect(r.status).toBe(201);
      expect(r.body.callbackUrl).toBe('');
    }
    expect(new Set(made.map((r) => r.body.appId)).size).toBe(5);
    expect(new Set(made.map((r) => r.body.appSecret)).size).toBe(5);
  });

  it('lists and reads applications without ever showing a secret', async () => {
    const created = await s.admin.request('POST', '/apps', { name: 'listed' });
    const list = await s.admin.request('GET', '/apps');
    expect(list.status).toBe(200);
    const mine = list.body.apps.find((a: any) => a.appId === created.body.appId);
    expect(mine).toMatchObject({ name: 'listed', callbackUrl: '', disabled: false, grants: [] });
    expect(JSON.stringify(list.body)).not.toContain(created.body.appSecret);
    const one = await s.admin.request('GET', `/apps/${created.body.appId}`);
    expect(one.body).toEqual(mine);
    expect(one.body).not.toHaveProperty('appSecret');
    expect(one.body).not.toHaveProperty('secret');
  });

  it('changes name, callbackUrl and disabled with PATCH', async () => {
    const { appId } = (await s.admin.request('POST', '/apps', { name: 'before', callbackUrl: 'http://a.example/cb' })).body;
    const r = await s.admin.request('PATCH', `/apps/${appId}`, { name: '  after  ', callbackUrl: 'http://b.example/cb2', disabled: true });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ appId, name: 'after', callbackUrl: 'http://b.example/cb2', disabled: true });
    const cleared = await s.admin.request('PATCH', `/apps/${appId}`, { callbackUrl: null, disabled: false });
    expect(cleared.body).toMatchObject({ name: 'after', callbackUrl: '', disabled: false });
    expect((await s.admin.request('GET', `/apps/${appId}`)).body).toMatchObject({ name: 'after', callbackUrl: '', disabled: false });
  });

  it('rotates a secret: the new one is returned and differs', async () => {
    const created = (await s.admin.request('POST', '/apps', { name: 'rot' })).body;
    const r = await s.admin.request('POST', `/apps/${created.appId}/secret`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ appId: created.appId, appSecret: expect.stringMatching(SECRET_RE) });
    expect(r.body.appSecret).not.toBe(created.appSecret);
  });

  it.each([
    ['POST', '/apps', {}, /^Invalid Parameter: name is required/],
    ['POST', '/apps', { name: '   ' }, /name is required/],
    ['POST', '/apps', { name: 42 }, /name is required/],
    ['POST', '/apps', { name: 'x'.repeat(101) }, /name is longer than 100 characters/],
    ['POST', '/apps', { name: 'ok', callbackUrl: 'ftp://x.example/' }, /callbackUrl must be http or https/],
    ['POST', '/apps', { name: 'ok', callbackUrl: 'not a url' }, /callbackUrl is not a URL/],
    ['POST', '/apps', { name: 'ok', callbackUrl: 7 }, /callbackUrl must be a string/],
    ['PATCH', null, { disabled: 'yes' }, /disabled must be true or false/],
    ['PATCH', null, { name: '' }, /name is required/],
    ['PATCH', null, { grants: 'abc' }, /grants must be an array of AppIds/],
  ])('refuses %s %s %j with 400 and {error:{code,message,detail}}', async (method, p, body, message) => {
    const target = p ?? `/apps/${(await s.admin.request('POST', '/apps', { name: 'target' })).body.appId}`;
    const r = await s.admin.request(method, target, body);
    expect(r.status).toBe(400);
    expect(Object.keys(r.body)).toEqual(['error']);
    expect(r.body.error.code).toBe('201');
    expect(r.body.error.message).toMatch(message);
    // The detail apart, for the console to say the code in its language and add the detail.
    expect(r.body.error.message).toBe(`Invalid Parameter: ${r.body.error.detail}`);
  });

  it('answers an unknown application with 404', async () => {
    for (const [method, p] of [['GET', '/apps/nope'], ['PATCH', '/apps/nope'], ['POST', '/apps/nope/secret']] as const) {
      const r = await s.admin.request(method, p, method === 'PATCH' ? { name: 'x' } : undefined);
      expect(r.status, `${method} ${p}`).toBe(404);
      expect(r.body).toEqual({ error: { code: '101', message: 'App Not Found' } });
    }
    const unknownPath = await s.admin.request('GET', '/nothing');
    expect(unknownPath.status).toBe(404);
    expect(unknownPath.body.error.code).toBe('404');
  });

  it('refuses malformed JSON with 400 and a body over the limit with 413', async () => {
    const bad = await s.admin.request('POST', '/apps', '{"name": ', { 'content-type': 'application/json' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('402');
    const big = await s.admin.request('POST', '/apps', { name: 'big', pad: 'x'.repeat(70 * 1024) });
    expect(big.status).toBe(413);
    expect(big.body.error).toEqual({ code: '401', message: 'Request Body Too Large' });
  });

  it('refuses a field a request does not know with 400 naming it, and changes nothing', async () => {
    const { appId } = await s.admin.createApp('fields');
    for (const [method, p, body, field] of [
      ['PATCH', `/apps/${appId}`, { mediaAccess: 'signed', mediaTTL: 60 }, 'mediaTTL'],
      ['PATCH', `/apps/${appId}`, { name: 'renamed', callbackURL: 'https://x.example/cb' }, 'callbackURL'],
      ['POST', '/apps', { name: 'typo', callbackurl: 'https://x.example/cb' }, 'callbackurl'],
      ['PUT', '/processing', { concurrency: 2, ladderConcurency: 1 }, 'ladderConcurency'],
      ['POST', '/videos/bulk', { action: 'delete', ids: ['x'], force: true }, 'force'],
    ] as const) {
      const r = await s.admin.request(method, p, body);
      expect(r.status, `${method} ${p}`).toBe(400);
      expect(r.body.error.code).toBe('201');
      expect(r.body.error.message).toContain(`"${field}"`);
    }
    const app = (await s.admin.request('GET', `/apps/${appId}`)).body;
    expect(app.name).toBe('fields');
    expect(app.mediaAccess).toBe('public');
    expect((await s.admin.request('GET', '/apps')).body.apps.some((a: any) => a.name === 'typo')).toBe(false);
    // A body that is not an object is refused too.
    expect((await s.admin.request('PATCH', `/apps/${appId}`, ['name'])).status).toBe(400);
  });

  it.each([
    ['no Authorization header', undefined],
    ['a wrong bearer token', `Bearer ${ADMIN_TOKEN}x`],
    ['the token without "Bearer"', ADMIN_TOKEN],
    ['another scheme', `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`],
  ])('answers %s with 401, on every admin path', async (_what, authorization) => {
    for (const [method, p] of [['GET', '/apps'], ['POST', '/apps'], ['PATCH', '/apps/x'], ['POST', '/apps/x/secret'], ['GET', '/nothing']]) {
      const res = await fetch(`${s.baseUrl}/admin/api${p}`, {
        method,
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: method === 'GET' ? undefined : '{"name":"sneaky"}',
      });
      expect(res.status, `${method} ${p}`).toBe(401);
      expect(await res.json()).toEqual({ error: { code: '410', message: 'Admin Token Required' } });
    }
    expect((await s.admin.request('GET', '/apps')).body.apps.some((a: any) => a.name === 'sneaky')).toBe(false);
  });
});

describe('admin API reach and token', () => {
  const lan = Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

  it.skipIf(!lan)('answers only loopback callers unless started with --admin-remote', async () => {
    for (const adminRemote of [false, true]) {
      const vop = await createServer({ dataDir: tempDataDir(), adminToken: ADMIN_TOKEN, adminRemote, log: () => {} });
      const { port } = await vop.listen(0, '0.0.0.0');
      try {
        const remote = new AdminClient(`http://${lan}:${port}`, ADMIN_TOKEN);
        const r = await remote.request('GET', '/apps');
        if (adminRemote) {
          expect(r.status).toBe(200);
        } else {
          expect(r.status).toBe(403);
          expect(r.body.error.code).toBe('411');
          // The loopback address still answers.
          expect((await new AdminClient(`http://127.0.0.1:${port}`, ADMIN_TOKEN).request('GET', '/apps')).status).toBe(200);
        }
      } finally {
        await vop.close(500);
      }
    }
  });

  it('generates a token when none is given, writes it to <data-dir>/admin-token with mode 0600, and reuses it', async () => {
    const s = await startServer({ adminToken: undefined });
    const file = path.join(s.dataDir, 'admin-token');
    let token: string;
    try {
      token = fs.readFileSync(file, 'utf8').trim();
      expect(token).toBe(s.vop.adminToken);
      expect(token.length).toBeGreaterThanOrEqual(32);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect((await s.admin.request('GET', '/apps')).status).toBe(200);
      expect((await new AdminClient(s.baseUrl, ADMIN_TOKEN).request('GET', '/apps')).status).toBe(401);
    } finally {
      await s.close();
    }
    const again = await startServer({ adminToken: undefined, dataDir: s.dataDir });
    expect(again.vop.adminToken).toBe(token);
    await again.close();
  });

  it('refuses an admin token shorter than 16 characters', async () => {
    await expect(createServer({ dataDir: tempDataDir(), adminToken: 'short', log: () => {} })).rejects.toThrow(/adminToken must be at least 16 characters/);
  });

  it('warns about a weak admin token given to it, never printing the token, and not about a strong or generated one', async () => {
    for (const [token, warned] of [
      ['aaaaaaaaaaaaaaaaaaaa', true],
      ['admin-password-1', true],
      ['0123456789012345678', true],
      ['Zk3_9fJq2LxP0aTt7bWc1d', false],
      [undefined, false],
    ] as const) {
      const s = await startServer({ adminToken: token });
      try {
        const weak = token === undefined ? undefined : weakAdminToken(token);
        expect(Boolean(weak), String(token)).toBe(warned);
        // That warning, and no other.
        expect(await warningsLogged(s), String(token)).toEqual(weak ? [warningLine(weak)] : []);
        if (token) expect(s.logs.join('\n')).not.toContain(token);
      } finally {
        await s.close();
      }
    }
    // A generated token holds 192 bits, a 20-character hex one 80.
    expect(tokenStrengthBits(crypto.randomBytes(24).toString('base64url'))).toBeGreaterThanOrEqual(ADMIN_TOKEN_MIN_BITS);
    expect(tokenStrengthBits('0123456789abcdef0123')).toBe(80);
  });
});

describe('CLI (npm run vop)', () => {
  let s: TestServer;
  let base: string[];
  beforeAll(async () => {
    s = await startServer();
    base = ['--server', s.baseUrl, '--admin-token', ADMIN_TOKEN];
  });
  afterAll(() => s.close());

  const json = (r: { code: number; stdout: string; stderr: string }) => {
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    return JSON.parse(r.stdout);
  };

  it('drives every apps command and prints JSON', async () => {
    const created = json(await runCli(['apps', 'create', '--name', 'From CLI', '--callback-url', 'http://cli.example/cb', ...base], {}));
    expect(created).toMatchObject({ name: 'From CLI', callbackUrl: 'http://cli.example/cb' });
    expect(created.appSecret).toMatch(SECRET_RE);
    const id = created.appId as string;

    expect(json(await runCli(['apps', 'list', ...base], {})).apps.map((a: any) => a.appId)).toContain(id);
    expect(json(await runCli(['apps', 'get', id, ...base], {}))).toMatchObject({ appId: id, name: 'From CLI' });

    const other = json(await runCli(['apps', 'create', '--name', 'Other', ...base], {}));
    const updated = json(await runCli(['apps', 'update', id, '--name', 'Renamed', '--grants', `${other.appId}, `, ...base], {}));
    expect(updated).toMatchObject({ name: 'Renamed', grants: [other.appId], callbackUrl: 'http://cli.example/cb' });

    expect(json(await runCli(['apps', 'disable', id, ...base], {})).disabled).toBe(true);
    const c = new SpecClient(s.baseUrl, id, created.appSecret);
    expect((await c.get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('102');
    expect(json(await runCli(['apps', 'enable', id, ...base], {})).disabled).toBe(false);
    expect((await c.get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('1');

    const rotated = json(await runCli(['apps', 'rotate-secret', id, ...base], {}));
    expect(rotated.appSecret).toMatch(SECRET_RE);
    expect((await c.get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('104');
    expect((await new SpecClient(s.baseUrl, id, rotated.appSecret).get('/Api/Video/GetList')).body.AuthMsg.ResultCode).toBe('1');
  });

  it('finds the server and token in VOP_SERVER and VOP_ADMIN_TOKEN, or the token in --data-dir', async () => {
    expect(json(await runCli(['apps', 'list'], { VOP_SERVER: s.baseUrl, VOP_ADMIN_TOKEN: ADMIN_TOKEN })).apps).toBeInstanceOf(Array);
    const dir = tempDataDir();
    fs.writeFileSync(path.join(dir, 'admin-token'), `${ADMIN_TOKEN}\n`);
    expect(json(await runCli(['apps', 'list', '--server', s.baseUrl, '--data-dir', dir], {})).apps).toBeInstanceOf(Array);
    expect(json(await runCli(['apps', 'list', '--server', s.baseUrl], { VOP_DATA_DIR: dir })).apps).toBeInstanceOf(Array);
  });

  it('exits 2 with the usage on a bad command, and 1 with the server’s error on a refused one', async () => {
    for (const argv of [['apps', 'frobnicate'], ['videos', 'list'], ['apps', 'get'], ['apps', 'list', '--bogus'], []]) {
      const r = await runCli([...argv, ...base], {});
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(USAGE);
    }
    const help = await runCli(['--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toBe(`${USAGE}\n`);
    expect(help.stdout).toContain('apps rotate-secret <appId>');

    // A refused call: what the server answered, put by refusal() (its code, its message, and what
    // to do about the usual ones), never the raw answer.
    const answered = async (method: string, apiPath: string, token = ADMIN_TOKEN) => {
      const res = await fetch(`${s.baseUrl}${apiPath}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: method === 'GET' ? undefined : '{}' });
      const text = await res.text();
      return `${refusal(res.status, JSON.parse(text), text, s.baseUrl)}\n`;
    };
    const missing = await runCli(['apps', 'get', 'nope', ...base], {});
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(await answered('GET', '/admin/api/apps/nope'));
    expect(missing.stderr).toMatch(/\(101\): App Not Found\n$/);
    const noName = await runCli(['apps', 'create', ...base], {});
    expect(noName.code).toBe(1);
    expect(noName.stderr).toBe(await answered('POST', '/admin/api/apps'));
    expect(noName.stderr).toContain('(201)');
    const wrongToken = await runCli(['apps', 'list', '--server', s.baseUrl, '--admin-token', 'wrong-token-wrong-token'], {});
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toBe(await answered('GET', '/admin/api/apps', 'wrong-token-wrong-token'));
    // 410 is one of the usual ones: a second line says what to do.
    expect(wrongToken.stderr).toContain('(410)');
    expect(wrongToken.stderr.trim().split('\n')).toHaveLength(2);
    expect(wrongToken.stderr).not.toContain('{');
  });

  it('finds the server of its data folder on whatever port it listens, from the address the server left there', async () => {
    // s listens on a port of its own, not 8080; its data folder holds vop.address.
    expect(new URL(s.baseUrl).port).not.toBe('8080');
    const found = await runCli(['apps', 'list', '--data-dir', s.dataDir, '--admin-token', ADMIN_TOKEN], {});
    expect(found.code, found.stderr).toBe(0);
    expect(json(found).apps).toBeInstanceOf(Array);
  });

  it('says what is wrong when it has no token or cannot reach the server', async () => {
    const empty = tempDataDir();
    const noToken = await runCli(['apps', 'list', '--server', s.baseUrl, '--data-dir', empty], {});
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toBe(`${noAdminToken(path.join(empty, 'admin-token'))}\n`);
    // A port nothing listens on: the connection is refused.
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const down = await runCli(['apps', 'list', '--server', nowhere, '--admin-token', ADMIN_TOKEN], {});
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`${cannotReach(nowhere, 'ECONNREFUSED')}\n`);
  });

  it('says on standard error, when run by a talkative npm into a pipe, how to leave npm\'s lines out of the JSON', async () => {
    const npm = (args: string[]) =>
      new Promise<{ stdout: string; stderr: string; code: number | null }>((resolve) => {
        // npm at its default log level, whatever ran the tests: `npm run -s test:quick` passes
        // npm_config_loglevel=silent down to every npm started under it.
        const env = { ...process.env, npm_config_loglevel: 'notice' };
        const child = spawn('npm', ['run', ...args, 'vop', '--', 'apps', 'list', ...base], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        child.on('close', (code) => resolve({ stdout, stderr, code }));
      });
    const talkative = await npm([]);
    expect(talkative.code, talkative.stderr).toBe(0);
    expect(() => JSON.parse(talkative.stdout)).toThrow();
    expect(talkative.stderr).toContain(npmBannerHint({ npm_lifecycle_event: 'vop' }, false)!);
    // Not a word when npm is silent (npm run -s) or the JSON goes to a terminal.
    expect(npmBannerHint({ npm_lifecycle_event: 'vop', npm_config_loglevel: 'silent' }, false)).toBeUndefined();
    expect(npmBannerHint({ npm_lifecycle_event: 'vop' }, true)).toBeUndefined();
  }, 60_000);

  it('runs as a command (scripts/vop.mjs, which npm run vop runs, and the bundle it runs) with its exit code', async () => {
    const ok = await runToExit(['apps', 'create', '--name', 'as a process', ...base], {}, 'scripts/vop.mjs');
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.output)).toMatchObject({ name: 'as a process' });
    const bad = await runToExit(['apps', 'get', 'nope', ...base], {}, CLI_ENTRY);
    expect(bad.code).toBe(1);
  });
});
