import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { IPC } from '../main/preloadApi.js';
import {
  DEFAULT_SHELL_SETTINGS,
  bindHost,
  consoleUrl,
  isConsoleUrl,
  isExternalLinkAllowed,
  normalizeShellSettings,
  resolveDataDir,
} from '../main/shellSettings.js';

// No Electron binary can be had on these machines: main/ is type-checked against Electron's own
// type definitions and its logic tested as plain functions.
describe('desktop shell logic', () => {
  it('keeps good stored settings and drops malformed ones', () => {
    expect(normalizeShellSettings({})).toEqual(DEFAULT_SHELL_SETTINGS);
    expect(normalizeShellSettings({ port: 9000, serveLan: false, startAtLogin: true, dataDir: '/srv/vop' })).toMatchObject({
      port: 9000,
      serveLan: false,
      startAtLogin: true,
      dataDir: '/srv/vop',
    });
    expect(normalizeShellSettings({ port: 70000, serveLan: 'yes', dataDir: 5 })).toEqual(DEFAULT_SHELL_SETTINGS);
  });

  it('binds the LAN or loopback only, and finds the data folder', () => {
    expect(bindHost({ serveLan: true })).toBe('0.0.0.0');
    expect(bindHost({ serveLan: false })).toBe('127.0.0.1');
    expect(resolveDataDir({ dataDir: '' }, '/home/u/.config/vop', path.join)).toBe('/home/u/.config/vop/data');
    expect(resolveDataDir({ dataDir: '/data/vop' }, '/home/u/.config/vop', path.join)).toBe('/data/vop');
  });

  it('keeps navigation in the console and sends only web links outside', () => {
    expect(consoleUrl(8080)).toBe('http://127.0.0.1:8080/console');
    expect(isConsoleUrl('http://127.0.0.1:8080/console/videos', 8080)).toBe(true);
    expect(isConsoleUrl('http://127.0.0.1:8080/Api/Video', 8080)).toBe(false);
    expect(isConsoleUrl('http://evil.example/console', 8080)).toBe(false);
    expect(isExternalLinkAllowed('https://example.com/docs')).toBe(true);
    expect(isExternalLinkAllowed('file:///etc/passwd')).toBe(false);
    expect(isExternalLinkAllowed('javascript:alert(1)')).toBe(false);
  });

  it('names one IPC channel per preload action, all distinct', () => {
    const channels = Object.values(IPC);
    expect(new Set(channels).size).toBe(channels.length);
    expect(channels.every((c) => c.startsWith('vop:'))).toBe(true);
  });

  it('type-checks the whole project: server, main/ against Electron\'s types, the console and the widget scripts', async () => {
    const root = path.resolve(import.meta.dirname, '..');
    const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
    for (const project of ['tsconfig.json', 'renderer', 'widget']) {
      const result = await promisify(execFile)(process.execPath, [tsc, '-p', project, '--noEmit'], { cwd: root }).then(
        (r) => ({ code: 0, out: r.stdout }),
        (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
      );
      expect(result.out, `tsc -p ${project}`).toBe('');
      expect(result.code, `tsc -p ${project}`).toBe(0);
    }
  }, 240_000);
});
