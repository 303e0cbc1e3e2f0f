#!/usr/bin/env node
// Run by `npm test` before vitest: the browser tests drive a real Chromium through Playwright,
// and Playwright's own browser download cannot work on machines that reach only the npm registry
// and Debian's packages. So we use the system's Chromium, and install Debian's package when we
// can (root on Debian); anywhere else we say exactly what to run.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';

const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].filter(Boolean);
const found = candidates.find((p) => fs.existsSync(p));
if (found) {
  process.exit(0);
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const isDebian = fs.existsSync('/etc/debian_version');
if (isRoot && isDebian) {
  console.log('Chromium not found: installing Debian\'s chromium package for the browser tests…');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const install = update.status === 0 ? spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit', env }) : update;
  if (install.status === 0 && fs.existsSync('/usr/bin/chromium')) {
    console.log(execFileSync('/usr/bin/chromium', ['--version'], { encoding: 'utf8' }).trim());
    process.exit(0);
  }
  console.error('Installing chromium with apt-get failed; see the output above.');
  process.exit(1);
}

console.error(`The browser tests need Chromium and none was found (looked at: ${candidates.join(', ')}).
Install it, then run the tests again:
  Debian/Ubuntu:  sudo apt-get install -y chromium
  Fedora:         sudo dnf install -y chromium
  macOS:          brew install --cask chromium   (then CHROMIUM_PATH="/Applications/Chromium.app/Contents/MacOS/Chromium")
Or point CHROMIUM_PATH at any Chromium or Chrome binary.`);
process.exit(1);
