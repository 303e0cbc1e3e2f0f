import { execFile } from 'node:child_process';
import os from 'node:os';
import { Slots } from '../core/slots.js';
import { confinementSupport, toolEnvironment, type ConfinementSupport } from './confinement.js';
import { defaultFfmpegBinaries, resolveFfmpegBinaries, type FfmpegBinaries } from './ffmpegBinaries.js';
import type { ProofReport } from './ffmpegProof.js';
import { BUILT_IN_CONTAINERS, VERDICT_FORMATS } from './demuxers.js';
import { isReferenceFormat, ProbeError, probe, probeMemoryLimit, type ProbeResult, type VideoInfo } from './probe.js';
import { ProbeMemo } from './probeMemo.js';
import { judgeSource, withAllowedTracks, type SourcePolicy } from './sourcePolicy.js';
import { TONE_MAPPING_FILTERS } from './toneMapping.js';

/**
 * How ffmpeg and ffprobe run here (media/confinement.ts): what the machine offers, the memory
 * cap asked for, and a warning for the admin when a confinement asked for is not applied.
 */
export interface ConfinementStatus extends ConfinementSupport {
  /** processing.memoryLimitBytes: 0 for none. */
  memoryLimitBytes: number;
  /** What is missing, for people; empty when nothing is. */
  warning: string;
}

/** What /healthz shows of the binaries: the pair in use and its proof, or why there is none; and how they run. */
export type FfmpegStatus = (
  | { ok: true; ffmpeg: FfmpegBinaries['ffmpeg']; ffprobe: FfmpegBinaries['ffprobe']; skipped: string[]; proof: ProofReport; toneMapping: ToneMappingStatus }
  | { ok: false; error: string }
) & { confinement: ConfinementStatus };

/** Whether the ffmpeg in use can tone-map HDR sources (media/toneMapping.ts), and what happens when not. */
export interface ToneMappingStatus {
  available: boolean;
  /** The filters it lacks (of TONE_MAPPING_FILTERS). */
  missing: string[];
  /** For people; empty when it can. */
  warning: string;
}

/** What processing decides about the runs and the sources (see {@link FfmpegTools.configure}). */
export interface MediaToolSettings {
  /** The sources taken on: allow-list and limits. */
  policy: SourcePolicy;
  /** Address-space cap of every ffmpeg and ffprobe run, in bytes; 0: none. */
  memoryLimitBytes: number;
}

/**
 * Each ffmpeg's filter names, by path, for the process: every server of a process (the tests
 * start hundreds) would otherwise load a distribution's ffmpeg again to ask, at some 50 ms of CPU.
 * The binaries themselves are resolved once a process too (ffmpegBinaries.ts).
 */
const FILTER_NAMES = new Map<string, Promise<Set<string>>>();

/**
 * The ffmpeg and ffprobe this server runs: the configured overrides, else the order of
 * preference of media/ffmpegBinaries.ts, proved on a sample of each common container.
 * Resolved when processing starts, in the background, so that the API serves even where ffmpeg
 * is missing (transcodes then fail with the reason, and /healthz says why). A success is kept; a
 * failure is not, so installing ffmpeg or fixing the setting takes effect without a restart.
 */
export class FfmpegTools {
  private resolved: Promise<FfmpegBinaries> | undefined;
  /**
   * At most as many probes at once as the machine has cores (at least 2): every upload is probed
   * as it arrives, and uploads arrive as fast as anyone sends them, so without a bound a burst of
   * crafted files runs a burst of ffprobes, each up to its memory cap. The others wait their turn.
   */
  private readonly probeSlots = new Slots(() => PROBES_AT_ONCE);
  /** Each ffprobe's demuxer names, for the allow-list's prefixes (formatsFor). */
  private readonly demuxers = new Map<string, Promise<string[]>>();
  private settings: MediaToolSettings | undefined;
  /** Sources' verdicts, so that a transcode does not probe again the file ingest just probed. */
  private readonly recent = new ProbeMemo();

  /**
   * `ffmpegPath`/`ffprobePath`: the processing options that override the order of preference;
   * `env`: where VOP_FFMPEG_PATH, VOP_FFPROBE_PATH and PATH are read (default: the process's).
   */
  constructor(private readonly overrides: { ffmpegPath?: string; ffprobePath?: string; env?: NodeJS.ProcessEnv }) {}

