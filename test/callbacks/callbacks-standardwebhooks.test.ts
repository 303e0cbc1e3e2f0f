/**
 * docs/interface.md's recipe for verifying the status callback with the `standardwebhooks`
 * package works as written: the block between its markers is run as it stands, a receiver on a
 * port of its own with the real package, and vop's real callbacks to it are delivered (the
 * recipe verified them), while a signed callback whose body was altered is refused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCallbackRequest } from '../../server/callbacks/callbackRequest.js';
import { markedBlock, readDoc } from '../docTables.js';
import { SpecClient } from '../helpers/client.js';
import { freePort } from '../helpers/ports.js';
import { ROOT, startServer, type TestServer } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';

let s: TestServer;
let receiver: ChildProcess;
let output = '';
let dir: string;
let url: string;
let app: { appId: string; appSecret: string };

beforeAll(async () => {
  const recipe = markedBlock(readDoc('docs/interface.md'), 'standardwebhooks');
  expect(recipe.info).toBe('js');
  // The recipe as a file of its own, where `import 'standardwebhooks'` finds the real package.
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-recipe-'));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  fs.writeFileSync(path.join(dir, 'receiver.mjs'), recipe.body);
  s = await startServer();
  const port = await freePort();
  url = `http://127.0.0.1:${port}/vop/callback`;
  app = await s.admin.createApp('Recipe site', url);
  receiver = spawn(process.execPath, [path.join(dir, 'receiver.mjs')], {
    cwd: dir,
    env: { ...process.env, VOP_APP_ID: app.appId, VOP_APP_SECRET: app.appSecret, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  receiver.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  receiver.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  // Listening once it answers (404 to anything but its callback path).
  await waitUntil('the recipe to listen', async () => {
    const up = await fetch(url.replace('/vop/callback', '/'), { method: 'GET' }).then((r) => r.status === 404, () => false);
    return up || notYet(`its output: ${output}`);
  }, { timeoutMs: 5_000, pollMs: 50 });
}, 30_000);

afterAll(async () => {
  receiver?.kill();
  await s?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the standardwebhooks recipe of docs/interface.md, run as it stands', () => {
  it('verifies a callback vop sends and answers 2xx, so the delivery counts as delivered', async () => {
    const sent = await s.admin.request('POST', `/apps/${app.appId}/test-callback`);
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ state: 'delivered' });
    expect(sent.body.attempts[0]).toMatchObject({ ok: true, httpStatus: 204 });
    expect(output).toContain('video 00000000-0000-0000-0000-000000000000 is now in status 1');
  });

  it('verifies the status callback of a real video', async () => {
    const id = await new SpecClient(s.baseUrl, app.appId, app.appSecret).register();
    for (const status of [5, 6, 1]) expect(await s.vop.services.lifecycle.move(id, status)).toBe(true);
    await expect.poll(() => output, { timeout: 10_000 }).toContain(`video ${id} is now in status 1`);
  });

  it('refuses a signed callback whose body was altered, and one signed with another secret', async () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const signed = (secret: string) =>
      buildCallbackRequest({ deliveryId: 'recipe-check', appId: app.appId, secret, videoId: '0b5e7a0e-3c1f-4f4e-9d7a-2b6c8e1f5a90', videoStatus: 1, test: false, timestamp });
    const post = (req: { headers: Record<string, string>; body: string }, body = req.body) =>
      fetch(url, { method: 'POST', headers: req.headers, body }).then((r) => r.status);
    const good = signed(app.appSecret);
    expect(await post(good)).toBe(204);
    expect(await post(good, good.body.replace('VideoStatus=1', 'VideoStatus=7'))).toBe(401);
    expect(await post(signed(app.appSecret.replace(/^./, (c) => (c === '0' ? '1' : '0'))))).toBe(401);
  });
});
