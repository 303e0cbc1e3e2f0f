import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { buildCoverArgs, buildKeyframeSamplesArgs, buildKeyframeScanArgs, scansKeyframes, SCAN_BUDGET, buildResizeCoverSetArgs, buildWindowSamplesArgs, COVER_SIZES, extractCover, FALLBACK_WINDOW_SECONDS, isBlankFrame, lumaStats, pickCoverTime, resizeCover } from '../../server/media/cover.js';
import { run } from '../../server/media/ffmpegRunner.js';
import { imageLuma, makeClip, makeTempDir, testBinaries } from '../helpers/clips.js';

/** Pixel size of an image, straight from ffprobe (probe() rightly calls an image "not a video"). */
async function imageSize(file: string): Promise<{ width: number; height: number }> {
  const { ffprobe } = await testBinaries();
  const { stdout } = await promisify(execFile)(ffprobe.path, ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'stream=width,height', '-of', 'json', file]);
  const s = (JSON.parse(stdout) as { streams: Array<{ width: number; height: number }> }).streams[0]!;
  return { width: s.width, height: s.height };
}

/** An image's luma, one byte a pixel. */
async function grayBytes(image: string): Promise<Buffer> {
  const { ffmpeg } = await testBinaries();
  const { stdout } = await promisify(execFile)(ffmpeg.path, ['-v', 'error', '-i', image, '-f', 'rawvideo', '-pix_fmt', 'gray', 'pipe:1'], { encoding: 'buffer', maxBuffer: 16 << 20 });
  return stdout;
}

/** A clip whose keyframes x264 places every `gop` frames (x264's default is 250), opening on `black` seconds of black. */
async function gopClip(dir: string, o: { seconds: number; gop: number; black: number; fps?: number }): Promise<string> {
  const fps = o.fps ?? 30;
  const file = path.join(dir, `gop${o.gop}-${o.seconds}s.mp4`);
  await run([
    '-f', 'lavfi', '-i', `color=c=black:s=640x360:r=${fps}:d=${o.black}`,
    '-f', 'lavfi', '-i', `testsrc2=s=640x360:r=${fps}:d=${o.seconds - o.black}`,
    '-filter_complex', '[0:v][1:v]concat=n=2:v=1:a=0[v]', '-map', '[v]',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-g', String(o.gop), '-sc_threshold', '0', '-pix_fmt', 'yuv420p', '-y', file,
  ]);
  return file;
}

