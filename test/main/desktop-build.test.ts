/**
 * The desktop package's build step (scripts/build-desktop.mjs), short of electron-builder, which
 * needs an Electron download these machines cannot make. The main process cannot be launched
 * here either, so the server is bundled the same way and run with plain Node instead.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, ROOT, tempDataDir } from '../helpers/server.js';

const bundleDir = path.join(ROOT, 'dist', `bundle-check-${process.pid}`);
afterAll(() => fs.rmSync(bundleDir, { recursive: true, force: true }));

describe('desktop build', () => {
  it('bundles the main process as an ES module and the preload as CommonJS needing only electron', async () => {
    const { buildDesktop, OUT } = await import('../../scripts/build-desktop.mjs');
    await buildDesktop({ withConsole: false, quiet: true });
    const main = fs.readFileSync(path.join(OUT, 'main.js'), 'utf8');
    expect(main).toMatch(/from "electron"/);
    expect(main).toMatch(/from "express"/); // packages stay external, in node_modules
    expect(main).not.toMatch(/from "tsx/);
    const preload = fs.readFileSync(path.join(OUT, 'preload.cjs'), 'utf8');
    expect(preload).not.toMatch(/^\s*import\s/m);
    expect([...preload.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1])).toEqual(['electron']);
    expect(fs.existsSync(path.join(OUT, 'icon.png'))).toBe(true);
  }, 120_000);

  it('packs what the bundle needs and unpacks the ffmpeg binaries from the archive', () => {
    const yml = fs.readFileSync(path.join(ROOT, 'electron-builder.yml'), 'utf8');
    for (const needed of ['dist/main/**', 'renderer/dist/**', 'widget/**', 'main: dist/main/main.js']) expect(yml).toContain(needed);
    for (const pkg of ['ffmpeg-static', '@ffmpeg-installer', '@ffprobe-installer']) expect(yml).toContain(`node_modules/${pkg}/**`);
    for (const target of ['AppImage', 'deb', 'nsis', 'dmg']) expect(yml).toContain(target);
  });

  it('runs the server bundled the same way, finding the widget files and ffmpeg from its new place', async () => {
    await build({
      entryPoints: [path.join(ROOT, 'server/main.ts')],
      outfile: path.join(bundleDir, 'main.js'),
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      packages: 'external',
      logLevel: 'warning',
    });
    const child = spawn(process.execPath, [path.join(bundleDir, 'main.js'), '--port', '0', '--host', '127.0.0.1', '--data-dir', tempDataDir(), '--admin-token', ADMIN_TOKEN], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      child.stderr.on('data', (d) => (out += d));
      const base = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no listening line:\n${out}`)), 60_000);
        child.stdout.on('data', (d) => {
          out += d;
          const m = /vop listening on (http:\/\/\S+)/.exec(out);
          if (m) (clearTimeout(timer), resolve(m[1]!));
        });
        child.on('exit', (code) => reject(new Error(`exited ${code}:\n${out}`)));
      });
      const script = await fetch(`${base}/widget/initUploadWidget.js`);
      expect(script.status).toBe(200);
      expect(await script.text()).toContain('openUpload');
      const health = (await (await fetch(`${base}/healthz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { ffmpeg?: { ffmpeg?: { version?: string } } };
      expect(JSON.stringify(health.ffmpeg)).toMatch(/ffmpeg version/);
    } finally {
      child.kill('SIGTERM');
    }
  }, 120_000);
});
