#!/usr/bin/env node
// `npm run build:desktop`: everything the desktop package needs, into dist/ (electron-builder.yml
// then packs dist/main, renderer/dist, widget/ and the production node_modules).
//
// - the console, built with Vite (renderer/dist);
// - main/main.ts with the server, bundled by esbuild into one ES module (dist/main/main.js).
//   Our own code is bundled; packages stay in node_modules (sql.js finds its wasm file there,
//   the ffmpeg packages their binaries). The server finds widget/ and renderer/dist two folders
//   up from its file, which holds for dist/main/main.js as for server/routes/*.ts;
// - the preload as CommonJS (dist/main/preload.cjs): sandboxed preloads cannot be ES modules;
// - the tray icon.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { buildConsole } from './build-console.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const OUT = path.join(ROOT, 'dist/main');

/** Bundles the main process and its preload; `withConsole` also builds the console. */
export async function buildDesktop({ withConsole = true, quiet = false } = {}) {
  if (withConsole) await buildConsole({ quiet });
  fs.rmSync(OUT, { recursive: true, force: true });
  const common = { bundle: true, platform: 'node', target: 'node20', sourcemap: true, logLevel: quiet ? 'warning' : 'info', absWorkingDir: ROOT };
  await build({
    ...common,
    entryPoints: ['main/main.ts'],
    outfile: path.join(OUT, 'main.js'),
    format: 'esm',
    packages: 'external',
  });
  await build({
    ...common,
    entryPoints: ['main/preload.ts'],
    outfile: path.join(OUT, 'preload.cjs'),
    format: 'cjs',
    external: ['electron'],
  });
  fs.copyFileSync(path.join(ROOT, 'main/assets/icon.png'), path.join(OUT, 'icon.png'));
  return OUT;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  buildDesktop().then(
    (out) => console.log(`desktop build ready in ${path.relative(ROOT, out)}; package it with: npx electron-builder`),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
