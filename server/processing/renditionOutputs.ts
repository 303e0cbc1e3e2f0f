/**
 * The playable MP4s of one video (issue 4, item 3): the ladder's rungs from one ffmpeg run, or
 * the kept source as the only rendition. They are written into the attempt's scratch folder and
 * stored (`play/<date>/<file>`) by the transcode job only once every output of the attempt is
 * complete, so delivery never sees half a file, nor a file of a failed attempt.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { run, type FfmpegProgress } from '../media/ffmpegRunner.js';
import type { PauseGroup } from '../media/pauseGroup.js';
import { pickRungs, type LadderOptions, type Rendition } from '../media/ladder.js';
import type { ProbeResult, VideoInfo } from '../media/probe.js';
import { readSpsUnits } from '../media/h264Sps.js';
import { buildCopyArgs, copiedInfo, judgeCopiedSps, largestSps, type CopiedAudio } from '../media/streamCopy.js';
import { buildTranscodeArgs, sourceRendition, type KeyframePlan, type TranscodeOptions } from '../media/transcodeArgs.js';
import { playFileName, SOURCE_LABEL, sourceExtension } from './mediaNames.js';

/** How the ffmpeg runs of one job are made: which binaries, cancellation, orphan tracking. */
export interface FfmpegRunContext {
  ffmpegPath: string;
  /** Probes a written file (FfmpegTools.probe: the other ffprobe when the chosen one breaks). */
  probe: (file: string, options: { timeoutMs: number }) => Promise<ProbeResult>;
  /** Aborted on cancel and shutdown. */
  signal: AbortSignal;
  /** The server's record of live ffmpeg processes (killOrphans at the next start). */
  pidFile: string;
  probeTimeoutMs: number;
  /** Cap on each ffmpeg run's address space in bytes (processing.memoryLimitBytes); 0: none. */
  memoryLimitBytes: number;
  /** CPU niceness of the runs (the ladder's give way to first renditions); absent: the server's. */
  niceness?: number;
  /** Whether this ffmpeg can tone-map HDR sources (FfmpegTools.toneMapping). */
  toneMapping: boolean;
  /** Stops the runs while first renditions are made (the ladder's; media/pauseGroup.ts); absent: never stopped. */
  pauseGroup?: PauseGroup;
}

/** One rendition once written. */
export interface WrittenRendition {
  /** BitrateLabel, e.g. "720p". */
  label: string;
  width: number;
  height: number;
  /** Measured overall bitrate of the file (video plus audio), kbps. */
  bitrateKbps: number;
  /** `<date_folder>/<file_name>` inside the `play` area (spec 2.5 VideoURL). */
  file: string;
  /** Absolute path in the attempt's scratch folder, until the job stores it. */
  path: string;
  bytes: number;
  /**
   * The file as ffprobe sees it (codec profile and level for the HLS CODECS attribute); for a copy,
   * as media/streamCopy.ts `copiedInfo` works it out without probing it.
   */
  info: VideoInfo;
}

export interface RenditionJob {
  videoId: string;
  /** Absolute path of the stored source. */
  source: string;
  /** The source's probe. */
  info: VideoInfo;
  /** `YYYYMMDD`: the day the transcode ran. */
  dateFolder: string;
  /** The attempt's scratch folder, where the files are written. */
  outDir: string;
  ffmpeg: FfmpegRunContext;
}

/**
 * Transcodes the source to `rungs` (by default every rung of the ladder at or below its size), in
 * one ffmpeg run (the source is decoded once; see media/transcodeArgs.ts), with keyframes where
 * `keys` asks (the cuts of the HLS variants already listed). Resolves with the
 * renditions, largest first. On failure the partial files stay in `outDir` for the job to remove.
 */
export async function transcodeRenditions(
  job: RenditionJob,
  ladder: LadderOptions,
  transcode: TranscodeOptions,
  onProgress: (p: FfmpegProgress) => void,
  rungs: readonly Rendition[] = pickRungs(job.info, ladder),
  keys: KeyframePlan = {},
): Promise<WrittenRendition[]> {
  const { videoId, source, info, dateFolder, outDir, ffmpeg } = job;
  const outs = rungs.map((rendition) => ({ rendition, name: playFileName(videoId, rendition.label, 'mp4') }));
  // A failed run's outputs stay in the scratch folder, which the job removes.
  await run(
    buildTranscodeArgs(source, info, outs.map((o) => ({ rendition: o.rendition, path: path.join(outDir, o.name) })), { ...transcode, toneMapping: transcode.toneMapping && ffmpeg.toneMapping }, keys),
    { ...runOptions(ffmpeg), durationSeconds: info.durationSeconds, onProgress },
  );
  return Promise.all(outs.map(({ rendition, name }) => describe(path.join(outDir, name), `${dateFolder}/${name}`, rendition, job)));
}

