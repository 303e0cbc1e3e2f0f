import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { IPC, remoteErrorMessage } from '../../main/preloadApi.js';
import {
  DEFAULT_SHELL_SETTINGS,
  ShellSettingError,
  apiAddress,
  applySettingsPatch,
  bindHost,
  consoleUrl,
  isConsoleUrl,
  isExternalLinkAllowed,
  normalizeShellSettings,
  resolveDataDir,
} from '../../main/shellSettings.js';
import { typecheck } from '../helpers/typecheck.js';

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

  it('applies a change from the settings page over the current settings, refusing bad values by name', () => {
    const current = { ...DEFAULT_SHELL_SETTINGS, port: 9000, dataDir: '/srv/vop', serveLan: false, firstRunDone: true };
    // Fields left out keep their current value, not the default.
    expect(applySettingsPatch(current, { startAtLogin: true })).toEqual({ ...current, startAtLogin: true });
    expect(applySettingsPatch(current, { port: 9001, dataDir: '' })).toEqual({ ...current, port: 9001, dataDir: '' });
    // An emptied port field arrives as 0 (Number('')): refused, not saved as 8080.
    for (const port of [0, 70000, 80.5, Number.NaN, '9000']) {
      expect(() => applySettingsPatch(current, { port }), `port ${String(port)}`).toThrow(/port/);
    }
    expect(() => applySettingsPatch(current, { dataDir: 5 })).toThrow(/data folder/);
    expect(() => applySettingsPatch(current, { serveLan: 'yes' })).toThrow(/serveLan/);
    expect(() => applySettingsPatch(current, { adminToken: 'x' })).toThrow(/adminToken/);
    expect(() => applySettingsPatch(current, null)).toThrow(ShellSettingError);
    const refused = (() => {
      try {
        applySettingsPatch(current, { port: 0 });
      } catch (err) {
        return err;
      }
    })();
    expect(refused).toBeInstanceOf(ShellSettingError);
    expect((refused as ShellSettingError).field).toBe('port');
    // A refused change leaves the current settings as they were.
    expect(current.port).toBe(9000);
  });

  it('shows a refused change without the wrapping Electron adds to a rejected invoke', () => {
    const wrapped = new Error("Error invoking remote method 'vop:set-settings': ShellSettingError: The port must be a whole number from 1 to 65535.");
    expect(remoteErrorMessage(wrapped)).toBe('The port must be a whole number from 1 to 65535.');
    expect(remoteErrorMessage(new Error('plain'))).toBe('plain');
  });

  it('binds the LAN or loopback only, and finds the data folder', () => {
    expect(bindHost({ serveLan: true })).toBe('0.0.0.0');
    expect(bindHost({ serveLan: false })).toBe('127.0.0.1');
    expect(resolveDataDir({ dataDir: '' }, '/home/u/.config/vop', path.join)).toBe('/home/u/.config/vop/data');
    expect(resolveDataDir({ dataDir: '/data/vop' }, '/home/u/.config/vop', path.join)).toBe('/data/vop');
  });

  it('keeps navigation in the console and sends only web links outside', () => {
    expect(consoleUrl(8080)).toBe('http://127.0.0.1:8080/console');
    expect(apiAddress(8080)).toBe('http://127.0.0.1:8080/Api/Video');
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

  // The widget scripts are type-checked by widget-scripts.test.ts, once per run.
  it('type-checks the server, main/ against Electron\'s types, and the console', async () => {
    for (const project of ['tsconfig.json', 'renderer']) {
      const result = await typecheck(project);
      expect(result.out, `tsc -p ${project}`).toBe('');
      expect(result.code, `tsc -p ${project}`).toBe(0);
    }
  }, 240_000);
});
