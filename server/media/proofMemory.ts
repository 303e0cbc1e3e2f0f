/**
 * The proof's outcome remembered from one start to the next (media/ffmpegProof.ts).
 *
 * The proof makes a sample of each common container and has every candidate probe and decode it:
 * about fifteen ffmpeg and ffprobe runs, and a distribution's ffmpeg spends some 50 ms of CPU just
 * loading its two hundred libraries each time. That was most of a start's CPU, paid again by every
 * start (a supervisor's restart, each worker of a cluster, each test), for the same binaries and
 * the same answer. So the outcome is kept in the user's cache folder, under a fingerprint of what
 * decides it: the samples, which tool is a setting, and each candidate's path, version lines and
 * file identity (size, modification time, inode). A binary replaced or upgraded, a candidate added
 * or gone, a new sample: another fingerprint, and the proof runs again.
 *
 * What is kept only chooses among the candidates found at this start (a remembered path that is
 * not one of them is ignored): the file can make vop prefer one installed binary over another, no
 * more, and it sits in the user's own cache folder, as trusted as the data folder. Nothing here
 * ever fails a start: a file that cannot be read or written means the proof runs.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ResolvedBinary, Tool } from './ffmpegBinary.js';
import { PROOF_SAMPLES, type ProofOutcome } from './ffmpegProof.js';

/** Outcomes kept: a few machines' worth of binaries (a setting tried, an upgrade), the newest first. */
const KEPT = 16;

/** Bumped when what is kept changes shape, so that an older file is not misread. */
const FORMAT = 1;

interface Entry {
  key: string;
  savedAt: number;
  ffmpeg: string;
  ffprobe: string;
  passedOver: string[];
  report: ProofOutcome['report'];
}

/**
 * The file in the user's cache folder (XDG's on Linux, the platform's own elsewhere), read from
 * `env`; undefined where the environment names no home (a service user without one): the proof
 * then runs at every start.
 */
export function proofMemoryFile(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): string | undefined {
  const home = env.HOME || undefined;
  let dir: string | undefined;
  if (platform === 'win32') dir = env.LOCALAPPDATA ? path.join(env.LOCALAPPDATA, 'vop', 'Cache') : undefined;
  else if (platform === 'darwin') dir = home ? path.join(home, 'Library', 'Caches', 'vop') : undefined;
  else if (env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME)) dir = path.join(env.XDG_CACHE_HOME, 'vop');
  else dir = home ? path.join(home, '.cache', 'vop') : undefined;
  return dir && path.join(dir, 'ffmpeg-proof.json');
}

/** What decides the proof's outcome, hashed; null when a candidate cannot be looked at. */
export function proofFingerprint(ffmpegs: ResolvedBinary[], ffprobes: ResolvedBinary[], fixed: Record<Tool, boolean>): string | null {
  const identity = (b: ResolvedBinary) => {
    const st = fs.statSync(b.path, { throwIfNoEntry: false });
    return st && [b.path, b.source, b.version, b.libavformat, st.size, st.mtimeMs, st.ino, st.dev];
  };
  const all = [...ffmpegs, ...ffprobes].map(identity);
  if (all.some((x) => !x)) return null;
  return createHash('sha256').update(JSON.stringify([FORMAT, PROOF_SAMPLES, fixed, ffmpegs.length, all])).digest('hex');
}

/** The outcome kept under `key`, with the candidates of this start; undefined when none is. */
export function recallProof(file: string, key: string, ffmpegs: ResolvedBinary[], ffprobes: ResolvedBinary[]): ProofOutcome | undefined {
  const entry = readEntries(file).find((e) => e.key === key);
  const ffmpeg = ffmpegs.find((b) => b.path === entry?.ffmpeg);
  const ffprobe = ffprobes.find((b) => b.path === entry?.ffprobe);
  if (!entry || !ffmpeg || !ffprobe || !Array.isArray(entry.passedOver) || !isReport(entry.report)) return undefined;
  return { ffmpeg, ffprobe, passedOver: entry.passedOver.map(String), report: entry.report };
}

/** Keeps `outcome` under `key` (replacing the file whole, so a reader never sees half of it). */
export function rememberProof(file: string, key: string, outcome: ProofOutcome): void {
  const entry: Entry = { key, savedAt: Date.now(), ffmpeg: outcome.ffmpeg.path, ffprobe: outcome.ffprobe.path, passedOver: outcome.passedOver, report: outcome.report };
  const entries = [entry, ...readEntries(file).filter((e) => e.key !== key)].slice(0, KEPT);
  const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(aside, JSON.stringify({ format: FORMAT, entries }), { mode: 0o600 });
    fs.renameSync(aside, file);
  } catch {
    // A read-only home, a full disk: the proof runs again next time, nothing else is lost.
    try {
      fs.rmSync(aside, { force: true });
    } catch {
      // Not even a folder to write in: nothing was left behind.
    }
  }
}

function readEntries(file: string): Entry[] {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { format?: unknown; entries?: unknown };
    return parsed.format === FORMAT && Array.isArray(parsed.entries) ? parsed.entries.filter((e): e is Entry => typeof e?.key === 'string') : [];
  } catch {
    return [];
  }
}

function isReport(r: unknown): r is ProofOutcome['report'] {
  const report = r as ProofOutcome['report'] | undefined;
  return typeof report?.summary === 'string' && Array.isArray(report.containers) && report.containers.every((c) => typeof c?.container === 'string' && typeof c.ok === 'boolean');
}
