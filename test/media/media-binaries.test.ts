import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FfmpegBinaryError, resolveFfmpegBinaries } from '../../server/media/ffmpegBinaries.js';
import { makeTempDir } from '../helpers/clips.js';

const require = createRequire(import.meta.url);

describe('ffmpeg binary resolution', () => {
  it('finds a working ffmpeg and ffprobe, says where from, and reports their versions', async () => {
    const b = await resolveFfmpegBinaries({ env: { PATH: process.env.PATH } });
    console.log(`ffmpeg:  ${b.ffmpeg.source} ${b.ffmpeg.path}\n         ${b.ffmpeg.version}`);
    console.log(`ffprobe: ${b.ffprobe.source} ${b.ffprobe.path}\n         ${b.ffprobe.version}`);
    if (b.skipped.length) console.log(`skipped: ${b.skipped.join('\n         ')}`);
    expect(b.ffmpeg.version).toMatch(/^ffmpeg version \S+/);
    expect(b.ffprobe.version).toMatch(/^ffprobe version \S+/);
    expect(fs.existsSync(b.ffmpeg.path)).toBe(true);
    expect(fs.existsSync(b.ffprobe.path)).toBe(true);
    expect(b.ffmpeg.source).not.toBe('setting');

    // The order of preference: ffmpeg-static only when its binary was actually downloaded.
    const staticPath = require('ffmpeg-static') as string | null;
    if (staticPath && fs.existsSync(staticPath)) {
      expect(b.ffmpeg.source).toBe('ffmpeg-static');
    } else {
      expect(b.ffmpeg.source).not.toBe('ffmpeg-static');
      expect(b.skipped.some((s) => s.startsWith('ffmpeg from ffmpeg-static'))).toBe(true);
      expect(['@ffmpeg-installer/ffmpeg', 'PATH']).toContain(b.ffmpeg.source);
    }
  });

  it('lets an explicit setting override every other source, from the option or the environment', async () => {
    const found = await resolveFfmpegBinaries();
    const viaEnv = await resolveFfmpegBinaries({ env: { VOP_FFMPEG_PATH: found.ffmpeg.path, VOP_FFPROBE_PATH: found.ffprobe.path } });
    expect(viaEnv.ffmpeg).toMatchObject({ source: 'setting', path: found.ffmpeg.path, version: found.ffmpeg.version });
    expect(viaEnv.ffprobe.source).toBe('setting');
    const viaOption = await resolveFfmpegBinaries({ ffmpegPath: found.ffmpeg.path, env: {} });
    expect(viaOption.ffmpeg.source).toBe('setting');
    expect(viaOption.ffprobe.source).not.toBe('setting');
  });

  it('refuses a setting that points nowhere, with an error that names it, instead of falling back', async () => {
    const missing = '/nonexistent/dir/ffmpeg';
    await expect(resolveFfmpegBinaries({ env: { VOP_FFMPEG_PATH: missing } })).rejects.toThrow(FfmpegBinaryError);
    await expect(resolveFfmpegBinaries({ env: { VOP_FFMPEG_PATH: missing } })).rejects.toThrow(/VOP_FFMPEG_PATH.*"\/nonexistent\/dir\/ffmpeg".*does not exist/);
    await expect(resolveFfmpegBinaries({ ffprobePath: missing, env: {} })).rejects.toThrow(/ffprobe setting.*does not exist/);
  });

  it('refuses a setting that exists but is not an ffmpeg', async () => {
    const dir = makeTempDir();
    const fake = path.join(dir, 'ffmpeg');
    fs.writeFileSync(fake, '#!/bin/sh\necho "not really"\n', { mode: 0o755 });
    await expect(resolveFfmpegBinaries({ ffmpegPath: fake, env: {} })).rejects.toThrow(/does not run: .*no version line/);
  });
});
