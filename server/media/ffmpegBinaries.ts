/**
 * Which ffmpeg and ffprobe binaries the platform runs, and where they came from (for /healthz).
 *
 * Order of preference (issue 10, item 1):
 *   1. an explicit setting (option, else VOP_FFMPEG_PATH / VOP_FFPROBE_PATH): overrides all, and a
 *      bad setting is an error rather than a silent fall-through to some other binary;
 *   2. `ffmpeg-static`, if its binary file exists (its install script downloads it from GitHub,
 *      so where scripts are skipped or GitHub is unreachable the package is there but empty);
 *   3. `ffmpeg` / `ffprobe` on PATH (the system's), when its libavformat is newer than the
 *      bundled binary's: the bundled ffmpeg is a 2018 build, and a distribution's is patched;
 *   4. `@ffmpeg-installer/ffmpeg` and `@ffprobe-installer/ffprobe`, whose binaries ship inside
 *      the npm tarballs;
 *   5. the system's, when it is not newer.
 * ffmpeg-static has no ffprobe, so ffprobe goes from the setting straight to the next rules.
 *
 * Running `-version` is not proof enough: the bundled ffprobe runs, yet crashes on every MPEG-TS
 * file. So the candidates are then proved on small samples of each common container
 * (ffmpegProof.ts), and the first that handles all of them is chosen. A candidate that does not
 * run, or fails the proof while a later one passes, is skipped with its reason kept in `skipped`,
 * so /healthz can say why the preferred source was not used; the ones that run are kept as
 * `alternates`, for a probe to retry on when the chosen binary crashes on a file.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { BinarySource, ResolvedBinary, Tool } from './ffmpegBinary.js';
import { proveBinaries, type ProofReport } from './ffmpegProof.js';
import { proofFingerprint, proofMemoryFile, recallProof, rememberProof } from './proofMemory.js';
import { toolEnvironment } from './confinement.js';
import { findExecutable } from './findExecutable.js';

const require = createRequire(import.meta.url);

/** The pair in use, as reported by /healthz. */
export interface FfmpegBinaries {
  ffmpeg: ResolvedBinary;
  ffprobe: ResolvedBinary;
  /** Candidates passed over before the chosen ones, each with the reason (empty when the first choice won). */
  skipped: string[];
  /** The other binaries that run, in order of preference: what a probe retries with when the chosen one crashes. */
  alternates: { ffmpeg: ResolvedBinary[]; ffprobe: ResolvedBinary[] };
  /** How the chosen pair did on the sample of each common container. */
  proof: ProofReport;
}

/** Options of {@link resolveFfmpegBinaries}. */
export interface FfmpegBinariesOptions {
  /** Explicit ffmpeg executable; overrides every other source. Default: env VOP_FFMPEG_PATH, if set. */
  ffmpegPath?: string;
  /** Explicit ffprobe executable; overrides every other source. Default: env VOP_FFPROBE_PATH, if set. */
  ffprobePath?: string;
  /** Environment that the VOP_* settings and PATH are read from. */
  env: NodeJS.ProcessEnv;
  /** How long `-version` may take before a candidate is judged broken, in ms. */
  versionTimeoutMs: number;
  /** How long one step of the proof (making, probing or decoding one sample) may take, in ms. */
  proofTimeoutMs: number;
  /**
   * Where the proof's outcome is remembered between starts (media/proofMemory.ts); false: run the
   * proof every time. Default: the user's cache folder, as `env` names it.
   */
  proofMemory?: string | false;
}

export const DEFAULT_FFMPEG_BINARIES_OPTIONS = {
  env: process.env,
  versionTimeoutMs: 10_000,
  proofTimeoutMs: 20_000,
} satisfies Partial<FfmpegBinariesOptions>;

/** No usable binary, or an explicit setting that does not point at one. */
export class FfmpegBinaryError extends Error {
  override name = 'FfmpegBinaryError';
}

interface Candidate {
  source: BinarySource;
  /** Absent when the source has nothing to offer; `why` then says so. */
  path?: string;
  why?: string;
}