  /**
   * Sets the source policy and the memory cap. The tools are shared by ingest and processing
   * (one choice of binaries); processing owns these settings and sets them as it is created,
   * before the server listens. Until then no source is judged against a policy.
   */
  configure(settings: MediaToolSettings): void {
    this.settings = settings;
  }

  /** The memory cap runs get (0: none). */
  get memoryLimitBytes(): number {
    return this.settings?.memoryLimitBytes ?? 0;
  }

  binaries(): Promise<FfmpegBinaries> {
    if (!this.resolved) {
      const { ffmpegPath, ffprobePath, env } = this.overrides;
      const own = ffmpegPath || ffprobePath || env;
      const p = own ? resolveFfmpegBinaries({ ffmpegPath, ffprobePath, ...(env ? { env } : {}) }) : defaultFfmpegBinaries();
      this.resolved = p;
      p.catch(() => {
        if (this.resolved === p) this.resolved = undefined;
      });
    }
    return this.resolved;
  }

  /**
   * A verdict on `file` from the chosen ffprobe; when that one breaks on it (crashes, is killed,
   * times out), from each other ffprobe that runs, in order. A broken tool is never a verdict on
   * the file: when every ffprobe breaks, this throws a {@link ProbeError} that says so, which the
   * callers treat as a failure to retry, not as "not a video".
   *
   * A video is then judged as a source (media/sourcePolicy.ts): a container or codec off the
   * allow-list, or a picture, rate or length over the limits, is "not a video" with that reason.
   * `source: false` skips that: for files vop wrote itself (the renditions), and for the ladder's
   * read of a source that was taken on already.
   */
  async probe(file: string, options: { timeoutMs: number; source?: boolean }): Promise<ProbeResult> {
    const verdict = await this.probeRemembered(file, options.timeoutMs, options.source !== false);
    const policy = this.settings?.policy;
    if (!verdict.isVideo || options.source === false || !policy) return verdict;
    const refused = judgeSource(verdict, policy);
    return refused === null ? withAllowedTracks(verdict, policy) : { isVideo: false, reason: refused, formatName: verdict.formatName };
  }

  /** Why `info` is refused as a source under the settings' policy, or null when it is taken (or there is no policy). */
  judge(info: VideoInfo): string | null {
    const policy = this.settings?.policy;
    return policy ? judgeSource(info, policy) : null;
  }

  /**
   * ffprobe's verdict on `file`, or the one given on the same file a moment ago (ProbeMemo): the
   * transcode's probe of a file ingest has just probed costs a stat, and so does the ladder's,
   * which starts while other uploads' first renditions may still be made. Only sources' verdicts
   * are kept (`remember`): a rendition is probed once, just after it is written.
   */
  private async probeRemembered(file: string, timeoutMs: number, remember: boolean): Promise<ProbeResult> {
    const key = await this.recent.keyOf(file, JSON.stringify(this.settings?.policy.allowed.containers ?? null));
    const known = key === null ? undefined : this.recent.get(key);
    if (known) return known;
    const verdict = await this.probeSlots.run(() => this.probeOnly(file, timeoutMs));
    if (key !== null && remember) this.recent.set(key, verdict);
    return verdict;
  }

  private async probeOnly(file: string, timeoutMs: number): Promise<ProbeResult> {
    const b = await this.binaries().catch((err: Error) => {
      throw new ProbeError(`no usable ffprobe: ${err.message}`);
    });
    const failures: string[] = [];
    for (const ffprobe of [b.ffprobe, ...b.alternates.ffprobe]) {
      try {
        const formats = await this.formatsFor(ffprobe.path);
        return await probe(file, { ffprobePath: ffprobe.path, timeoutMs, memoryLimitBytes: probeMemoryLimit(this.memoryLimitBytes), formats });
      } catch (err) {
        if (!(err instanceof ProbeError) || err.failed === 'file') throw err;
        failures.push(err.message);
      }
    }
    throw new ProbeError(failures.length === 1 ? String(failures[0]) : `every ffprobe failed: ${failures.join(' ')}`);
  }

  /**
   * The demuxers a probe may open: the source policy's containers (a name ending in `*` stands
   * for every demuxer of this ffprobe it starts), the verdict formats, and never one that reads
   * other files (media/demuxers.ts).
   */
  private async formatsFor(ffprobePath: string): Promise<string[]> {
    const containers = this.settings?.policy.allowed.containers ?? BUILT_IN_CONTAINERS;
    const prefixes = containers.filter((c) => c.endsWith('*')).map((c) => c.slice(0, -1));
    const expanded = prefixes.length === 0 ? [] : (await this.demuxerNames(ffprobePath)).filter((d) => prefixes.some((p) => d.startsWith(p)));
    const all = [...containers.filter((c) => !c.endsWith('*')), ...expanded, ...VERDICT_FORMATS];
    return [...new Set(all)].filter((f) => !isReferenceFormat(f));
  }

