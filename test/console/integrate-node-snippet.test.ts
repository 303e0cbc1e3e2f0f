/**
 * The Node snippet of the console's Integrate panel runs as it stands: `node vop.mjs` registers a
 * video and prints its id, and without VOP_APP_SECRET it says so and exits 1 instead of hashing
 * "undefined" into a token the server refuses (104). Run with the real `node` against a real
 * server; console-integrate.test.ts covers the panel that shows it, in Chromium.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrationSnippets } from '../../renderer/src/integrationSnippets.js';
import type { SpecClient } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let app: SpecClient;
let dir: string;
let script: string;

beforeAll(async () => {
  s = await startServer();
  app = await s.newApp('Snippet site');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-node-snippet-'));
  script = path.join(dir, 'vop.mjs');
  const base = `${s.baseUrl}/widget/`;
  const { node } = integrationSnippets({ appId: app.appId, appName: 'Snippet site', apiBase: `${s.baseUrl}/Api/Video`, windowScript: `${base}initUploadWidget.js`, overlayScript: `${base}initUploadABoxWidget.js` });
  fs.writeFileSync(script, node);
});
afterAll(async () => {
  await s?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** `node vop.mjs …args` with `secret` as VOP_APP_SECRET (absent: unset). */
function runScript(secret: string | undefined, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env.VOP_APP_SECRET;
  if (secret !== undefined) env.VOP_APP_SECRET = secret;
  return new Promise((resolve) => {
    execFile(process.execPath, [script, ...args], { env, cwd: dir, timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('the Integrate panel’s Node snippet, run as it stands', () => {
  it('registers a video with the secret from VOP_APP_SECRET and prints its VideoId', async () => {
    const run = await runScript(app.secret, ['From the snippet', 'maria']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const videoId = run.stdout.trim();
    expect(videoId).toMatch(/^[0-9a-f-]{36}$/);
    const video = (await s.admin.request('GET', `/videos/${videoId}`)).body.video;
    expect(video).toMatchObject({ appId: app.appId, title: 'From the snippet', createUser: 'maria', status: 8 });
  });

  it('says that VOP_APP_SECRET is missing and exits 1, registering nothing', async () => {
    const before = (await s.admin.request('GET', '/videos')).body;
    const run = await runScript(undefined, ['Never registered']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/VOP_APP_SECRET is not set/);
    expect((await s.admin.request('GET', '/videos')).body).toEqual(before);
  });

  it('reports the result code of a wrong secret and exits 1', async () => {
    const run = await runScript(`${app.secret}x`, ['Refused']);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe('vop: 104 App SecretKey Error');
  });
});