/** Resolves both binaries; throws {@link FfmpegBinaryError} when either cannot be found. */
export async function resolveFfmpegBinaries(input: Partial<FfmpegBinariesOptions> = {}): Promise<FfmpegBinaries> {
  const o: FfmpegBinariesOptions = { ...DEFAULT_FFMPEG_BINARIES_OPTIONS, ...input };
  if (!(o.versionTimeoutMs > 0)) throw new Error('Option versionTimeoutMs must be greater than 0.');
  if (!(o.proofTimeoutMs > 0)) throw new Error('Option proofTimeoutMs must be greater than 0.');
  const skipped: string[] = [];
  const ffmpegs = await runnable('ffmpeg', o.ffmpegPath ?? nonEmpty(o.env.VOP_FFMPEG_PATH), o, skipped);
  const ffprobes = await runnable('ffprobe', o.ffprobePath ?? nonEmpty(o.env.VOP_FFPROBE_PATH), o, skipped);
  const fixed = { ffmpeg: ffmpegs[0]?.source === 'setting', ffprobe: ffprobes[0]?.source === 'setting' };
  const memory = o.proofMemory ?? proofMemoryFile(o.env);
  const key = memory ? proofFingerprint(ffmpegs, ffprobes, fixed) : null;
  let proved = memory && key ? recallProof(memory, key, ffmpegs, ffprobes) : undefined;
  if (!proved) {
    proved = await proveBinaries(ffmpegs, ffprobes, { timeoutMs: o.proofTimeoutMs, fixed });
    if (memory && key) rememberProof(memory, key, proved);
  }
  skipped.push(...proved.passedOver);
  return {
    ffmpeg: proved.ffmpeg,
    ffprobe: proved.ffprobe,
    skipped,
    alternates: { ffmpeg: ffmpegs.filter((b) => b !== proved.ffmpeg), ffprobe: ffprobes.filter((b) => b !== proved.ffprobe) },
    proof: proved.report,
  };
}

let defaultBinaries: Promise<FfmpegBinaries> | undefined;

/**
 * {@link resolveFfmpegBinaries} with the process environment, resolved once per process: the
 * answer cannot change while we run, and each resolution runs every candidate and the proof.
 */
export function defaultFfmpegBinaries(): Promise<FfmpegBinaries> {
  defaultBinaries ??= resolveFfmpegBinaries();
  // A failure is not cached: the admin may fix the setting or install ffmpeg and retry.
  defaultBinaries.catch(() => (defaultBinaries = undefined));
  return defaultBinaries;
}

/**
 * The candidates of one tool that run, in order of preference. A setting is the only one the
 * choice may fall on (the rest are kept as alternates to retry a crash with); without one, at
 * least one candidate must run.
 */
async function runnable(tool: Tool, setting: string | undefined, o: FfmpegBinariesOptions, skipped: string[]): Promise<ResolvedBinary[]> {
  const found: ResolvedBinary[] = [];
  if (setting !== undefined) {
    const envName = tool === 'ffmpeg' ? 'VOP_FFMPEG_PATH' : 'VOP_FFPROBE_PATH';
    const label = `The ${tool} setting (${tool}Path option or ${envName})`;
    const file = path.resolve(setting);
    if (!fs.existsSync(file)) throw new FfmpegBinaryError(`${label} points to "${file}", which does not exist.`);
    try {
      found.push({ path: file, source: 'setting', ...(await readVersion(file, o.versionTimeoutMs)) });
    } catch (err) {
      throw new FfmpegBinaryError(`${label} points to "${file}", which does not run: ${(err as Error).message}`);
    }
  }
  const tried: string[] = [];
  for (const c of candidates(tool, o.env)) {
    if (c.path === undefined) {
      tried.push(`${tool} from ${c.source}: ${c.why}`);
      continue;
    }
    if (found.some((b) => b.path === c.path)) continue;
    try {
      ensureExecutable(c.path);
      found.push({ path: c.path, source: c.source, ...(await readVersion(c.path, o.versionTimeoutMs)) });
    } catch (err) {
      tried.push(`${tool} from ${c.source} (${c.path}): ${(err as Error).message}`);
    }
  }
  // What the setting overrode was not passed over: it was never in the running.
  if (setting === undefined) skipped.push(...tried);
  if (found.length === 0) {
    throw new FfmpegBinaryError(`No usable ${tool} found. Install ffmpeg, or set VOP_${tool.toUpperCase()}_PATH. Tried: ${tried.join('; ')}`);
  }
  return found[0]?.source === 'setting' ? [found[0], ...preferred(found.slice(1))] : preferred(found);
}

