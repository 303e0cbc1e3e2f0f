/**
 * A copy's HLS cut begun before its probe is read (transcodeJob.ts, hlsPackaging.ts
 * cutFirstRendition): the folder packageHls then writes is the one it writes cutting the copy
 * itself. Real ffmpeg on a generated clip with keyframes every 2 s.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../server/media/ffmpegRunner.js';
import { probe } from '../../server/media/probe.js';
import { cutFirstRendition, packageHls } from '../../server/processing/hlsPackaging.js';
import type { FfmpegRunContext, WrittenRendition } from '../../server/processing/renditionOutputs.js';
import { makeTempDir, testBinaries } from '../helpers/clips.js';

/** Every file of a folder, with its bytes' length, by relative path. */
function tree(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out[path.relative(dir, path.join(e.parentPath, e.name))] = fs.statSync(path.join(e.parentPath, e.name)).size;
  }
  return out;
}

describe('a first rendition cut early', () => {
  it('gives the HLS folder that cutting it in packageHls gives, playlists byte for byte', async () => {
    const { ffmpeg, ffprobe } = await testBinaries();
    const dir = makeTempDir();
    const file = path.join(dir, 'copy.mp4');
    await run([
      '-f', 'lavfi', '-i', 'testsrc2=s=640x360:r=30:d=9', '-f', 'lavfi', '-i', 'sine=f=440:d=9',
      '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '60', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-movflags', '+faststart', '-y', file,
    ], { ffmpegPath: ffmpeg.path });
    const info = await probe(file, { ffprobePath: ffprobe.path });
    if (!info.isVideo) throw new Error(info.reason);
    const written: WrittenRendition = { label: '360p', width: 640, height: 360, bitrateKbps: 500, file: '20260101/x_360p.mp4', path: file, bytes: fs.statSync(file).size, info };
    const ctx: FfmpegRunContext = {
      ffmpegPath: ffmpeg.path, signal: new AbortController().signal, pidFile: path.join(dir, 'pids'), probeTimeoutMs: 20_000, memoryLimitBytes: 0, toneMapping: false,
      probe: (f, o) => probe(f, { ...o, ffprobePath: ffprobe.path }),
    };
    const plain = path.join(dir, 'plain');
    const early = path.join(dir, 'early');
    fs.mkdirSync(plain);
    fs.mkdirSync(early);
    await packageHls([written], plain, ctx, 2);
    const firstCut = cutFirstRendition(file, '360p', early, ctx, 2, false);
    await packageHls([written], early, ctx, 2, { firstCut });

    expect(tree(early)).toEqual(tree(plain));
    expect(Object.keys(tree(plain)).filter((f) => f.endsWith('.ts') || f.endsWith('.m4s') || f.endsWith('.mp4')).length).toBeGreaterThanOrEqual(4);
    for (const f of Object.keys(tree(plain)).filter((n) => n.endsWith('.m3u8'))) {
      expect(fs.readFileSync(path.join(early, f), 'utf8'), f).toBe(fs.readFileSync(path.join(plain, f), 'utf8'));
    }
  });
});
