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
  'storage/advisory-locker': 'PostgreSQL',
  'backup/cluster-backup': 'PostgreSQL, Ceph, a transcode, restores and a restore killed mid-way',
  'callbacks/cluster-callbacks': 'PostgreSQL, nodes killed mid-write',
  'console/cluster-console': 'PostgreSQL',
  'keys/cluster-keys': 'PostgreSQL',
  'auth/cluster-limits': 'PostgreSQL',
  'storage/cluster-postgres': 'PostgreSQL',
  'storage/cluster-reads': 'PostgreSQL',
  'jobs/cluster-queue': 'PostgreSQL, Ceph, four node processes, 12 and 20 s transcodes',
  'jobs/cluster-queue-workers': 'PostgreSQL, Ceph, four node processes, 16 and 12 s transcodes',
  'processing/cluster-ladder': 'PostgreSQL, Ceph, three node processes, a worker killed mid-ladder',
  'console/cluster-settings': 'PostgreSQL',
  'backup/cluster-backup-schedule': 'PostgreSQL',
  'ingest/cluster-tus': 'PostgreSQL, Ceph',
  'ingest/cluster-upload-reservations': 'PostgreSQL, Ceph',
  'storage/store-contract-postgres': 'PostgreSQL',
  'delivery/signed-media': 'three transcodes, a wait for a cache to expire',
  'backup/backup': 'a transcode, CLI processes, 200 MB backups killed part-way',
  'backup/backup-archive': 'thousands of damaged copies read back, one flipped byte each',
  'backup/backup-trust': 'CLI processes making, verifying and restoring backups; three servers',
  'storage/media-s3': 'Ceph',
  'storage/media-store-contract-s3': 'Ceph',
  'console/console-api': 'the built console',
  'console/console-api-networks': 'Chromium',
  'console/console-browser': 'Chromium',
  'console/console-first-run': 'Chromium',
  'console/console-housekeeping': 'Chromium',
  'console/console-integrate': 'Chromium',
  'console/console-languages': 'Chromium',
  'console/console-layout': 'Chromium',
  'console/console-ladder': 'Chromium',
  'console/console-player': 'Chromium',
  'console/console-captions': 'Chromium, the built console, a transcode',
  'console/console-queue-actions': 'Chromium',
  'console/console-settings': 'Chromium',
  'console/console-first-hour': 'Chromium',
  'console/console-try-upload': 'Chromium, two transcodes',
  'console/console-backups': 'Chromium',
  'console/console-session-browser': 'Chromium',
  'media/media-proof': 'Chromium',
  'media/hls-players-keyframes': 'Chromium, three sources and their ladders played to the end in two players',
  'media/hls-players-rates': 'Chromium, three sources and their ladders played to the end in two players',
  'backup/backup-stall': 'a backup download left unread until the socket buffers fill, the backup paced to a share of the disk',
  'media/h264-sps': 'a dozen libx264 encodes and stream copies',
  'processing/copy-faithful': 'transcodes of crafted H.264 sources, a ladder',
  'watch/watch-views': 'Chromium viewers watching for 10 s at once, a server killed with SIGKILL and started again',
  'watch/watch-page': 'Chromium, two sources with several tracks and their ladders, played in iframes',
  'media/hls-tracks': 'Chromium, sources with several audio and subtitle tracks played in hls.js and natively',
  'widget/widget-outcomes': 'Chromium',
  'widget/widget-overlay': 'Chromium',
  'widget/widget-resume': 'Chromium',
  'widget/widget-window': 'Chromium',
  'ingest/not-a-video-rule': "sixteen refusals by ffprobe and the page's quick look, callbacks awaited (about 9 s)",
  // Slow without services (times from a run on a loaded machine).
  'main/main-shell': 'type-checks the whole project with tsc (about 60 s)',
  'widget/widget-scripts': 'type-checks the widget scripts with tsc',
  'main/desktop-build': 'bundles and runs the server bundle (about 13 s)',
  'media/media-sources': 'probes and transcodes some twenty kinds of source (about 60 s)',
  'media/media-limits': 'ffmpeg runs up to their memory and time limits (about 75 s)',
  'media/media-transcode': 'transcodes ladders and HLS (about 27 s)',
  'media/media-cover': 'samples frames of real clips (about 26 s)',
  'media/probe-memo': 'proves an ffprobe on its samples before probing (about 9 s)',
  'media/media-hdr': 'makes HEVC and VP9 10-bit HDR sources and transcodes them (about 25 s)',
  'media/media-binaries': 'runs every ffmpeg and ffprobe it finds, and the proof where none is remembered (4 to 14 s)',
  'media/proof-memory': 'runs the ffmpeg proof six times over, each a dozen ffmpeg runs (about 7 s)',
  'media/media-probe': 'makes and probes many sources (about 14 s)',
  'media/media-runner': 'runs ffmpeg in real time (-re) for seconds at a time',
  'processing/processing-transcode': 'transcodes (about 30 s)',
  'logging/logging': 'starts four server processes, one of which transcodes (about 28 s)',
  'logging/log-backpressure': 'sends a thousand requests to a server whose output nobody reads for a while (5 to 10 s)',
  'metrics/metrics': 'a real upload, transcode and status callback, then promtool on the answer (about 10 s)',
  'processing/playable-first': 'first renditions and ladders of real clips (about 15 s)',
  'processing/ladder-pause': 'a 720p ladder encoding while another video is transcoded (about 30 s)',
  'console/console-ladder-state': 'transcodes a clip and its ladder, retrying the ladder twice (about 10 s)',
  'processing/processing-crash': 'kills a server mid-transcode and restarts it (about 40 s)',
  'processing/playable-crash': 'kills a server with -9 during the encodes of a first rendition and its ladder, restarts it (about 20 s)',
  'processing/playable-crash-steps': 'kills a server with -9 at the other steps of a first rendition and its ladder, restarts it (about 20 s)',
  'ingest/ingest-reupload': 'transcodes, stops and restarts servers (about 37 s)',
  'ingest/ingest-multipart': 'transcodes (about 13 s)',
  'delivery/delivery-caches': 'transcodes again and waits out cache times (about 17 s)',
  'storage/durability': 'kills server processes with -9 and restarts them (about 46 s)',
  'composition/supervisor': 'runs npm start and signals its process group (about 31 s)',
  'composition/startup': 'starts and signals server processes (about 11 s)',
  'configuration/config-start': 'starts server processes with a configuration file, and restarts one (about 20 s)',
  'composition/shutdown': 'waits on slow readers through close() (about 13 s)',
  'composition/data-dir-lock-race': 'races server processes, round after round (about 13 s)',
  'jobs/give-up-crash': 'kills a server process and restarts it (about 9 s)',
  'ingest/upload-gc': 'uploads 256 MiB twice and counts collections (about 50 s)',
  'jobs/queue-fairness': 'runs queued pulls one after another (about 14 s)',
  'delivery/slow-readers': 'waits out send timeouts (about 13 s)',
  'auth/auth-limits': 'a hundred 60 KB failing calls (about 10 s)',
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

/** Seconds past which a full-tier file is named at the end of the run (issue 36: none over a minute). */
export const FULL_FILE_BUDGET_SECONDS = 60;