  /** Every demuxer name this ffprobe knows (`-demuxers`), asked once per binary. */
  private demuxerNames(ffprobePath: string): Promise<string[]> {
    let names = this.demuxers.get(ffprobePath);
    if (!names) {
      names = new Promise<string[]>((resolve) => {
        execFile(ffprobePath, ['-hide_banner', '-demuxers'], { timeout: 10_000, windowsHide: true, env: toolEnvironment() }, (err, stdout) => {
          // Listed after the "--" line as " D  name[,name…]  description".
          const rows = err ? [] : stdout.split('\n').slice(stdout.split('\n').findIndex((l) => l.trim() === '--') + 1);
          resolve(rows.flatMap((l) => /^\s*D\S*\s+(\S+)/.exec(l)?.[1]?.split(',') ?? []));
        });
      });
      this.demuxers.set(ffprobePath, names);
    }
    return names;
  }

  /**
   * Whether the chosen ffmpeg has the filters tone mapping needs (Debian's and most builds with
   * libzimg do; static builds without it do not). Never throws: no ffmpeg is "not available".
   */
  async toneMapping(): Promise<ToneMappingStatus> {
    const b = await this.binaries().catch(() => undefined);
    const have = b ? await this.filterNames(b.ffmpeg.path) : new Set<string>();
    const missing = TONE_MAPPING_FILTERS.filter((f) => !have.has(f));
    return {
      available: missing.length === 0,
      missing,
      warning:
        missing.length === 0
          ? ''
          : `the ffmpeg in use lacks the ${missing.join(' and ')} filter${missing.length > 1 ? 's' : ''} tone mapping needs: HDR sources (HLG, PQ) are converted without it and look washed out; use an ffmpeg built with libzimg (processing.ffmpegPath)`,
    };
  }

  /** Every filter name this ffmpeg knows (`-filters`), asked once per binary and process. */
  private filterNames(ffmpegPath: string): Promise<Set<string>> {
    let names = FILTER_NAMES.get(ffmpegPath);
    if (!names) {
      names = new Promise<Set<string>>((resolve) => {
        execFile(ffmpegPath, ['-hide_banner', '-filters'], { timeout: 10_000, windowsHide: true, env: toolEnvironment() }, (err, stdout) => {
          // A failure (a run timed out on a loaded machine) is asked again next time, not kept.
          if (err) FILTER_NAMES.delete(ffmpegPath);
          // Listed as " TSC name  V->V  description" after the legend.
          resolve(new Set(err ? [] : stdout.split('\n').flatMap((l) => /^\s*[.A-Z|]{3}\s+(\S+)\s+\S+->\S+/.exec(l)?.[1] ?? [])));
        });
      });
      FILTER_NAMES.set(ffmpegPath, names);
    }
    return names;
  }

  /** For /healthz: never throws. */
  async status(): Promise<FfmpegStatus> {
    const confinement = this.confinement();
    try {
      const b = await this.binaries();
      return { ok: true, ffmpeg: b.ffmpeg, ffprobe: b.ffprobe, skipped: b.skipped, proof: b.proof, toneMapping: await this.toneMapping(), confinement };
    } catch (err) {
      return { ok: false, error: (err as Error).message, confinement };
    }
  }

  /** How runs are confined here, with a warning for what was asked and is not available. */
  confinement(): ConfinementStatus {
    const support = confinementSupport();
    const memoryLimitBytes = this.memoryLimitBytes;
    const missing: string[] = [];
    if (memoryLimitBytes > 0 && !support.memoryCap) missing.push('no memory cap: prlimit (util-linux) is not available, so processing.memoryLimitBytes is not applied');
    if (!support.noNewPrivileges) missing.push('ffmpeg runs with the server\'s privileges: setpriv (util-linux) is not available');
    return { ...support, memoryLimitBytes, warning: missing.length > 0 ? `${missing.join('; ')}.` : '' };
  }
}

/** Probes at once (see FfmpegTools.probeSlots). */
const PROBES_AT_ONCE = Math.max(2, os.availableParallelism());
