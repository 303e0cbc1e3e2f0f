/**
 * Every SPS of an H.264 stream, read as the copy writes them beside itself (Annex B, its SPS
 * units alone), from streams a real encoder made: sizes with cropping, profiles, 4:2:2 and
 * fields; a stream whose picture changes mid-way is judged unfit to copy.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../server/media/ffmpegRunner.js';
import { annexBUnits, parseSps, readSpsUnits, type SpsFacts } from '../../server/media/h264Sps.js';
import { judgeCopiedSps, largestSps } from '../../server/media/streamCopy.js';
import { makeTempDir } from '../helpers/clips.js';

let dir: string;
beforeAll(() => {
  dir = makeTempDir('vop-h264-sps-');
});
afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** The SPS units of a short stream libx264 makes with `args`, at `size`. */
async function spsOf(name: string, size: string, args: string[]): Promise<Buffer> {
  const stream = path.join(dir, `${name}.h264`);
  await run(['-f', 'lavfi', '-i', `testsrc2=s=${size}:r=25:d=0.08`, '-c:v', 'libx264', '-preset', 'ultrafast', ...args, '-f', 'h264', '-y', stream]);
  const sps = path.join(dir, `${name}.sps`);
  await run(['-i', stream, '-map', '0:v:0', '-c:v', 'copy', '-bsf:v', 'h264_mp4toannexb,filter_units=pass_types=7', '-f', 'h264', '-y', sps]);
  return fs.readFileSync(sps);
}

describe('reading SPS units', () => {
  it('reads size (cropping applied), profile, chroma format and depth as libx264 wrote them', async () => {
    const cases: Array<[string, string, string[], Partial<SpsFacts>]> = [
      ['baseline', '640x360', ['-profile:v', 'baseline'], { width: 640, height: 360, profileIdc: 66, chromaFormatIdc: 1, frameMbsOnly: true }],
      // 1080 is not a multiple of 16: coded as 1088, cropped.
      // (ultrafast drops what needs High: a later preset writes it.)
      ['high-1080', '1920x1080', ['-preset', 'veryfast', '-pix_fmt', 'yuv420p'], { width: 1920, height: 1080, profileIdc: 100, chromaFormatIdc: 1, bitDepthLuma: 8 }],
      ['odd', '322x242', ['-pix_fmt', 'yuv420p'], { width: 322, height: 242 }],
      ['fields-422', '720x576', ['-flags', '+ildct+ilme', '-pix_fmt', 'yuv422p'], { width: 720, height: 576, profileIdc: 122, chromaFormatIdc: 2, frameMbsOnly: false }],
      ['444', '320x240', ['-pix_fmt', 'yuv444p'], { width: 320, height: 240, profileIdc: 244, chromaFormatIdc: 3 }],
    ];
    for (const [name, size, args, expected] of cases) {
      const read = readSpsUnits(await spsOf(name, size, args));
      expect(read.unreadable, name).toBe(0);
      expect(read.sps.length, name).toBeGreaterThanOrEqual(1);
      expect(read.sps[0], name).toMatchObject(expected);
      expect(judgeCopiedSps(read), name).toBeNull();
    }
  });

  it('judges a stream whose picture changes mid-way unfit to copy, and gives its largest picture', async () => {
    const small = await spsOf('small', '640x360', ['-pix_fmt', 'yuv420p']);
    const large = await spsOf('large', '1280x720', ['-pix_fmt', 'yuv420p']);
    const read = readSpsUnits(Buffer.concat([small, large, small]));
    expect(read.sps.map((s) => `${s.width}x${s.height}`)).toEqual(['640x360', '1280x720', '640x360']);
    expect(judgeCopiedSps(read)).toMatch(/^its picture changes mid-stream \(640x360 profile \d+ chroma 1 8-bit, then 1280x720 profile \d+ chroma 1 8-bit\)$/);
    expect(largestSps(read.sps)).toEqual({ width: 1280, height: 720 });
  });

  it('splits Annex B streams on both start codes, and refuses what it cannot read', () => {
    expect(annexBUnits(Uint8Array.from([0, 0, 0, 1, 0x67, 1, 0, 0, 1, 0x68, 2, 3])).map((u) => [...u])).toEqual([[0x67, 1], [0x68, 2, 3]]);
    // An SPS cut short, and a stream with none.
    const cut = readSpsUnits(Uint8Array.from([0, 0, 1, 0x67, 100, 0, 40]));
    expect(cut).toEqual({ sps: [], unreadable: 1 });
    expect(judgeCopiedSps(cut)).toMatch(/cannot be read/);
    expect(judgeCopiedSps({ sps: [], unreadable: 0 })).toMatch(/no sequence parameter set/);
    expect(parseSps(Uint8Array.from([0x68, 1, 2, 3]))).toBeNull();
  });
});
