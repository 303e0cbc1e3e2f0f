/**
 * The start configuration's layers without a server: a configuration file and the `VOP_*`
 * variables set every documented option by its path, a flag wins over a variable over the file,
 * an unknown key or variable stops the start naming the nearest known one, a bad value names
 * where it was given, and `vop config check` / `config print` say the same from the CLI (secrets
 * masked). The start itself, with a file only, is config-start.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../server/cli.js';
import { resolveOptions } from '../../server/config.js';
import { envNameOf, optionCatalogue } from '../../server/configuration/optionCatalogue.js';
import { parseStartArgs, withSavedSettings } from '../../server/startArgs.js';
import { code, readDoc, tables } from '../docTables.js';
import { ROOT, tempDataDir } from '../helpers/server.js';

/** A configuration file holding `tree`, in a fresh folder. */
function configFile(tree: unknown): string {
  const file = path.join(tempDataDir('vop-config-'), 'vop.json');
  fs.writeFileSync(file, typeof tree === 'string' ? tree : JSON.stringify(tree));
  return file;
}

describe('a configuration file (--config, VOP_CONFIG)', () => {
  it('sets options under their documented paths, which reach the server’s options', () => {
    const file = configFile({
      ingest: { pull: { allow: ['10.0.0.0/8'], connectTimeoutMs: 5000 } },
      callbacks: { retry: { maxRetries: 3 } },
      housekeeping: { stalledUploadMinutes: 30 },
      auth: { perAddress: { maxFailures: 5 } },
      port: 9123,
    });
    for (const c of [parseStartArgs(['--config', file], {}), parseStartArgs([], { VOP_CONFIG: file })]) {
      expect(c.port).toBe(9123);
      expect(c.configFile).toBe(file);
      const o = resolveOptions(c.options);
      expect(o.ingest.pull.allow).toEqual(['10.0.0.0/8']);
      expect(o.ingest.pull.connectTimeoutMs).toBe(5000);
      // The rest of a group keeps its defaults.
      expect(o.callbacks.retry).toMatchObject({ maxRetries: 3, baseDelayMs: 10_000 });
      expect(o.housekeeping.stalledUploadMinutes).toBe(30);
      expect(o.auth.perAddress).toEqual({ maxFailures: 5, windowMs: 60_000 });
      expect(c.sources!['ingest.pull.connectTimeoutMs']).toEqual({ kind: 'file', name: file });
    }
  });

  it('stops at an unknown key, naming it and the nearest known one', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ ingest: { pull: { alow: [] } } }, /Unknown option ingest\.pull\.alow .*did you mean ingest\.pull\.allow\?/],
      [{ housekeeping: { stalledUploadMinute: 3 } }, /Unknown option housekeeping\.stalledUploadMinute .*did you mean housekeeping\.stalledUploadMinutes\?/],
      // The group left out: the option that ends so.
      [{ pull: { allow: ['10.0.0.0/8'] } }, /Unknown option pull .*did you mean ingest\.pull\?/],
    ];
    for (const [tree, message] of cases) {
      const file = configFile(tree);
      expect(() => parseStartArgs(['--config', file], {})).toThrow(message);
      expect(() => parseStartArgs(['--config', file], {})).toThrow(file);
    }
  });

  it('stops at a value of the wrong type, and at a file that is not JSON, naming the file', () => {
    const file = configFile({ ingest: { pull: { maxBytes: 'lots' } } });
    expect(() => parseStartArgs(['--config', file], {})).toThrow(`Option ingest.pull.maxBytes (file ${file}) must be a number, not "lots".`);
    const broken = configFile('{"port": 80,');
    expect(() => parseStartArgs(['--config', broken], {})).toThrow(`The configuration file ${broken} is not JSON`);
    expect(() => parseStartArgs(['--config', '/nonexistent/vop.json'], {})).toThrow('cannot be read');
  });
});

