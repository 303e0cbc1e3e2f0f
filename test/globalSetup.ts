/**
 * What a test run shares, set up once in vitest's main process before the first test file and
 * taken down after the last:
 *
 * - one temporary folder, removed at the end. The tests' data dirs, generated clips and the files
 *   of the servers and browsers they start all go under os.tmpdir(), which reads TMPDIR, as the
 *   child processes do: a run used to leave some 100 MB behind in /tmp;
 * - the clip cache (test/helpers/clips.ts), a folder in it named by VOP_TEST_CLIP_CACHE;
 * - the service broker (test/helpers/serviceBroker.ts), which starts PostgreSQL, Ceph and
 *   Chromium once per run, when a file first asks for one (a whole run asks for PostgreSQL and
 *   Ceph at once, below), and stops them here. It runs in a child process
 *   (serviceBrokerProcess.ts): starting a service blocks, and this process serves the workers;
 * - the server bundle (`npm start`'s dist/server/main.js), built if stale: the servers the tests
 *   start as processes run it (test/helpers/server.ts SERVER_ENTRY).
 *
 * The workers inherit the environment as it is after this setup; the broker's address goes to
 * them through `provide`.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildServer, serverBundleIsStale } from '../scripts/build-server.mjs';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (serverBundleIsStale()) await buildServer();
  const before = { TMPDIR: process.env.TMPDIR, VOP_TEST_CLIP_CACHE: process.env.VOP_TEST_CLIP_CACHE };
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-test-run-'));
  // As open as /tmp itself (sticky): one test runs a script as another user.
  fs.chmodSync(root, 0o1777);
  process.env.TMPDIR = root;
  const clipCache = path.join(root, 'clip-cache');
  fs.mkdirSync(clipCache);
  process.env.VOP_TEST_CLIP_CACHE = clipCache;

  // Forked after TMPDIR is set: the services' files go under the run's folder too.
  const broker = fork(path.join(import.meta.dirname, 'helpers', 'serviceBrokerProcess.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, VOP_TEST_RUN_ROOT: root },
    stdio: 'inherit',
  });
  const exited = new Promise<void>((resolve) => broker.once('exit', () => resolve()));
  const address = await new Promise<string>((resolve, reject) => {
    broker.once('message', (m) => resolve((m as { address: string }).address));
    broker.once('exit', (code) => reject(new Error(`the service broker exited (${code}) before it started`)));
  });
  project.provide('vopServiceBroker', address);
  // A whole run (`npm test`: no file named, the full tier in) needs PostgreSQL and Ceph: started
  // now, beside the first files, rather than inside whichever file asks first (Ceph takes 15 to
  // 20 s to start, which that file's time then carried). A start that fails is reported to the
  // files that ask. A run of some files starts only what they ask for (any word on the command
  // line but `run` counts as a file named, an option's value too: the services then start late,
  // as before, not wrongly).
  const named = process.argv.slice(2).some((a) => a !== 'run' && !a.startsWith('-'));
  if (!named && project.vitest.projects.some((p) => p.name === 'full')) {
    for (const service of ['postgres', 'ceph']) void fetch(`${address}/${service}`, { method: 'POST' }).catch(() => undefined);
  }

  // An interrupted run (vitest exits on SIGINT and SIGTERM) skips the teardown below; the broker
  // sees its channel close, kills what it started and removes the run's folder.
  const onExit = () => {
    if (broker.connected) broker.disconnect();
    else fs.rmSync(root, { recursive: true, force: true });
  };
  process.on('exit', onExit);

  return async () => {
    process.off('exit', onExit);
    // The services first: PostgreSQL's pg_ctl stop needs its folder, which is under `root`.
    broker.send('close');
    await exited;
    for (const [key, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    fs.rmSync(root, { recursive: true, force: true });
  };
}
