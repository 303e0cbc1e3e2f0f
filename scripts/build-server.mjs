#!/usr/bin/env node
// Bundles the headless server (server/main.ts) into dist/server/main.js, which `npm start` runs
// with plain Node.
//
// Why not `tsx server/main.ts` as before: tsx transpiles every module at start and stays loaded,
// about 30 MB of resident memory and a third of a second of start-up for nothing a server needs
// at run time (measured with `npm run bench -- api`). esbuild bundles our own code only; packages
// stay in node_modules (sql.js finds its wasm file there, the ffmpeg packages their binaries).
// The server finds widget/ and renderer/dist two folders up from its file, which holds for
// dist/server/main.js as for server/routes/*.ts. Tests and `npm run vop` still run the
// TypeScript directly; test/startup.test.ts runs this bundle.
//
// It takes a fraction of a second, so it runs on every start: no staleness rules to get wrong.
// The bundle is written beside its place and renamed into it, so a server starting meanwhile
// never loads half a file, and two builds at once cannot mix their output.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SERVER_BUNDLE = path.join(ROOT, 'dist/server/main.js');

/** Bundles server/main.ts; resolves with the bundle's path. */
export async function buildServer() {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ['server/main.ts'],
    outfile: SERVER_BUNDLE,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    packages: 'external',
    sourcemap: 'linked',
    write: false,
    logLevel: 'warning',
  });
  fs.mkdirSync(path.dirname(SERVER_BUNDLE), { recursive: true });
  // The map first: a bundle in place always finds the map that belongs to it.
  const ordered = [...result.outputFiles].sort((a, b) => Number(b.path.endsWith('.map')) - Number(a.path.endsWith('.map')));
  for (const file of ordered) {
    const tmp = `${file.path}.${process.pid}-${Date.now()}.tmp`;
    fs.writeFileSync(tmp, file.contents);
    fs.renameSync(tmp, file.path);
  }
  return SERVER_BUNDLE;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  buildServer().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