describe('every option as a VOP_* variable', () => {
  it('names each variable after its option’s path, every name distinct', () => {
    const { options, byEnv } = optionCatalogue();
    expect(envNameOf('ingest.pull.connectTimeoutMs')).toBe('VOP_INGEST_PULL_CONNECT_TIMEOUT_MS');
    expect(envNameOf('dataDir')).toBe('VOP_DATA_DIR');
    const names = [...options.values()].map((o) => o.env);
    expect(new Set(names).size).toBe(names.length);
    for (const o of options.values()) expect(byEnv.get(o.env)).toBe(o.path);
    // The documented options are among them (docs/uploads.md, console.md, interface.md).
    for (const p of ['ingest.pull.connectTimeoutMs', 'callbacks.retry.maxRetries', 'housekeeping.stalledUploadMinutes', 'processing.ladder.rungs', 'auth.perApp.windowMs']) {
      expect(options.has(p), p).toBe(true);
    }
  });

  it("gives every option of the docs' option tables a place in the file and a variable (an option, or a group set as JSON)", () => {
    const { options, groups, byEnv } = optionCatalogue();
    const pages = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
    const documented = pages.flatMap((page) =>
      tables(readDoc(page))
        .filter((t) => t.marker === 'options')
        .flatMap((t) => t.rows.flatMap((r) => code(r.option!).split(',').map((n) => n.trim()))),
    );
    expect(documented.length).toBeGreaterThan(30);
    for (const p of documented) {
      expect(options.has(p) || groups.has(p), `${p}: no place in the configuration`).toBe(true);
      expect(byEnv.get(envNameOf(p)), `${p}: no variable`).toBe(p);
    }
  });

  it('parses each by its option’s type: numbers, booleans, comma lists, JSON', () => {
    const c = parseStartArgs([], {
      VOP_INGEST_PULL_CONNECT_TIMEOUT_MS: '2500',
      VOP_PROCESSING_HLS: 'false',
      VOP_INGEST_PULL_DENY: '10.1.0.0/16, 10.2.0.0/16',
      VOP_PROCESSING_LADDER_RUNGS: '[{"label":"360p","shortSide":360,"videoBitrateKbps":800}]',
      // A group takes a JSON object.
      VOP_CALLBACKS_RETRY: '{"maxRetries": 2}',
    });
    const o = resolveOptions(c.options);
    expect(o.ingest.pull.connectTimeoutMs).toBe(2500);
    expect(o.processing.hls).toBe(false);
    expect(o.ingest.pull.deny).toEqual(['10.1.0.0/16', '10.2.0.0/16']);
    expect(o.processing.ladder.rungs.map((r) => r.label)).toEqual(['360p']);
    expect(o.callbacks.retry.maxRetries).toBe(2);
    expect(c.sources!['callbacks.retry.maxRetries']).toEqual({ kind: 'env', name: 'VOP_CALLBACKS_RETRY' });
  });

  it('stops at a variable that looks like an option and is none, naming the nearest; leaves other VOP_ variables alone', () => {
    expect(() => parseStartArgs([], { VOP_INGEST_PULL_ALOW: '10.0.0.0/8' })).toThrow(/Unknown variable VOP_INGEST_PULL_ALOW.*did you mean VOP_INGEST_PULL_ALLOW\?/);
    expect(() => parseStartArgs([], { VOP_HOUSEKEEPING_STALLED_MINUTES: '5' })).toThrow(/did you mean VOP_HOUSEKEEPING_STALLED_UPLOAD_MINUTES\?/);
    expect(() => parseStartArgs([], { VOP_ADMN_REMOTE: '1' })).toThrow(/did you mean VOP_ADMIN_REMOTE\?/);
    expect(() => parseStartArgs([], { VOP_SERVER: 'http://x', VOP_LOG_FORMAT: 'json', VOP_TEST_INGEST: '{}', VOP_APP_ID: 'x' })).not.toThrow();
  });

  it('stops at a value of the wrong type, naming the variable and the option', () => {
    expect(() => parseStartArgs([], { VOP_INGEST_PULL_MAX_BYTES: 'lots' })).toThrow('VOP_INGEST_PULL_MAX_BYTES "lots" is not a number (option ingest.pull.maxBytes).');
    expect(() => parseStartArgs([], { VOP_PROCESSING_HLS: 'maybe' })).toThrow(/VOP_PROCESSING_HLS "maybe" is not a boolean/);
  });
});

