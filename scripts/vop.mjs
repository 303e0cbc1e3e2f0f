#!/usr/bin/env node
// `npm run vop -- <command>`: builds the server's bundle when a source is newer than it (as
// `npm start` does), then runs the command line from it (dist/server/cli.js) in this process.
// The check is made here, the build in a child only when it is due: a child at every command
// to find the bundle fresh cost a tenth of a second of CPU. The build's own lines, if it has any,
// go to standard error: standard output is the command's JSON.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CLI_BUNDLE, serverBundleIsStale } from './build-server.mjs';

if (serverBundleIsStale()) {
  // A child, as npm start's builds are: it also says, and goes on, when dist/ cannot be written.
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'build-server.mjs');
  const build = spawnSync(process.execPath, [script, '--if-stale'], { stdio: ['ignore', 2, 2] });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
const { main } = await import(pathToFileURL(CLI_BUNDLE).href);
await main(process.argv.slice(2));
