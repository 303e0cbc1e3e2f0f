/**
 * Which tier each test file runs in (vitest.config.ts makes a project of each; docs/testing.md).
 *
 * The rule: a file belongs in the full tier if it needs PostgreSQL, Ceph, Chromium or the built
 * console, or if it takes more than about 5 s (long ffmpeg runs, real processes started and
 * killed, waits for timers, tsc). List it below with what puts it there. Every file not listed is
 * in the quick tier, which starts no services: a quick file that asks for one fails with a message
 * sending it here, and one that takes over 10 s is named at the end of the run.
 */
import fs from 'node:fs';

/** Full-tier files (under test/, without `.test.ts`) and what puts them there. */
export const FULL_TIER: Record<string, string> = {
  'advisory-locker': 'PostgreSQL',
  'cluster-backup': 'PostgreSQL, Ceph, a transcode, restores and a restore killed mid-way',
  'cluster-callbacks': 'PostgreSQL, nodes killed mid-write',
  'cluster-console': 'PostgreSQL',
  'cluster-keys': 'PostgreSQL',
  'cluster-limits': 'PostgreSQL',
  'cluster-postgres': 'PostgreSQL',
  'cluster-reads': 'PostgreSQL',
  'cluster-queue': 'PostgreSQL, Ceph, four node processes, 40 s transcodes',
  'cluster-ladder': 'PostgreSQL, Ceph, three node processes, a worker killed mid-ladder',
  'cluster-settings': 'PostgreSQL',
  'cluster-backup-schedule': 'PostgreSQL',
  'cluster-tus': 'PostgreSQL, Ceph',
  'cluster-upload-reservations': 'PostgreSQL, Ceph',
  'store-contract-postgres': 'PostgreSQL',
  'signed-media': 'three transcodes, a wait for a cache to expire',
  backup: 'a transcode, CLI processes, 200 MB backups killed part-way',
  'backup-archive': 'thousands of damaged copies read back, one flipped byte each',
  'backup-trust': 'CLI processes making, verifying and restoring backups; three servers',
  'media-s3': 'Ceph',
  'media-store-contract-s3': 'Ceph',
  'console-api': 'the built console',
  'console-api-networks': 'Chromium',
  'console-browser': 'Chromium',
  'console-first-run': 'Chromium',
  'console-housekeeping': 'Chromium',
  'console-integrate': 'Chromium',
  'console-languages': 'Chromium',
  'console-layout': 'Chromium',
  'console-ladder': 'Chromium',
  'console-player': 'Chromium',
  'console-captions': 'Chromium, the built console, a transcode',
  'console-queue-actions': 'Chromium',
  'console-settings': 'Chromium',
  'console-first-hour': 'Chromium',
  'console-try-upload': 'Chromium, two transcodes',
  'console-backups': 'Chromium',
  'console-session-browser': 'Chromium',
  'media-proof': 'Chromium',
  'hls-players': 'Chromium, four sources and their ladders played to the end in two players',
  'backup-stall': 'a backup download left unread until the socket buffers fill, the backup paced to a share of the disk',
  'h264-sps': 'a dozen libx264 encodes and stream copies',
  'copy-faithful': 'transcodes of crafted H.264 sources, a ladder',
  'watch-views': 'Chromium viewers watching for 10 s each, a server killed with SIGKILL and started again',
  'watch-page': 'Chromium, two sources with several tracks and their ladders, played in iframes',
  'hls-tracks': 'Chromium, sources with several audio and subtitle tracks played in hls.js and natively',
  'widget-outcomes': 'Chromium',
  'widget-overlay': 'Chromium',
  'widget-resume': 'Chromium',
  'widget-window': 'Chromium',
  'not-a-video-rule': "sixteen refusals by ffprobe and the page's quick look, callbacks awaited (about 9 s)",
  // Slow without services (times from a run on a loaded machine).
  'main-shell': 'type-checks the whole project with tsc (about 60 s)',
  'widget-scripts': 'type-checks the widget scripts with tsc',
  'desktop-build': 'bundles and runs the server bundle (about 13 s)',
  'media-sources': 'probes and transcodes some twenty kinds of source (about 60 s)',
  'media-limits': 'ffmpeg runs up to their memory and time limits (about 75 s)',
  'media-transcode': 'transcodes ladders and HLS (about 27 s)',
  'media-cover': 'samples frames of real clips (about 26 s)',
  'media-hdr': 'makes HEVC and VP9 10-bit HDR sources and transcodes them (about 25 s)',
  'media-binaries': 'runs every ffmpeg and ffprobe it finds (about 14 s)',
  'media-probe': 'makes and probes many sources (about 14 s)',
  'media-runner': 'runs ffmpeg in real time (-re) for seconds at a time',
  'processing-transcode': 'transcodes (about 30 s)',
  logging: 'starts four server processes, one of which transcodes (about 28 s)',
  metrics: 'a real upload, transcode and status callback, then promtool on the answer (about 10 s)',
  'playable-first': 'first renditions and ladders of real clips (about 15 s)',
  'ladder-pause': 'a 720p ladder encoding while another video is transcoded (about 30 s)',
  'console-ladder-state': 'transcodes a clip and its ladder, retrying the ladder twice (about 10 s)',
  'processing-crash': 'kills a server mid-transcode and restarts it (about 40 s)',
  'playable-crash': 'kills a server with -9 at each step of a first rendition and its ladder, restarts it (about 3 min)',
  'ingest-reupload': 'transcodes, stops and restarts servers (about 37 s)',
  'ingest-multipart': 'transcodes (about 13 s)',
  'delivery-caches': 'transcodes again and waits out cache times (about 17 s)',
  'durability': 'kills server processes with -9 and restarts them (about 46 s)',
  'supervisor': 'runs npm start and signals its process group (about 31 s)',
  'startup': 'starts and signals server processes (about 11 s)',
  'config-start': 'starts server processes with a configuration file, and restarts one (about 20 s)',
  'shutdown': 'waits on slow readers through close() (about 13 s)',
  'data-dir-lock-race': 'races server processes, round after round (about 13 s)',
  'give-up-crash': 'kills a server process and restarts it (about 9 s)',
  'upload-gc': 'uploads 256 MiB twice and counts collections (about 50 s)',
  'queue-fairness': 'runs queued pulls one after another (about 14 s)',
  'slow-readers': 'waits out send timeouts (about 13 s)',
  'auth-limits': 'a hundred 60 KB failing calls (about 10 s)',
};

/** `test/<name>.test.ts` of each full-tier file; throws on a name that is no test file (a typo would move nothing). */
export function fullTierFiles(): string[] {
  const files = Object.keys(FULL_TIER).map((name) => `test/${name}.test.ts`);
  const missing = files.filter((f) => !fs.existsSync(new URL(`../${f}`, import.meta.url)));
  if (missing.length) throw new Error(`test/tiers.ts lists ${missing.join(', ')}, which no longer exist: remove or rename them there.`);
  return files;
}

/** Seconds past which a quick-tier file is named at the end of the run, as a full-tier candidate. */
export const QUICK_FILE_BUDGET_SECONDS = 10;
