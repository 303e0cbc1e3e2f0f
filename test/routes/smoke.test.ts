import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, tempDataDir, type TestServer } from '../helpers/server.js';

describe('smoke', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(() => s.close());

  it('registers a video and reads it back', async () => {
    const c = await s.newApp();
    const id = await c.register({ VideoTitle: 'Hello', CreateUser: 'alice' });
    const r = await c.get('/Api/Video/Get', { Id: id });
    expect(r.status).toBe(200);
    expect(r.contentType).toBe('application/json; charset=utf-8');
    expect(r.body.AuthMsg).toEqual({ ResultCode: '1', ResultMessage: 'OK' });
    expect(r.body.VideoModel).toMatchObject({ Id: id, VideoTitle: 'Hello', Status: 8, CreateUser: 'alice', Duration: 0 });
    expect(r.body.VideoModel.CreateDate).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
  });
});

describe('the test run', () => {
  it("keeps its temporary files in its own folder (test/globalSetup.ts), its servers' too", async () => {
    const root = os.tmpdir();
    expect(path.basename(root)).toMatch(/^vop-test-run-/);
    expect(tempDataDir().startsWith(`${root}${path.sep}`)).toBe(true);
    // A child process (a server, ffmpeg, Chromium) finds the same folder.
    const { stdout } = await promisify(execFile)(process.execPath, ['-p', 'require("node:os").tmpdir()']);
    expect(stdout.trim()).toBe(root);
  });
});
