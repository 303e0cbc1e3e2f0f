#!/usr/bin/env node
// `npm run vop -- <command>`: builds the server's bundle when a source is newer than it (as
// `npm start` does), then runs the command line from it (dist/server/cli.js) in this process.
// Through tsx a command took 0.48 CPU-seconds; from the bundle 0.25 (scripts/build-server.mjs).
// The build's own lines, if it has any, go to standard error: standard output is the command's JSON.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const build = spawnSync(process.execPath, [path.join(ROOT, 'scripts/build-server.mjs'), '--if-stale'], { cwd: ROOT, stdio: ['ignore', 2, 2] });
if (build.status !== 0) process.exit(build.status ?? 1);
const { main } = await import(pathToFileURL(path.join(ROOT, 'dist/server/cli.js')).href);
await main(process.argv.slice(2));
