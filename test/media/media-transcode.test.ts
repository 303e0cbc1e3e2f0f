import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { atomicOutput } from '../../server/storage/atomicFile.js';
import { run, type FfmpegProgress } from '../../server/media/ffmpegRunner.js';
import { alignedWith, buildHlsArgs, buildMasterPlaylist, buildVariantPlaylist, cutsOf, hlsCodecs, parseSegmentList, resolveHlsOptions, SEGMENT_LIST_NAME } from '../../server/media/hls.js';
import { pickRungs, resolveLadderOptions, type Rendition } from '../../server/media/ladder.js';
import type { VideoInfo } from '../../server/media/probe.js';
import { probe } from '../helpers/probe.js';
import { buildTranscodeArgs, resolveTranscodeOptions } from '../../server/media/transcodeArgs.js';
import { makeClip, makeTempDir, mp4TopLevelBoxes } from '../helpers/clips.js';

const FAST = resolveTranscodeOptions({ preset: 'ultrafast' });

async function probeVideo(file: string): Promise<VideoInfo> {
  const info = await probe(file);
  if (!info.isVideo) throw new Error(`${file}: ${info.reason}`);
  return info;
}

/** Transcodes `clip` to `renditions` the way a job would: temporary names, renamed when complete. */
async function transcode(clip: string, renditions: Rendition[], dir: string, onProgress?: (p: FfmpegProgress) => void) {
  const source = await probeVideo(clip);
  const outs = renditions.map((r) => ({ rendition: r, out: atomicOutput(path.join(dir, `${r.label}.mp4`)) }));
  await run(buildTranscodeArgs(clip, source, outs.map((o) => ({ rendition: o.rendition, path: o.out.tmpPath })), FAST), {
    durationSeconds: source.durationSeconds,
    onProgress,
  });
  for (const o of outs) await o.out.commit();
  return { source, files: outs.map((o) => o.out.finalPath) };
}

/** What every rendition must be: H.264 + AAC MP4 at the planned size, same duration, index first. */
async function expectRendition(file: string, r: Rendition, source: VideoInfo) {
  const info = await probeVideo(file);
  expect(info.videoCodec).toBe('h264');
  expect(info.audioCodec).toBe(source.audioCodec === null ? null : 'aac');
  expect(info.formatName).toContain('mp4');
  expect({ width: info.width, height: info.height, rotation: info.rotation }).toEqual({ width: r.width, height: r.height, rotation: 0 });
  expect(Math.abs(info.durationSeconds - source.durationSeconds)).toBeLessThan(0.1);
  // +faststart: the index (moov) comes before the media data (mdat), so playback can start at once.
  const boxes = mp4TopLevelBoxes(file);
  const moov = boxes.find((b) => b.type === 'moov');
  const mdat = boxes.find((b) => b.type === 'mdat');
  expect(moov && mdat, `boxes: ${boxes.map((b) => b.type).join(',')}`).toBeTruthy();
  expect(moov!.offset).toBeLessThan(mdat!.offset);
  return info;
}