describe('precedence: flag, variable, file, console-saved, default', () => {
  it('takes each option from the highest layer that gives it', () => {
    const file = configFile({ ingest: { pull: { allow: ['10.0.0.0/8'], deny: ['10.9.0.0/16'], maxBytes: 1000 } }, publicUrl: 'http://file.lan', port: 9001 });
    const env = { VOP_PULL_ALLOW: '172.16.0.0/12', VOP_PUBLIC_URL: 'http://env.lan' };
    const byFlag = parseStartArgs(['--config', file, '--pull-allow', '127.0.0.0/8'], env);
    expect(byFlag.options.ingest?.pull).toEqual({ allow: ['127.0.0.0/8'], deny: ['10.9.0.0/16'], maxBytes: 1000 });
    expect(byFlag.options.publicUrl).toBe('http://env.lan');
    expect(byFlag.sources).toMatchObject({
      'ingest.pull.allow': { kind: 'flag', name: '--pull-allow' },
      publicUrl: { kind: 'env', name: 'VOP_PUBLIC_URL' },
      'ingest.pull.deny': { kind: 'file', name: file },
    });
    const byEnv = parseStartArgs(['--config', file], env);
    expect(byEnv.options.ingest?.pull?.allow).toEqual(['172.16.0.0/12']);
    const saved = { options: { ingest: { pull: { allow: ['192.168.0.0/16'], maxBytes: 5 } }, housekeeping: { expireUnuploadedDays: 3 } }, port: 9002 };
    const merged = withSavedSettings(parseStartArgs(['--config', file], {}), saved, '/d/settings.json');
    // The file wins over the console's saved settings; what only the console gave applies.
    expect(merged.options.ingest?.pull).toEqual({ allow: ['10.0.0.0/8'], deny: ['10.9.0.0/16'], maxBytes: 1000 });
    expect(merged.port).toBe(9001);
    expect(merged.options.housekeeping).toEqual({ expireUnuploadedDays: 3 });
    expect(merged.sources!['housekeeping.expireUnuploadedDays']).toEqual({ kind: 'console', name: '/d/settings.json' });
  });
});

describe('npm run vop -- config check / config print', () => {
  it('check says ok for a good file and lists the problems of a bad one', async () => {
    expect(await runCli(['config', 'check', configFile({ ingest: { pull: { allow: ['10.0.0.0/8'] } } })], {})).toEqual({ code: 0, stdout: 'ok\n', stderr: '' });
    const bad = configFile({ ingest: { pull: { alow: [] } }, housekeeping: { stalledUploadMinutes: 'ten' } });
    const r = await runCli(['config', 'check', bad], {});
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('did you mean ingest.pull.allow?');
    expect(r.stderr).toContain('Option housekeeping.stalledUploadMinutes');
    // A value the option's own check refuses names where it was given.
    const range = configFile({ housekeeping: { stalledUploadMinutes: -1 } });
    const r2 = await runCli(['config', 'check', range], {});
    expect(r2.code).toBe(1);
    expect(r2.stderr).toContain(`housekeeping.stalledUploadMinutes from file ${range}`);
  });

  it('print shows every option’s value and source, secrets masked', async () => {
    const dataDir = tempDataDir();
    fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ expireUnuploadedDays: 4 }));
    const file = configFile({ dataDir, housekeeping: { stalledUploadMinutes: 30 }, databaseUrl: 'postgres://vop:db-password-77@db.lan/vop', sharedMedia: true });
    const env = { VOP_ADMIN_TOKEN: 'admin-token-secret-0123456789', VOP_S3_ENDPOINT: 'http://s3.lan:9000', VOP_S3_BUCKET: 'media', VOP_S3_ACCESS_KEY_ID: 'ACCESS-KEY-ID-55', VOP_S3_SECRET_ACCESS_KEY: 'secret-access-key-66' };
    const r = await runCli(['config', 'print', '--config', file, '--pull-allow', '127.0.0.0/8'], env);
    expect(r.code).toBe(0);
    const line = (p: string) => r.stdout.split('\n').find((l) => l.startsWith(`${p} `))?.replace(/\s+/g, ' ');
    expect(line('housekeeping.stalledUploadMinutes')).toBe(`housekeeping.stalledUploadMinutes 30 file ${file}`);
    expect(line('ingest.pull.allow')).toBe('ingest.pull.allow ["127.0.0.0/8"] flag --pull-allow');
    expect(line('callbacks.timeoutMs')).toBe('callbacks.timeoutMs 10000 default');
    expect(line('adminToken')).toBe('adminToken **** env VOP_ADMIN_TOKEN');
    expect(line('databaseUrl')).toBe(`databaseUrl postgres://vop:****@db.lan/vop file ${file}`);
    expect(line('objectStorage.secretAccessKey')).toBe('objectStorage.secretAccessKey **** env VOP_S3_SECRET_ACCESS_KEY');
    for (const secret of ['admin-token-secret', 'db-password-77', 'ACCESS-KEY-ID-55', 'secret-access-key-66']) expect(r.stdout).not.toContain(secret);
    // Embedded: the console's saved settings are read from the data folder.
    const local = await runCli(['config', 'print', '--data-dir', dataDir], {});
    expect(local.stdout.split('\n').find((l) => l.startsWith('housekeeping.expireUnuploadedDays '))?.replace(/\s+/g, ' ')).toBe(
      `housekeeping.expireUnuploadedDays 4 console ${path.join(dataDir, 'settings.json')}`,
    );
  });
});