/**
 * The source's streams copied into a faststart MP4 (media/streamCopy.ts), as the rendition
 * `rendition` names: the first rendition of a source browsers play as it is. Its bitrate is the
 * file's measured rate (the HLS master playlist measures its segments: hlsPackaging.ts).
 */
export async function copyRendition(
  job: RenditionJob,
  rendition: Rendition,
  audio: CopiedAudio,
  o: { audioChannels: number },
  onProgress: (p: FfmpegProgress) => void,
  /** Told the copy's file once it is judged faithful: what may start on it. */
  onCopied?: (file: string) => void,
): Promise<WrittenRendition> {
  const { videoId, source, info, dateFolder, outDir, ffmpeg } = job;
  const name = playFileName(videoId, rendition.label, 'mp4');
  const file = path.join(outDir, name);
  // Beside the copy in the scratch folder, never stored.
  const spsFile = path.join(outDir, `${name}.sps.h264`);
  await run(buildCopyArgs(source, info, file, audio, { audioBitrateKbps: rendition.audioBitrateKbps, audioChannels: o.audioChannels }, spsFile), {
    ...runOptions(ffmpeg),
    durationSeconds: info.durationSeconds,
    onProgress,
  });
  const sps = readSpsUnits(await fsp.readFile(spsFile));
  await fsp.rm(spsFile, { force: true });
  const unfaithful = judgeCopiedSps(sps);
  if (unfaithful !== null) {
    await fsp.rm(file, { force: true });
    throw new CopyRefused(unfaithful, largestSps(sps.sps));
  }
  onCopied?.(file);
  // Not probed again: what the probe would say is known (copiedInfo).
  const copied = copiedInfo(info, audio, { audioChannels: o.audioChannels });
  return written(file, `${dateFolder}/${name}`, { label: rendition.label, width: copied.width, height: copied.height }, copied);
}

/**
 * A copy that is not what the source's probe said (media/streamCopy.ts, judgeCopiedSps): the
 * source is encoded instead, its largest picture judged against the limits first.
 */
export class CopyRefused extends Error {
  override name = 'CopyRefused';
  constructor(
    readonly why: string,
    /** The largest picture an SPS of the stream gives; null when none could be read. */
    readonly largest: { width: number; height: number } | null,
  ) {
    super(`the source was not copied: ${why}`);
  }
}

/** What every run of the job shares: the binary, its cancel, its record, its caps. */
export function runOptions(ffmpeg: FfmpegRunContext) {
  return { ffmpegPath: ffmpeg.ffmpegPath, signal: ffmpeg.signal, pidFile: ffmpeg.pidFile, memoryLimitBytes: ffmpeg.memoryLimitBytes, niceness: ffmpeg.niceness, pauseGroup: ffmpeg.pauseGroup };
}

/**
 * needHandleSepcial: the source, byte for byte, as the only rendition (no re-encoding), under an
 * extension that matches its container so it is served with a content type players know.
 */
export async function keepSourceRendition(job: RenditionJob): Promise<WrittenRendition> {
  const { videoId, source, info, dateFolder, outDir } = job;
  const name = playFileName(videoId, SOURCE_LABEL, sourceExtension(info.formatName, info.videoCodec));
  const file = path.join(outDir, name);
  // A reflink where the file system has them (instant, no extra space), a copy elsewhere.
  await fsp.copyFile(source, file, fs.constants.COPYFILE_FICLONE);
  job.ffmpeg.signal.throwIfAborted();
  return written(file, `${dateFolder}/${name}`, sourceRendition(info), info);
}

async function describe(file: string, relative: string, r: Rendition, job: RenditionJob): Promise<WrittenRendition> {
  const info = await job.ffmpeg.probe(file, { timeoutMs: job.ffmpeg.probeTimeoutMs });
  if (!info.isVideo) throw new Error(`rendition ${r.label} is not playable: ${info.reason}`);
  return written(file, relative, r, info);
}

/** A file written into the scratch folder as the rendition `r` names it (`relative` in the play area), with its size and measured rate. */
async function written(file: string, relative: string, r: Pick<Rendition, 'label' | 'width' | 'height'>, info: VideoInfo): Promise<WrittenRendition> {
  const bytes = (await fsp.stat(file)).size;
  return { label: r.label, width: r.width, height: r.height, bitrateKbps: measuredKbps(info, bytes), file: relative, path: file, bytes, info };
}

/** The file's overall bitrate: ffprobe's, or else its size over its duration. */
function measuredKbps(info: VideoInfo, bytes: number): number {
  return info.bitrateKbps ?? Math.round((bytes * 8) / Math.max(0.001, info.durationSeconds) / 1000);
}