describe('transcoding with real ffmpeg', () => {
  it('transcodes a 2 s 640x360 clip to its default ladder (one 360p rung)', async () => {
    const dir = makeTempDir();
    const clip = await makeClip({ seconds: 2, width: 640, height: 360 });
    const renditions = pickRungs({ width: 640, height: 360 });
    expect(renditions.map((r) => r.label)).toEqual(['360p']);
    const { source, files } = await transcode(clip, renditions, dir);
    await expectRendition(files[0]!, renditions[0]!, source);
    expect(fs.readdirSync(dir)).toEqual(['360p.mp4']); // nothing temporary left behind
  });

  it('makes several rungs in one ffmpeg run, reporting increasing progress', async () => {
    const dir = makeTempDir();
    const clip = await makeClip({ seconds: 2, width: 640, height: 360 });
    const ladder = resolveLadderOptions({
      rungs: [
        { label: '360p', shortSide: 360, videoBitrateKbps: 800 },
        { label: '240p', shortSide: 240, videoBitrateKbps: 400 },
        { label: '144p', shortSide: 144, videoBitrateKbps: 150 },
      ],
    });
    const renditions = pickRungs({ width: 640, height: 360 }, ladder);
    expect(renditions.map((r) => `${r.width}x${r.height}`)).toEqual(['640x360', '426x240', '256x144']);
    const reports: FfmpegProgress[] = [];
    const { source, files } = await transcode(clip, renditions, dir, (p) => reports.push(p));
    for (const [i, f] of files.entries()) await expectRendition(f, renditions[i]!, source);
    expect(reports.length).toBeGreaterThanOrEqual(1);
    expect(reports.at(-1)).toMatchObject({ percent: 100, done: true, etaSeconds: 0 });
    for (let i = 1; i < reports.length; i++) expect(reports[i]!.percent!).toBeGreaterThanOrEqual(reports[i - 1]!.percent!);
  });

  it('turns a rotated clip upright: the output has the displayed size and no rotation', async () => {
    const dir = makeTempDir();
    const clip = await makeClip({ seconds: 1, width: 320, height: 180, rotate: 90 });
    const source = await probeVideo(clip);
    expect({ w: source.width, h: source.height }).toEqual({ w: 180, h: 320 });
    const renditions = pickRungs(source);
    const { files } = await transcode(clip, renditions, dir);
    await expectRendition(files[0]!, { ...renditions[0]!, width: 180, height: 320 }, source);
  });

  it('transcodes an odd-sized, silent clip to even sizes without an audio track', async () => {
    const dir = makeTempDir();
    const clip = await makeClip({ seconds: 1, width: 427, height: 241, audio: false });
    const source = await probeVideo(clip);
    const renditions = pickRungs(source);
    expect(renditions.map((r) => `${r.width}x${r.height}`)).toEqual(['426x240']);
    const { files } = await transcode(clip, renditions, dir);
    const out = await expectRendition(files[0]!, renditions[0]!, source);
    expect(out.audioCodec).toBeNull();
  });

  it('repackages renditions as HLS variants with a master playlist that ffmpeg can play', async () => {
    const dir = makeTempDir();
    const clip = await makeClip({ seconds: 3, width: 640, height: 360 });
    const ladder = resolveLadderOptions({
      rungs: [
        { label: '360p', shortSide: 360, videoBitrateKbps: 800 },
        { label: '180p', shortSide: 180, videoBitrateKbps: 250 },
      ],
    });
    const renditions = pickRungs({ width: 640, height: 360 }, ladder);
    const { files } = await transcode(clip, renditions, dir);

    const hlsDir = atomicOutput(path.join(dir, 'hls'), { directory: true });
    const variants = renditions.map((r, i) => ({ input: files[i]!, dir: path.join(hlsDir.tmpPath, r.label) }));
    for (const v of variants) fs.mkdirSync(v.dir);
    const hls = resolveHlsOptions({ segmentSeconds: 2 });
    // The first variant sets the cuts at its keyframes; the second is cut at the same times.
    await run(buildHlsArgs([variants[0]!], hls));
    const first = parseSegmentList(fs.readFileSync(path.join(variants[0]!.dir, SEGMENT_LIST_NAME), 'utf8'));
    await run(buildHlsArgs([{ ...variants[1]!, cuts: cutsOf(first), toleranceSeconds: 0.02 }], hls));
    const second = parseSegmentList(fs.readFileSync(path.join(variants[1]!.dir, SEGMENT_LIST_NAME), 'utf8'));
    expect(first.length).toBeGreaterThan(1);
    expect(alignedWith(second, cutsOf(first), 0.02)).toBe(true);

    const master = [];
    for (const [i, r] of renditions.entries()) {
      const info = await probeVideo(files[i]!);
      master.push({ uri: `${r.label}/index.m3u8`, bandwidthBps: (r.videoBitrateKbps + r.audioBitrateKbps) * 1000, width: r.width, height: r.height, codecs: hlsCodecs(info) });
      const segments = parseSegmentList(fs.readFileSync(path.join(variants[i]!.dir, SEGMENT_LIST_NAME), 'utf8'));
      fs.rmSync(path.join(variants[i]!.dir, SEGMENT_LIST_NAME));
      const playlist = buildVariantPlaylist(segments);
      expect(playlist).toContain('#EXT-X-PLAYLIST-TYPE:VOD');
      expect(playlist).toContain('#EXT-X-ENDLIST');
      expect(playlist).toMatch(/seg_00000\.ts/);
      fs.writeFileSync(path.join(variants[i]!.dir, 'index.m3u8'), playlist);
    }
    const masterText = buildMasterPlaylist(master);
    // (ultrafast turns off what High profile adds, so x264 reports Constrained Baseline here.)
    expect(masterText).toMatch(/CODECS="avc1\.[0-9a-f]{6},mp4a\.40\.2"/);
    fs.writeFileSync(path.join(hlsDir.tmpPath, 'master.m3u8'), masterText);
    await hlsDir.commit();

    // The proof: ffmpeg reads the master playlist and decodes it to the end.
    const played = await run(['-i', path.join(hlsDir.finalPath, 'master.m3u8'), '-map', '0:v:0', '-f', 'null', '-'], { durationSeconds: 3 });
    expect(played.stderrTail).not.toMatch(/error/i);
  });
});