/**
 * Rules 3 to 5: the system's binary goes before the bundled one when its libavformat (the
 * library that reads containers) is newer, and after it otherwise.
 */
function preferred(found: ResolvedBinary[]): ResolvedBinary[] {
  const system = found.find((b) => b.source === 'PATH');
  const bundled = found.find((b) => b.source === '@ffmpeg-installer/ffmpeg' || b.source === '@ffprobe-installer/ffprobe');
  if (!system || !bundled || compareVersions(system.libavformat, bundled.libavformat) <= 0) return found;
  const rest = found.filter((b) => b !== system);
  rest.splice(rest.indexOf(bundled), 0, system);
  return rest;
}

/** Compares dotted versions numerically; an unknown version is older than any known one. */
export function compareVersions(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** The non-setting candidates of one tool, in the order they are looked for. */
function* candidates(tool: Tool, env: NodeJS.ProcessEnv): Generator<Candidate> {
  if (tool === 'ffmpeg') {
    const fromStatic = packageExport('ffmpeg-static');
    const staticPath = typeof fromStatic.value === 'string' ? unpackedFromAsar(fromStatic.value) : undefined;
    if (staticPath && fs.existsSync(staticPath)) yield { source: 'ffmpeg-static', path: staticPath };
    else yield { source: 'ffmpeg-static', why: fromStatic.error ?? 'binary not downloaded (its install script did not run or failed)' };
  }
  const installer = tool === 'ffmpeg' ? '@ffmpeg-installer/ffmpeg' : '@ffprobe-installer/ffprobe';
  const fromInstaller = packageExport(installer);
  const installed = (fromInstaller.value as { path?: unknown } | undefined)?.path;
  if (typeof installed === 'string') yield { source: installer, path: unpackedFromAsar(installed) };
  else yield { source: installer, why: fromInstaller.error ?? 'package exports no binary path' };
  const onPath = findExecutable(tool, env.PATH ?? '');
  yield onPath ? { source: 'PATH', path: onPath } : { source: 'PATH', why: 'not found on PATH' };
}
/**
 * In the packaged desktop app the packages sit inside Electron's app.asar archive, from which a
 * binary cannot be executed; electron-builder.yml unpacks them to app.asar.unpacked beside it.
 */
export function unpackedFromAsar(file: string): string {
  return file.replace(/([\\/])app\.asar([\\/])/, '$1app.asar.unpacked$2');
}

/** Loads a package's main export; these packages throw (sometimes a bare string) when their binary is missing. */
function packageExport(name: string): { value?: unknown; error?: string } {
  try {
    return { value: require(name) as unknown };
  } catch (err) {
    return { error: err instanceof Error ? err.message.split('\n')[0] : String(err) };
  }
}


/**
 * The installer packages set the execute bit in a postinstall script (`chmod u+x`); installs
 * with scripts disabled leave the binary without it. Doing what that script would have done is
 * the least surprising fix; where node_modules is read-only this throws and the candidate is skipped.
 */
function ensureExecutable(file: string): void {
  if (process.platform === 'win32') return;
  try {
    fs.accessSync(file, fs.constants.X_OK);
  } catch {
    const { mode } = fs.statSync(file);
    try {
      fs.chmodSync(file, mode | 0o100);
      fs.accessSync(file, fs.constants.X_OK);
    } catch (err) {
      throw new Error(`not executable and chmod u+x failed (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  }
}

function readVersion(file: string, timeoutMs: number): Promise<{ version: string; libavformat: string | null }> {
  return new Promise((resolve, reject) => {
    execFile(file, ['-hide_banner', '-version'], { timeout: timeoutMs, windowsHide: true, env: toolEnvironment() }, (err, stdout) => {
      if (err) return reject(new Error(`"-version" failed: ${err.message.split('\n')[0]}`));
      const first = stdout.split(/\r?\n/, 1)[0]?.trim() ?? '';
      if (!/version/i.test(first)) return reject(new Error(`"-version" printed no version line (got "${first.slice(0, 80)}")`));
      // "libavformat    59. 27.100 / 59. 27.100": the first figure is the version built against.
      const lib = /^libavformat\s+(\d+)\.\s*(\d+)\.\s*(\d+)/m.exec(stdout);
      resolve({ version: first, libavformat: lib ? `${lib[1]}.${lib[2]}.${lib[3]}` : null });
    });
  });
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
