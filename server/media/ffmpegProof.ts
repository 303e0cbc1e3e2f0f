/**
 * Proof that an ffmpeg/ffprobe pair handles what users upload (issue 10, item 1).
 *
 * `-version` shows that a binary starts, not that it works: the ffprobe bundled by
 * `@ffprobe-installer` starts, then crashes (SIGSEGV) on every MPEG-TS file. So before a pair is
 * chosen, a tiny sample of each common container is made (testsrc2 and sine, a fraction of a
 * second at 64×48: a few hundred milliseconds of work in all), and each candidate must probe it
 * and decode it into the encoders the ladder uses. The first candidate of each tool, in order of
 * preference, that handles every sample is chosen; where none does, the one that handles most,
 * and the report says which containers fail so /healthz and the console can tell the admin.
 */
import { execFile } from 'node:child_process';
import { confine } from './confinement.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ResolvedBinary, Tool } from './ffmpegBinary.js';
import { ProbeError, probe } from './probe.js';

/** One container the proof covers, and how its sample is made. */
interface SampleSpec {
  /** The name people know it by. */
  container: string;
  ext: string;
  /** ffmpeg output arguments after the two lavfi inputs (picture, sound). */
  args: string[];
}

const H264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];

/** The containers users bring most, each with the codecs usually found in it. */
export const PROOF_SAMPLES: readonly SampleSpec[] = [
  { container: 'MP4', ext: 'mp4', args: [...H264, '-c:a', 'aac', '-f', 'mp4'] },
  { container: 'MOV', ext: 'mov', args: [...H264, '-c:a', 'aac', '-f', 'mov'] },
  { container: 'MKV', ext: 'mkv', args: [...H264, '-c:a', 'aac', '-f', 'matroska'] },
  { container: 'WebM', ext: 'webm', args: ['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-c:a', 'libopus', '-f', 'webm'] },
  { container: 'MPEG-TS', ext: 'ts', args: [...H264, '-c:a', 'mp2', '-f', 'mpegts'] },
];

/** How one container fared with the chosen pair. */
export interface ContainerProof {
  container: string;
  ok: boolean;
  /** What went wrong, for the admin; absent when ok. */
  problem?: string;
}

/** What /healthz and the console's overview show of the proof. */
export interface ProofReport {
  containers: ContainerProof[];
  /** The containers that failed, as one sentence for the admin; empty when all passed. */
  summary: string;
}

/** Options of {@link proveBinaries}. */
export interface ProofOptions {
  /** How long one step (make, probe or decode one sample) may take, in ms. */
  timeoutMs: number;
  /** Per tool: the first candidate is a setting, chosen whatever the proof says. */
  fixed: Record<Tool, boolean>;
}

/** The choice made, and the candidates passed over on the way with why. */
export interface ProofOutcome {
  ffmpeg: ResolvedBinary;
  ffprobe: ResolvedBinary;
  passedOver: string[];
  report: ProofReport;
}

/**
 * Chooses one ffmpeg and one ffprobe from candidates given in order of preference (each list
 * non-empty, every binary known to run).
 */
