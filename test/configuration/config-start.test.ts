/**
 * `npm start` (server/main.ts, a real process) with a configuration file: a setting given only
 * in the file applies (seen over HTTP), an unknown key stops the start naming the nearest known
 * one, and a console login outlives a restart of the embedded mode (its sessions are in the
 * embedded database, by hash).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CookieClient } from '../helpers/console.js';
import { AdminClient } from '../helpers/client.js';
import { ADMIN_TOKEN, killStrayProcesses, runToExit, startServerProcess, tempDataDir } from '../helpers/server.js';

afterEach(() => killStrayProcesses());

const ENV = { VOP_ADMIN_TOKEN: ADMIN_TOKEN };

function writeConfig(tree: unknown): string {
  const file = path.join(tempDataDir('vop-config-'), 'vop.json');
  fs.writeFileSync(file, JSON.stringify(tree));
  return file;
}

describe('npm start --config FILE', () => {
  it('applies settings given only in the file', async () => {
    const dataDir = tempDataDir();
    const file = writeConfig({ dataDir, host: '127.0.0.1', port: 0, ingest: { pull: { allow: ['10.0.0.0/8'] } }, housekeeping: { stalledUploadMinutes: 33 } });
    const p = await startServerProcess(['--config', file], ENV);
    try {
      const admin = new AdminClient(p.baseUrl, ADMIN_TOKEN);
      const settings = await admin.request('GET', '/settings');
      expect(settings.status).toBe(200);
      expect(settings.body.running.pullAllow).toEqual(['10.0.0.0/8']);
      expect(settings.body.dataDir).toBe(dataDir);
      const housekeeping = await admin.request('GET', '/housekeeping');
      expect(housekeeping.body.stalledUploads.minutes).toBe(33);
    } finally {
      await p.stop();
    }
  });

  it('does not start with an unknown key, naming it and the nearest known key', async () => {
    const file = writeConfig({ dataDir: tempDataDir(), ingest: { pull: { alow: ['10.0.0.0/8'] } } });
    const r = await runToExit(['--config', file, '--port', '0', '--host', '127.0.0.1'], ENV);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain(`Unknown option ingest.pull.alow (file ${file}): did you mean ingest.pull.allow?`);
    expect(r.output).not.toContain('vop listening');
  });

  it('does not start with a bad value, naming the option and where it was given', async () => {
    const file = writeConfig({ dataDir: tempDataDir(), housekeeping: { stalledUploadMinutes: 0 } });
    const r = await runToExit(['--config', file, '--port', '0', '--host', '127.0.0.1'], ENV);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain(`housekeeping.stalledUploadMinutes from file ${file}`);
  });
});

describe('a restart of the embedded mode', () => {
  it('keeps the console logged in', async () => {
    const dataDir = tempDataDir();
    const args = ['--data-dir', dataDir, '--host', '127.0.0.1'];
    const first = await startServerProcess([...args, '--port', '0'], ENV);
    const port = new URL(first.baseUrl).port;
    const client = new CookieClient(first.baseUrl);
    let stopped = false;
    try {
      expect((await client.login(ADMIN_TOKEN)).status).toBe(200);
      expect((await client.raw('GET', '/admin/api/apps')).status).toBe(200);
      expect(await first.stop()).toBe(0);
      stopped = true;
      // The session id itself is nowhere in the data folder: only its hash is kept.
      const id = decodeURIComponent(client.cookie.split('=')[1]!);
      for (const f of fs.readdirSync(dataDir, { recursive: true, encoding: 'utf8' })) {
        const full = path.join(dataDir, f);
        if (fs.statSync(full).isFile()) expect(fs.readFileSync(full).includes(id), f).toBe(false);
      }
    } finally {
      if (!stopped) await first.stop();
    }
    const second = await startServerProcess([...args, '--port', port], ENV);
    try {
      const session = await client.raw('GET', '/admin/api/session');
      expect(await session.json()).toMatchObject({ loggedIn: true });
      expect((await client.raw('GET', '/admin/api/apps')).status).toBe(200);
    } finally {
      await second.stop();
    }
  });
});
