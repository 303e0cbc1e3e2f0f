#!/usr/bin/env node
// Bundles the headless server (server/main.ts) into dist/server/main.js, which `npm start` runs
// with plain Node (scripts/start.mjs imports it), and the command line (server/cli.ts) into
// dist/server/cli.js beside it, which `npm run vop` runs (scripts/vop.mjs): the two share chunks.
//
// Why not `tsx server/main.ts` as before: tsx transpiles every module at start and stays loaded,
// about 30 MB of resident memory and a third of a second of start-up for nothing a server needs
// at run time (measured with `npm run bench -- api`). esbuild bundles our own code and the
// packages every start loads (express, @tus/server, busboy, prom-client, srvx, tar-stream and
// theirs): Node then reads, resolves and wraps one file instead of some 200 CommonJS modules, about
// 0.1 s less CPU at each start (0.71 against 0.60 s, twelve starts each; the tests start some 150
// servers as processes). What stays in node_modules is EXTERNAL, each with its reason.
// The server finds widget/ and renderer/dist two folders up from its file, which holds for
// dist/server/main.js as for server/routes/*.ts. The command line started through tsx took
// 0.48 CPU-seconds a command; `npm run vop` from this bundle 0.17 (five commands each).
//
// `--if-stale` (npm start) builds only when a source the last build read (esbuild's metafile,
// kept beside the bundle) is newer than the bundle, or gone. When dist/ cannot be written (an
// install owned by another user, a read-only file system) and a bundle is there, it says so and
// leaves that bundle to run. The bundle is written beside its place and renamed in, so a server
// starting meanwhile never loads half a file, and two builds at once cannot mix their output.
//
// Code splitting: what the server imports only when it is asked for (object storage, tus in the
// bucket) goes to chunks under dist/server/chunks/, with the packages they import. Bundled into
// main.js, those packages' imports were hoisted to its top and the AWS SDK loaded in the embedded
// default too (some 30 MB more heap, and V8 then collected differently under uploads; see
// test/ingest/upload-gc.test.ts). Chunks are written before main.js, and main.js is renamed in last.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SERVER_BUNDLE = path.join(ROOT, 'dist/server/main.js');
/** The command line's (`npm run vop`, scripts/vop.mjs), built with the server: they share chunks. */
export const CLI_BUNDLE = path.join(ROOT, 'dist/server/cli.js');
const INPUTS = path.join(ROOT, 'dist/server/inputs.json');

/**
 * The packages the bundle imports from node_modules rather than carries:
 * - sql.js finds its wasm file beside its own script, and the ffmpeg packages their binaries;
 * - pino starts its transports as worker threads from its own files;
 * - pg, bullmq, the AWS SDK and @tus/s3-store are cluster mode's, loaded (in chunks) only when it
 *   is asked for; pg looks for its optional native driver at run time.
 */
const EXTERNAL = ['sql.js', 'ffmpeg-static', '@ffmpeg-installer/*', '@ffprobe-installer/*', 'pino', 'pg', 'pg-native', 'bullmq', '@aws-sdk/*', '@tus/s3-store'];

/**
 * The bundle is an ES module, and the CommonJS packages in it ask for Node's own modules with
 * `require`, which an ES module lacks: each output file gets one of its own.
 */
const REQUIRE_SHIM = "import { createRequire as __vopCreateRequire } from 'node:module'; const require = __vopCreateRequire(import.meta.url);";