export async function proveBinaries(ffmpegs: ResolvedBinary[], ffprobes: ResolvedBinary[], o: ProofOptions): Promise<ProofOutcome> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-proof-'));
  try {
    const samples = await makeSamples(ffmpegs, dir, o.timeoutMs);
    const passedOver: string[] = [];
    const ffprobe = await choose('ffprobe', ffprobes, samples, o, passedOver, (b, file) => probeCheck(b, file, o.timeoutMs));
    const ffmpeg = await choose('ffmpeg', ffmpegs, samples, o, passedOver, (b, file) => decodeCheck(b, file, o.timeoutMs));
    const containers = PROOF_SAMPLES.map(({ container }): ContainerProof => {
      const problem = samples.get(container)?.problem ?? ffprobe.problems.get(container) ?? ffmpeg.problems.get(container);
      return problem ? { container, ok: false, problem } : { container, ok: true };
    });
    const failed = containers.filter((c) => !c.ok);
    const summary = failed.length === 0 ? '' : `${failed.map((c) => `${c.container}: ${c.problem}`).join('; ')}.`;
    return { ffmpeg: ffmpeg.binary, ffprobe: ffprobe.binary, passedOver, report: { containers, summary } };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

type Samples = Map<string, { file?: string; problem?: string }>;

/** The picture and the sound every sample is made of. */
const SAMPLE_INPUTS = ['-f', 'lavfi', '-i', 'testsrc2=s=64x48:r=10:d=0.5', '-f', 'lavfi', '-i', 'sine=f=440:sample_rate=48000:d=0.5'];

/**
 * Makes each sample with the first ffmpeg that can (the samples only have to exist). All of them
 * in one run of the first candidate when it can: a distribution's ffmpeg spends some 50 ms loading
 * its libraries at each start, which is most of what making a sample costs. When that run fails
 * (an encoder missing, say), each is made on its own, so that each failure is its sample's.
 */
async function makeSamples(ffmpegs: ResolvedBinary[], dir: string, timeoutMs: number): Promise<Samples> {
  const made: Samples = new Map();
  const file = (spec: SampleSpec) => path.join(dir, `sample.${spec.ext}`);
  const outputs = PROOF_SAMPLES.flatMap((spec) => [...spec.args, file(spec)]);
  if (!(await runTool(ffmpegs[0]!.path, ['-v', 'error', '-nostdin', ...SAMPLE_INPUTS, '-y', ...outputs], timeoutMs))) {
    for (const spec of PROOF_SAMPLES) made.set(spec.container, { file: file(spec) });
    return made;
  }
  await Promise.all(
    PROOF_SAMPLES.map(async (spec) => {
      const errors: string[] = [];
      for (const b of ffmpegs) {
        const failure = await runTool(b.path, ['-v', 'error', '-nostdin', ...SAMPLE_INPUTS, ...spec.args, '-y', file(spec)], timeoutMs);
        if (!failure) return void made.set(spec.container, { file: file(spec) });
        errors.push(failure);
      }
      made.set(spec.container, { problem: `no sample could be made to check it (${errors[errors.length - 1]})` });
    }),
  );
  return made;
}

/**
 * The first candidate (a setting: the only one) that passes every sample, else the one that
 * passes most; each one passed over is named with what it failed.
 */
async function choose(
  tool: Tool,
  candidates: ResolvedBinary[],
  samples: Samples,
  o: ProofOptions,
  passedOver: string[],
  check: (b: ResolvedBinary, file: string) => Promise<string | undefined>,
): Promise<{ binary: ResolvedBinary; problems: Map<string, string> }> {
  const tried: Array<{ binary: ResolvedBinary; problems: Map<string, string> }> = [];
  for (const binary of o.fixed[tool] ? candidates.slice(0, 1) : candidates) {
    const problems = new Map<string, string>();
    await Promise.all(
      [...samples].map(async ([container, s]) => {
        if (!s.file) return;
        const problem = await check(binary, s.file);
        if (problem) problems.set(container, problem);
      }),
    );
    if (problems.size === 0) {
      for (const t of tried) passedOver.push(`${tool} from ${t.binary.source} (${t.binary.path}): ${describe(t.problems)}`);
      return { binary, problems };
    }
    tried.push({ binary, problems });
  }
  // None passes all: the one with fewest failures, the earlier on a tie.
  return tried.reduce((best, t) => (t.problems.size < best.problems.size ? t : best));
}

function describe(problems: Map<string, string>): string {
  return [...problems].map(([container, problem]) => `${container} sample: ${problem}`).join('; ');
}

/** ffprobe must read the sample as a video; a crash or an unreadable sample is a problem. */
async function probeCheck(b: ResolvedBinary, file: string, timeoutMs: number): Promise<string | undefined> {
  try {
    const verdict = await probe(file, { ffprobePath: b.path, timeoutMs });
    return verdict.isVideo ? undefined : `ffprobe does not read it (${verdict.reason})`;
  } catch (err) {
    if (err instanceof ProbeError) return err.message.replace(` on "${file}"`, '').replace(` "${b.path}"`, '').replace(/\.$/, '');
    throw err;
  }
}

/** ffmpeg must decode the sample into the encoders renditions use (H.264 and AAC). */
async function decodeCheck(b: ResolvedBinary, file: string, timeoutMs: number): Promise<string | undefined> {
  const args = ['-v', 'error', '-nostdin', '-i', `file:${file}`, '-c:v', 'libx264', '-preset', 'ultrafast', '-c:a', 'aac', '-f', 'null', '-'];
  const failure = await runTool(b.path, args, timeoutMs);
  return failure ? `ffmpeg cannot convert it (${failure})` : undefined;
}

/**
 * Runs a binary to completion; resolves with what went wrong, or undefined on success. Confined
 * as every other run is (media/confinement.ts: no new privileges, no capabilities, killed with
 * this process): a candidate is a binary nobody has vouched for yet, which is the point of the proof.
 */
function runTool(file: string, args: string[], timeoutMs: number): Promise<string | undefined> {
  const command = confine(file, args, { dieWithParent: true, memoryLimitBytes: 0 });
  return new Promise((resolve) => {
    execFile(command.file, command.args, { timeout: timeoutMs, windowsHide: true, maxBuffer: 1024 * 1024, env: command.env }, (err, _stdout, stderr) => {
      if (!err) return resolve(undefined);
      const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: NodeJS.Signals | null };
      if (e.killed) return resolve(`took longer than ${timeoutMs} ms`);
      if (e.signal) return resolve(`crashed (${e.signal})`);
      const last = stderr.trim().split('\n').pop()?.trim();
      resolve(last ? last.slice(0, 200) : `exit code ${String(e.code)}`);
    });
  });
}
