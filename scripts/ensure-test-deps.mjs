#!/usr/bin/env node
// Run by `npm test` before vitest. The browser tests drive a real Chromium through Playwright,
// and Playwright's own browser download cannot work on machines that reach only the npm registry
// and Debian's packages. So we use the system's Chromium, and install Debian's package when we
// can (root on Debian); anywhere else we say exactly what to run.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';

// ffmpeg too: the tests make sources the bundled 2018 ffmpeg cannot (AV1, HEVC 10-bit), and prove
// that vop prefers a newer system ffmpeg and passes over the bundled ffprobe, which crashes on
// MPEG-TS. Debian's ffmpeg package brings both binaries to /usr/bin.
// PostgreSQL too: the store contract suite and the cluster tests start a throwaway server of
// their own (test/helpers/postgres.ts) from Debian's binaries in /usr/lib/postgresql/<major>/bin.
const hasPostgres = () =>
  Boolean(process.env.VOP_TEST_PG_BIN) ||
  (fs.existsSync('/usr/lib/postgresql') && fs.readdirSync('/usr/lib/postgresql').some((d) => fs.existsSync(`/usr/lib/postgresql/${d}/bin/pg_ctl`)));
// Ceph too: the media store contract suite starts a throwaway one-node Ceph with radosgw, a real
// S3 server (test/helpers/ceph.ts), from Debian's ceph-mon, ceph-osd and radosgw packages.
const cephBinaries = ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'monmaptool', 'ceph-authtool', 'ceph'];
const hasCeph = () => cephBinaries.every((b) => fs.existsSync(`/usr/bin/${b}`));
// promtool too (Debian's prometheus package): the metrics test lints vop's /metrics answer with it.
const hasPromtool = () => fs.existsSync('/usr/bin/promtool');
const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].filter(Boolean);
const found = candidates.find((p) => fs.existsSync(p));
const hasFfmpeg = fs.existsSync('/usr/bin/ffmpeg') && fs.existsSync('/usr/bin/ffprobe');
// A font with Chinese glyphs (Debian's fonts-wqy-zenhei, 7 MB), so the console's Chinese pages
// are laid out and photographed with real glyphs, not boxes. Wanted, not needed: installed when
// this runs as root on Debian, and the tests run without it otherwise.
const hasCjkFont = () => (spawnSync('fc-list', [':lang=zh', 'file'], { encoding: 'utf8' }).stdout ?? 'unknown').trim() !== '';
if (!hasCjkFont() && process.getuid?.() === 0 && fs.existsSync('/etc/debian_version')) {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const font = spawnSync('apt-get', ['install', '-y', '-qq', 'fonts-wqy-zenhei'], { stdio: 'ignore', env });
  if (font.status !== 0 && spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env }).status === 0) spawnSync('apt-get', ['install', '-y', '-qq', 'fonts-wqy-zenhei'], { stdio: 'ignore', env });
  if (!hasCjkFont()) console.log('No font with Chinese glyphs (fonts-wqy-zenhei could not be installed): Chinese pages show boxes in screenshots.');
}
if (found && hasFfmpeg && hasPostgres() && hasCeph() && hasPromtool()) {
  process.exit(0);
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const isDebian = fs.existsSync('/etc/debian_version');
const wanted = [...(found ? [] : ['chromium']), ...(hasFfmpeg ? [] : ['ffmpeg']), ...(hasPostgres() ? [] : ['postgresql']), ...(hasCeph() ? [] : ['ceph-mon', 'ceph-osd', 'radosgw']), ...(hasPromtool() ? [] : ['prometheus'])];
if (isRoot && isDebian) {
  console.log(`Installing Debian's ${wanted.join(' and ')} package for the tests…`);
  // RUNLEVEL=1 keeps invoke-rc.d from starting the packaged services (prometheus's): the tests want their binaries only.
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive', RUNLEVEL: '1' };
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const install = update.status === 0 ? spawnSync('apt-get', ['install', '-y', '-qq', ...wanted], { stdio: 'inherit', env }) : update;
  if (install.status === 0 && (found || fs.existsSync('/usr/bin/chromium')) && fs.existsSync('/usr/bin/ffprobe') && hasPostgres() && hasCeph() && hasPromtool()) {
    if (!found) console.log(execFileSync('/usr/bin/chromium', ['--version'], { encoding: 'utf8' }).trim());
    process.exit(0);
  }
  console.error(`Installing ${wanted.join(' and ')} with apt-get failed; see the output above.`);
  process.exit(1);
}

if (!hasPromtool()) {
  console.error(`The metrics test needs promtool in /usr/bin; it checks vop's /metrics answer with \`promtool check metrics\`.
  Debian/Ubuntu:  sudo RUNLEVEL=1 apt-get install -y prometheus   (RUNLEVEL=1: the packaged service is not started)`);
  if (found && hasFfmpeg && hasPostgres() && hasCeph()) process.exit(1);
}
if (!hasCeph()) {
  console.error(`The tests need Ceph's ${cephBinaries.join(', ')} in /usr/bin; they start a throwaway one-node Ceph with radosgw (a real S3 server) of their own.
  Debian/Ubuntu:  sudo apt-get install -y ceph-mon ceph-osd radosgw`);
  if (found && hasFfmpeg && hasPostgres()) process.exit(1);
}
if (!hasPostgres()) {
  console.error(`The tests need PostgreSQL's server binaries (initdb, pg_ctl) in /usr/lib/postgresql/<major>/bin; they start a throwaway server of their own.
  Debian/Ubuntu:  sudo apt-get install -y postgresql
  Elsewhere:      set VOP_TEST_PG_BIN to the folder holding initdb and pg_ctl`);
  if (found && hasFfmpeg) process.exit(1);
}
if (!hasFfmpeg) {
  console.error(`The tests need the system's ffmpeg and ffprobe in /usr/bin (the bundled ones cannot make or read every source the tests use).
  Debian/Ubuntu:  sudo apt-get install -y ffmpeg`);
  if (found) process.exit(1);
}
console.error(`The browser tests need Chromium and none was found (looked at: ${candidates.join(', ')}).
Install it, then run the tests again:
  Debian/Ubuntu:  sudo apt-get install -y chromium
  Fedora:         sudo dnf install -y chromium
  macOS:          brew install --cask chromium   (then CHROMIUM_PATH="/Applications/Chromium.app/Contents/MacOS/Chromium")
Or point CHROMIUM_PATH at any Chromium or Chrome binary.`);
process.exit(1);
