/**
 * One start-up path (issue 10, item 5): server/bootstrap.ts applies the settings saved from the
 * console to `npm start` and to the desktop shell alike. The shell (main/main.ts) runs here for
 * real against a stand-in for Electron, whose binary cannot be had on these machines.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { bootstrapServer } from '../../server/bootstrap.js';
import { SETTINGS_FILE } from '../../server/settings/consoleSettings.js';
import { parseStartArgs } from '../../server/startArgs.js';
import { IPC } from '../../main/preloadApi.js';
import { DEFAULT_SHELL_SETTINGS, consoleUrl, type ShellSettings } from '../../main/shellSettings.js';
import { tempDataDir } from '../helpers/server.js';
import { freePort } from '../helpers/ports.js';
import { waitUntil } from '../helpers/wait.js';

const TOKEN = 'bootstrap-admin-token-0123456789';

/** Settings as the console's Settings page saves them. */
const SAVED = {
  port: 1, // a port no test could listen on: where it is used, the test would fail to start
  publicUrl: 'http://videos.lan:9000',
  multipartMaxBytes: 1234567,
  pullMaxBytes: 7654321,
  transcodeConcurrency: 5, // not the default (half the cores, at least 3)
  downloadConcurrency: 5,
  audioBitrateKbps: 96,
  ladderRungs: [{ label: '360p', shortSide: 360, videoBitrateKbps: 700 }],
};

function dataDirWithSavedSettings(): string {
  const dir = tempDataDir('vop-bootstrap-');
  fs.writeFileSync(path.join(dir, SETTINGS_FILE), JSON.stringify(SAVED, null, 2));
  return dir;
}


describe('bootstrapServer (npm start)', () => {
  it('builds a server with the saved settings under the flags given', async () => {
    const dir = dataDirWithSavedSettings();
    const { vop, config } = await bootstrapServer(parseStartArgs(['--data-dir', dir, '--admin-token', TOKEN, '--public-url', 'http://flag.lan'], {}));
    try {
      expect(config.port).toBe(1); // the saved port: no --port or VOP_PORT was given
      expect(vop.options.publicUrl).toBe('http://flag.lan'); // the flag wins
      expect(vop.options.ingest.multipartMaxBytes).toBe(SAVED.multipartMaxBytes);
      expect(vop.options.ingest.pull).toMatchObject({ maxBytes: SAVED.pullMaxBytes, concurrency: SAVED.downloadConcurrency });
      expect(vop.options.processing.concurrency).toBe(SAVED.transcodeConcurrency);
      expect(vop.options.processing.ladder).toMatchObject({ rungs: SAVED.ladderRungs, audioBitrateKbps: SAVED.audioBitrateKbps });
    } finally {
      await vop.close(500);
    }
    const byFlag = await bootstrapServer(parseStartArgs(['--data-dir', dir, '--admin-token', TOKEN], { VOP_PORT: '0' }));
    try {
      expect(byFlag.config.port).toBe(0);
      expect(byFlag.vop.options.publicUrl).toBe(SAVED.publicUrl);
    } finally {
      await byFlag.vop.close(500);
    }
  });

  it('refuses a settings file that is not a JSON object, before opening the data folder', async () => {
    const dir = tempDataDir('vop-bootstrap-bad-');
    fs.writeFileSync(path.join(dir, SETTINGS_FILE), '[1, 2]');
    await expect(bootstrapServer(parseStartArgs(['--data-dir', dir], {}))).rejects.toThrow('is not a JSON object');
    expect(fs.existsSync(path.join(dir, 'vop.lock'))).toBe(false);
  });
});

// A stand-in for what main/main.ts uses of Electron and electron-store.
const fake = vi.hoisted(() => {
  const handlers = new Map<string, (...args: unknown[]) => unknown>();
  const ipc = new Map<string, (...args: unknown[]) => unknown>();
  let exited: (code: number) => void = () => {};
  const state = {
    shellSettings: {} as Record<string, unknown>,
    handlers,
    ipc,
    loaded: [] as string[],
    exit: new Promise<number>((resolve) => (exited = resolve)),
  };
  class FakeWindow {
    webContents = { setWindowOpenHandler() {}, on() {} };
    constructor() {}
    loadURL(url: string) {
      state.loaded.push(url);
      return Promise.resolve();
    }
    show() {}
    focus() {}
    isDestroyed() {
      return false;
    }
  }
  const electron = {
    app: {
      requestSingleInstanceLock: () => true,
      on: (event: string, fn: (...args: unknown[]) => unknown) => handlers.set(event, fn),
      whenReady: () => Promise.resolve(),
      setLoginItemSettings() {},
      getPath: () => '/nonexistent-user-data',
      quit() {},
      exit: (code: number) => exited(code),
    },
    BrowserWindow: FakeWindow,
    Menu: { buildFromTemplate: () => ({}) },
    Tray: class {
      setToolTip() {}
      setContextMenu() {}
    },
    clipboard: { writeText() {} },
    ipcMain: { handle: (channel: string, fn: (...args: unknown[]) => unknown) => ipc.set(channel, fn) },
    nativeImage: { createFromPath: () => ({}) },
    shell: { openExternal: () => Promise.resolve() },
  };
  return { state, electron };
});
vi.mock('electron', () => ({ ...fake.electron, default: fake.electron }));
vi.mock('electron-store', () => ({
  default: class {
    get store() {
      return fake.state.shellSettings;
    }
    set() {}
  },
}));

describe('the desktop shell (main/main.ts) starts through bootstrapServer', () => {
  afterAll(() => fake.state.handlers.get('before-quit')?.({ preventDefault() {} }));

  it('serves with the settings saved from the console, on the port of its own settings', async () => {
    const dir = dataDirWithSavedSettings();
    const port = await freePort();
    const shell: ShellSettings = { ...DEFAULT_SHELL_SETTINGS, port, dataDir: dir, serveLan: false, firstRunDone: true };
    fake.state.shellSettings = { ...shell };
    await import('../../main/main.js');

    // start() ends by showing the console window.
    await waitUntil('the console window to load', () => fake.state.loaded.length > 0 || undefined, { timeoutMs: 30_000 });
    expect(fake.state.loaded).toEqual([consoleUrl(port)]);

    // What the console's Settings page reads: the running values.
    const token = (await fake.state.ipc.get(IPC.adminToken)!()) as string;
    const res = await fetch(`http://127.0.0.1:${port}/admin/api/settings`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const { running, pendingRestart } = (await res.json()) as { running: Record<string, unknown>; pendingRestart: string[] };
    expect(running).toMatchObject({
      port, // the desktop's port setting wins over the saved one, as the Settings page says
      publicUrl: SAVED.publicUrl,
      multipartMaxBytes: SAVED.multipartMaxBytes,
      pullMaxBytes: SAVED.pullMaxBytes,
      transcodeConcurrency: SAVED.transcodeConcurrency,
      downloadConcurrency: SAVED.downloadConcurrency,
      audioBitrateKbps: SAVED.audioBitrateKbps,
      ladderRungs: SAVED.ladderRungs,
    });
    expect(pendingRestart).toEqual(['port']);

    // Quitting closes the server: the lock goes, and the app exits 0.
    fake.state.handlers.get('before-quit')!({ preventDefault() {} });
    expect(await fake.state.exit).toBe(0);
    expect(fs.existsSync(path.join(dir, 'vop.lock'))).toBe(false);
  });
});