describe('covers from keyframes', () => {
  it('takes every moment from its keyframe in one ffmpeg run, with keyframes every 8.3 s (x264 defaults), skipping a black opening', async () => {
    const dir = makeTempDir();
    const clip = await gopClip(dir, { seconds: 60, gop: 250, black: 7 });
    const out = path.join(dir, 'cover.jpg');
    const chosen = await extractCover(clip, out, 60);
    // The keyframe run, then the cover's JPEG from the chosen picture.
    expect(chosen.runs).toBe(2);
    expect(chosen.blank).toBe(false);
    expect(await imageSize(out)).toEqual({ width: 640, height: 360 });
    const luma = await imageLuma(out);
    expect(luma.mean).toBeGreaterThan(40);
    expect(luma.stdDev).toBeGreaterThan(10);
    // Only the cover is left: no candidate picture, no sample.
    expect(fs.readdirSync(dir).sort()).toEqual([path.basename(clip), 'cover.jpg'].sort());
  });

  it('samples the first moment (in the black opening) as blank from its keyframe, and keeps a picture', async () => {
    const dir = makeTempDir();
    const clip = await gopClip(dir, { seconds: 20, gop: 30, black: 3 });
    const { chosen, samples, runs } = await pickCoverTime(clip, 20);
    expect(runs).toBe(1);
    expect(samples).toHaveLength(6);
    expect(samples[0]!.blank).toBe(true);
    expect(chosen.blank).toBe(false);
  });

  it('takes the moments no keyframe reaches (a single keyframe) from the start window, decoded once: two runs in all', async () => {
    const dir = makeTempDir();
    const clip = await gopClip(dir, { seconds: 6, gop: 100_000, black: 1 });
    const out = path.join(dir, 'cover.jpg');
    const chosen = await extractCover(clip, out, 6);
    // The keyframe run and the window's; the cover is one of their pictures, encoded in a third.
    expect(chosen.runs).toBe(3);
    expect(chosen.blank).toBe(false);
    expect((await imageLuma(out)).stdDev).toBeGreaterThan(10);
    expect(fs.readdirSync(dir).sort()).toEqual([path.basename(clip), 'cover.jpg'].sort());
  });

  it('takes every moment of a long video with a single keyframe from its first 10 s, and still finds a picture', async () => {
    const dir = makeTempDir();
    const clip = await gopClip(dir, { seconds: 40, gop: 100_000, black: 2 });
    const { chosen, samples, runs } = await pickCoverTime(clip, 40);
    expect(runs).toBe(2);
    // No moment has a keyframe before the next: all six spread over the first 10 s, the first in the black opening.
    expect(samples).toHaveLength(6);
    expect(samples.slice(1).every((s) => s.atSeconds <= FALLBACK_WINDOW_SECONDS)).toBe(true);
    expect(samples[0]!.blank).toBe(true);
    expect(chosen.blank).toBe(false);
    expect(new Set(samples.map((s) => s.atSeconds)).size).toBe(6);
  });

  it('reads the start window once, from its first frame, for the moments it gives', () => {
    const args = buildWindowSamplesArgs('/m/src.ts', 10, [
      { atSeconds: 2.5, sample: '/w/w0.gray', cover: '/w/w0.jpg' },
      { atSeconds: 5, sample: '/w/w1.gray', cover: '/w/w1.jpg' },
    ], { inputFormat: 'mpegts' });
    expect(args.filter((a) => a === '-i')).toHaveLength(1);
    expect(args.slice(0, args.indexOf('-i'))).toEqual(expect.arrayContaining(['-t', '10.000', '-f', 'mpegts']));
    expect(args).not.toContain('-skip_frame');
    const graph = args[args.indexOf('-filter_complex') + 1]!;
    expect(graph).toContain('setpts=PTS-STARTPTS,split=2[w0][w1]');
    expect(graph).toContain('[w1]trim=start=5.000,trim=end_frame=1');
    // Deinterlaced where the frames around the moment still reach the filter, not as a lone frame.
    const interlaced = buildWindowSamplesArgs('/m/src.vob', 1, [{ atSeconds: 0.5, sample: '/w/w0.gray', cover: '/w/w0.jpg' }], { deinterlace: true });
    expect(interlaced[interlaced.indexOf('-filter_complex') + 1]).toMatch(/\[w0\]trim=start=0\.500,bwdif=[^;\[]*,trim=end_frame=1,split=2/);
  });

  it('scans a short source once and finds the same keyframes as one seek per moment', async () => {
    const dir = makeTempDir();
    const clip = await gopClip(dir, { seconds: 30, gop: 75, black: 6 });
    const picture = { width: 640, height: 360 };
    expect(scansKeyframes(30, picture)).toBe(true);
    const scanned = await pickCoverTime(clip, 30, { picture });
    const sought = await pickCoverTime(clip, 30);
    expect(scanned.runs).toBe(1);
    expect(scanned.samples).toEqual(sought.samples);
    expect(scanned.samples[0]!.blank).toBe(true);
    expect(scanned.chosen).toEqual(sought.chosen);
    expect(scanned.chosen.blank).toBe(false);
  });

  it('scans up to a minute of 1080p, and seeks one input per moment beyond it', () => {
    expect(scansKeyframes(60, { width: 1920, height: 1080 })).toBe(true);
    expect(scansKeyframes(61, { width: 1920, height: 1080 })).toBe(false);
    expect(scansKeyframes(15, { width: 3840, height: 2160 })).toBe(true);
    expect(scansKeyframes(SCAN_BUDGET, { width: 1, height: 1 })).toBe(true);
    expect(scansKeyframes(1, undefined)).toBe(false);
    const args = buildKeyframeScanArgs('/m/src.mp4', [
      { atSeconds: 6, withinSeconds: 9, sample: '/m/k0.gray', cover: '/m/k0.jpg' },
      { atSeconds: 15, withinSeconds: 45, sample: '/m/k1.gray', cover: '/m/k1.jpg' },
    ]);
    expect(args.filter((a) => a === '-i')).toHaveLength(1);
    expect(args.slice(0, args.indexOf('-i'))).toEqual(expect.arrayContaining(['-skip_frame', 'nokey', '-ss', '6.000', '-threads', '1']));
    const graph = args[args.indexOf('-filter_complex') + 1]!;
    // Times count from the first moment, where the input seeks.
    expect(graph).toContain('[s0]trim=start=0.000:end=9.000,trim=end_frame=1');
    expect(graph).toContain('[s1]trim=start=9.000:end=54.000,trim=end_frame=1');
    // Deinterlaced between the trims, where the frames after the keyframe still reach it.
    const interlaced = buildKeyframeScanArgs('/m/src.avi', [{ atSeconds: 0.4, withinSeconds: 0.6, sample: '/m/k0.gray', cover: '/m/k0.jpg' }], { deinterlace: true });
    expect(interlaced[interlaced.indexOf('-filter_complex') + 1]).toMatch(/\[s0\]trim=start=0\.000:end=0\.600,bwdif=[^;\[]*,trim=end_frame=1,split=2/);
  });

  it('reads only keyframes, each within reach of its moment', () => {
    const args = buildKeyframeSamplesArgs('/m/src.mp4', [
      { atSeconds: 0, withinSeconds: 6, sample: '/m/k0.gray', cover: '/m/k0.jpg' },
      { atSeconds: 6, withinSeconds: 9, sample: '/m/k1.gray', cover: '/m/k1.jpg' },
    ]);
    expect(args.filter((a) => a === 'nokey')).toHaveLength(2);
    expect(args[args.indexOf('-ss') + 1]).toBe('6.000');
    expect(args[args.indexOf('-filter_complex') + 1]).toContain('[1:v:0]trim=end=9.000:end_frame=1');
  });
});

describe('covers', () => {
  it('deinterlaces the cover frame when asked (a source not known progressive), before squaring the pixels', () => {
    const vf = (deinterlace: boolean) => {
      const args = buildCoverArgs('/media/src.vob', 1, '/media/cover.jpg', 2, deinterlace);
      return args[args.indexOf('-vf') + 1];
    };
    expect(vf(false)).toBe('scale=iw*sar:ih,setsar=1');
    expect(vf(true)).toBe('bwdif=mode=send_frame:parity=auto:deint=interlaced,scale=iw*sar:ih,setsar=1');
  });

  it('skips a black opening and saves a full-size JPEG of a real picture', async () => {
    const dir = makeTempDir();
    const clip = await makeClip({ seconds: 3, width: 320, height: 180, blackLeadSeconds: 1 });
    expect((await imageLuma(clip)).mean, 'the clip really opens on black').toBeLessThan(5);

    const { chosen, samples } = await pickCoverTime(clip, 3);
    expect(samples.some((s) => s.blank), 'some samples fell in the black second').toBe(true);
    expect(chosen.atSeconds).toBeGreaterThanOrEqual(1);
    expect(chosen.blank).toBe(false);

    const cover = path.join(dir, 'cover.jpg');
    await extractCover(clip, cover, 3);
    expect(await imageSize(cover)).toEqual({ width: 320, height: 180 });
    const luma = await imageLuma(cover);
    expect(luma.mean).toBeGreaterThan(40);
    expect(luma.stdDev).toBeGreaterThan(10);
  });

  it('still gives a cover when the whole video is black', async () => {
    const clip = await makeClip({ seconds: 2, width: 160, height: 90, blackLeadSeconds: 1.9 });
    const { chosen } = await pickCoverTime(clip, 1.5, { sampleFractions: [0.2, 0.5] });
    expect(chosen.blank).toBe(true);
    const cover = path.join(makeTempDir(), 'black.jpg');
    await extractCover(clip, cover, 1.5, { sampleFractions: [0.2, 0.5] });
    expect(await imageSize(cover)).toEqual({ width: 160, height: 90 });
  });

  it('resizes to exactly each size of spec section 2.3, cropping to fill', async () => {
    const dir = makeTempDir();
    const clip = await makeClip({ seconds: 1, width: 320, height: 180 });
    const cover = path.join(dir, 'cover.jpg');
    await extractCover(clip, cover, 1);
    expect(Object.keys(COVER_SIZES)).toEqual(['2', '3', '4', '5', '6', '7']);
    await Promise.all(
      Object.entries(COVER_SIZES).map(async ([t, size]) => {
        const out = path.join(dir, `cover-t${t}.jpg`);
        await resizeCover(cover, out, size.width, size.height);
        expect(await imageSize(out), `t=${t}`).toEqual(size);
        expect((await imageLuma(out)).stdDev, `t=${t} is a picture, not a blank`).toBeGreaterThan(10);
      }),
    );
  });

  it('makes the cover and every size in the run that encodes the chosen picture, and leaves nothing else', async () => {
    const dir = makeTempDir();
    const clip = await gopClip(dir, { seconds: 20, gop: 60, black: 3 });
    const out = path.join(dir, 'cover.jpg');
    const sizes = Object.entries(COVER_SIZES).map(([t, size]) => ({ path: path.join(dir, `t${t}.jpg`), ...size }));
    const chosen = await extractCover(clip, out, 20, { picture: { width: 640, height: 360 } }, sizes);
    expect(chosen.runs).toBe(2);
    expect(chosen.blank).toBe(false);
    expect(await imageSize(out)).toEqual({ width: 640, height: 360 });
    expect((await imageLuma(out)).stdDev).toBeGreaterThan(10);
    for (const o of sizes) {
      expect(await imageSize(o.path), o.path).toEqual({ width: o.width, height: o.height });
      expect((await imageLuma(o.path)).stdDev, `${o.path} is a picture`).toBeGreaterThan(10);
    }
    expect(fs.readdirSync(dir).sort()).toEqual([path.basename(clip), 'cover.jpg', ...sizes.map((o) => path.basename(o.path))].sort());
  });

  it('makes every size in one ffmpeg run, each exactly as a run of its own does', async () => {
    const dir = makeTempDir();
    const clip = await makeClip({ seconds: 1, width: 320, height: 180 });
    const cover = path.join(dir, 'cover.jpg');
    await extractCover(clip, cover, 1);
    const outs = Object.entries(COVER_SIZES).map(([t, size]) => ({ path: path.join(dir, `set-t${t}.jpg`), ...size }));
    await run(buildResizeCoverSetArgs(cover, outs));
    for (const o of outs) {
      expect(await imageSize(o.path), o.path).toEqual({ width: o.width, height: o.height });
      expect((await imageLuma(o.path)).stdDev, `${o.path} is a picture, not a blank`).toBeGreaterThan(10);
    }
    expect(() => buildResizeCoverSetArgs(cover, [])).toThrow(/No cover sizes/);
  });

  it('halves a large cover before its sizes, and they come out as lanczos from the whole picture makes them', async () => {
    const dir = makeTempDir();
    const picture = path.join(dir, 'cover.jpg');
    await run(['-f', 'lavfi', '-i', 'testsrc2=s=1920x1080:d=0.04', '-frames:v', '1', '-q:v', '2', '-y', picture]);
    const sizes = (prefix: string) => Object.entries(COVER_SIZES).map(([t, size]) => ({ path: path.join(dir, `${prefix}${t}.jpg`), ...size }));
    const halved = buildResizeCoverSetArgs(picture, sizes('h'));
    const graph = halved[halved.indexOf('-filter_complex') + 1]!;
    // Halved only where the picture is at least twice the largest size (680x530) each way.
    expect(graph).toMatch(/^\[0:v:0\]scale=w='if\(gte\(iw,1360\)\*gte\(ih,1060\),trunc\(iw\/2\),iw\)'/);
    await run(halved);
    const whole = buildResizeCoverSetArgs(picture, sizes('w'));
    whole[whole.indexOf('-filter_complex') + 1] = graph.replace(/^\[0:v:0\]scale=.*?:flags=area,/, '[0:v:0]');
    await run(whole);
    for (const [h, w] of sizes('h').map((o, i) => [o, sizes('w')[i]!] as const)) {
      expect(await imageSize(h.path)).toEqual({ width: h.width, height: h.height });
      const [a, b] = await Promise.all([grayBytes(h.path), grayBytes(w.path)]);
      let diff = 0;
      for (let i = 0; i < a.length; i++) diff += Math.abs(a[i]! - b[i]!);
      expect(diff / a.length, `${h.width}x${h.height}: mean difference in luma levels`).toBeLessThan(3);
    }
  });

  it('judges frames by their luma', () => {
    expect(lumaStats(new Uint8Array([0, 255]))).toEqual({ mean: 127.5, stdDev: 127.5 });
    expect(isBlankFrame({ mean: 3, stdDev: 1 })).toBe(true); // black
    expect(isBlankFrame({ mean: 250, stdDev: 2 })).toBe(true); // white
    expect(isBlankFrame({ mean: 120, stdDev: 2 })).toBe(true); // one flat grey
    expect(isBlankFrame({ mean: 110, stdDev: 40 })).toBe(false);
  });
});