/** Bundles server/main.ts and server/cli.ts; resolves with the server bundle's path. */
export async function buildServer() {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ['server/main.ts', 'server/cli.ts'],
    outdir: path.dirname(SERVER_BUNDLE),
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    external: EXTERNAL,
    banner: { js: REQUIRE_SHIM },
    sourcemap: 'linked',
    // The map only turns the bundle's lines back into the sources' (stack traces, with
    // --enable-source-maps), and Node keeps a loaded map in memory: the sources themselves,
    // the packages' included, stay out of it (the api bench's peak was 343 MB with them, 329 without).
    sourcesContent: false,
    metafile: true,
    write: false,
    logLevel: 'warning',
  });
  fs.mkdirSync(path.dirname(SERVER_BUNDLE), { recursive: true });
  const inputs = JSON.stringify(Object.keys(result.metafile.inputs));
  // Chunks, maps and cli.js first, then the input list, main.js last: a bundle in place always
  // finds the files that belong to it.
  const isMain = (f) => f.path === SERVER_BUNDLE;
  const files = [
    ...result.outputFiles.filter((f) => !isMain(f)).map((f) => ({ path: f.path, contents: f.contents })),
    { path: INPUTS, contents: inputs },
    ...result.outputFiles.filter(isMain).map((f) => ({ path: f.path, contents: f.contents })),
  ];
  fs.mkdirSync(path.join(path.dirname(SERVER_BUNDLE), 'chunks'), { recursive: true });
  for (const file of files) {
    const tmp = `${file.path}.${process.pid}-${Date.now()}.tmp`;
    try {
      fs.writeFileSync(tmp, file.contents);
      fs.renameSync(tmp, file.path);
    } finally {
      fs.rmSync(tmp, { force: true });
    }
  }
  // Chunks of earlier builds go: their names carry a hash of their contents, so nothing loads them now.
  const chunksDir = path.join(path.dirname(SERVER_BUNDLE), 'chunks');
  const current = new Set(result.outputFiles.map((f) => f.path));
  for (const name of fs.readdirSync(chunksDir)) {
    const file = path.join(chunksDir, name);
    if (!current.has(file) && !name.endsWith('.tmp')) fs.rmSync(file, { force: true });
  }
  return SERVER_BUNDLE;
}

/**
 * The Node flags package.json's start script runs the server with (the benchmarks and tests run
 * the bundle with them the same way). Throws unless the script is `exec node [flags]
 * scripts/start.mjs`: start.mjs builds what is stale and runs the bundle in its own process, and
 * `exec` makes that process the one npm forwards SIGTERM and SIGINT to (scripts/start.mjs says why).
 *
 * The flags, and why: `--enable-source-maps`, so that stack traces name the TypeScript sources;
 * `--expose-gc`, so that durableDatabase.ts's releaseImage() frees an export's copy at once;
 * `--initial-old-space-size=128`, a 128 MB floor under V8's old-generation limit, without which
 * every upload ran a full collection each 20 to 28 MB (test/ingest/upload-gc.test.ts says why).
 */
export function startNodeFlags() {
  const start = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.start;
  const m = /^exec node ((?:--[\w=-]+ )*)scripts\/start\.mjs$/.exec(start);
  if (!m) throw new Error(`package.json's start script is not "exec node [flags] scripts/start.mjs": ${start}`);
  return m[1].trim().split(/\s+/).filter(Boolean);
}

/** True when a bundle is missing, or a source of the last build (or this script) is newer or gone. */
export function serverBundleIsStale() {
  let built;
  let inputs;
  try {
    built = Math.min(fs.statSync(SERVER_BUNDLE).mtimeMs, fs.statSync(CLI_BUNDLE).mtimeMs);
    inputs = JSON.parse(fs.readFileSync(INPUTS, 'utf8'));
  } catch {
    return true;
  }
  for (const input of [...inputs, 'scripts/build-server.mjs']) {
    const stat = fs.statSync(path.join(ROOT, input), { throwIfNoEntry: false });
    if (!stat || stat.mtimeMs > built) return true;
  }
  return false;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const ifStale = process.argv.includes('--if-stale');
  if (!ifStale || serverBundleIsStale()) {
    buildServer().catch((err) => {
      if (['EACCES', 'EPERM', 'EROFS'].includes(err?.code) && fs.existsSync(SERVER_BUNDLE)) {
        console.error(`vop: could not rebuild ${path.relative(ROOT, SERVER_BUNDLE)} (${err.message}); running the build that is there.`);
        return;
      }
      console.error(err);
      process.exit(1);
    });
  }
}
