#!/usr/bin/env node
// `npm run build:console`: builds the console (renderer/, React) with Vite into renderer/dist,
// which the server serves at /console (server/routes/console.ts).
//
// The build goes to a temporary folder first and replaces renderer/dist only when complete, so a
// server running meanwhile never serves half a build, and two builds at once (test files starting
// in parallel) cannot mix their files.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const RENDERER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../renderer');
export const DIST = path.join(RENDERER, 'dist');

/** Builds the console; resolves with the output folder. */
export async function buildConsole({ quiet = false } = {}) {
  const { build } = await import('vite');
  const tmp = path.join(RENDERER, `.dist-${process.pid}-${Date.now()}`);
  // React's production build whatever NODE_ENV the caller has: Vite and its React plugin go by it,
  // and under vitest (NODE_ENV=test) the console was React's development build, 40% larger, with
  // every effect run twice (StrictMode), so every page asked the server twice.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({
      root: RENDERER,
      configFile: path.join(RENDERER, 'vite.config.ts'),
      logLevel: quiet ? 'warn' : 'info',
      build: { outDir: tmp, emptyOutDir: true },
    });
    const old = `${DIST}.old-${process.pid}-${Date.now()}`;
    if (fs.existsSync(DIST)) fs.renameSync(DIST, old);
    try {
      fs.renameSync(tmp, DIST);
    } catch (err) {
      // Another build (a test file starting at the same time) put its complete build there
      // between our two renames: the same sources, so keep it.
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    }
    fs.rmSync(old, { recursive: true, force: true });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return DIST;
}

/** The newest modification time under `dir` (files only), in ms. */
function newestMtime(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath ?? entry.path, entry.name);
    newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

/** True if renderer/dist exists and is newer than every source of the console. */
export function consoleBuildIsFresh() {
  const index = path.join(DIST, 'index.html');
  if (!fs.existsSync(index)) return false;
  const built = fs.statSync(index).mtimeMs;
  const sources = Math.max(
    newestMtime(path.join(RENDERER, 'src')),
    fs.statSync(path.join(RENDERER, 'index.html')).mtimeMs,
    fs.statSync(path.join(RENDERER, 'vite.config.ts')).mtimeMs,
  );
  return built >= sources;
}

// `--if-stale` (for `npm start` and `npm test`): build only when the sources changed, and where
// Vite is not installed (an install without dev dependencies) warn instead of failing, so the
// server still starts; /console then says what to run.
/**
 * A line of this build's output: plain, or, when `npm start` runs with `--log-format json`
 * (scripts/start.mjs sets VOP_BUILD_LOG=json), a record shaped as the server's (level, time, msg).
 */
function say(msg, level = 'info') {
  const line = process.env.VOP_BUILD_LOG === 'json' ? JSON.stringify({ level, time: new Date().toISOString(), msg }) : msg;
  (level === 'warn' ? process.stderr : process.stdout).write(`${line}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const onlyIfStale = process.argv.includes('--if-stale');
  if (onlyIfStale && consoleBuildIsFresh()) {
    say('console build is up to date');
  } else {
    try {
      await buildConsole({ quiet: onlyIfStale });
      if (onlyIfStale) say(`console built into ${path.relative(process.cwd(), DIST)}`);
    } catch (err) {
      if (onlyIfStale && err?.code === 'ERR_MODULE_NOT_FOUND') {
        say('WARNING: Vite is not installed (npm install without --omit=dev): the console at /console is not built.', 'warn');
      } else {
        throw err;
      }
    }
  }
}
