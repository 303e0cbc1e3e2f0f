import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FfmpegTools } from '../../server/media/ffmpegTools.js';
import { ProbeMemo } from '../../server/media/probeMemo.js';
import type { ProbeResult } from '../../server/media/probe.js';
import { makeClip, makeTempDir, testBinaries } from '../helpers/clips.js';

const verdict = (formatName: string): ProbeResult => ({ isVideo: false, reason: 'not a video', formatName });

describe('ProbeMemo: a verdict is the same file\'s while the file is unchanged', () => {
  it('keeps a verdict across a rename, and forgets it once the file is written or the context differs', async () => {
    const dir = makeTempDir();
    const file = path.join(dir, 'a');
    fs.writeFileSync(file, 'one');
    const memo = new ProbeMemo();
    const key = (await memo.keyOf(file, 'mp4'))!;
    memo.set(key, verdict('x'));
    const moved = path.join(dir, 'b');
    fs.renameSync(file, moved);
    expect(memo.get((await memo.keyOf(moved, 'mp4'))!)).toEqual(verdict('x'));
    expect(memo.get((await memo.keyOf(moved, 'mp4,mov'))!)).toBeUndefined();
    // Same size, new bytes: the modification time changes.
    await new Promise((r) => setTimeout(r, 20)); // time itself: a later modification time
    fs.writeFileSync(moved, 'two');
    expect(memo.get((await memo.keyOf(moved, 'mp4'))!)).toBeUndefined();
    expect(await memo.keyOf(path.join(dir, 'gone'), 'mp4')).toBeNull();
    expect(await memo.keyOf(dir, 'mp4')).toBeNull();
  });

  it('hands out copies, keeps at most its entries, and forgets after its time', () => {
    let now = 0;
    const memo = new ProbeMemo({ entries: 2, ttlMs: 1000 }, () => now);
    memo.set('a', verdict('a'));
    memo.get('a')!.formatName = 'changed';
    expect(memo.get('a')!.formatName).toBe('a');
    memo.set('b', verdict('b'));
    memo.set('c', verdict('c'));
    expect(memo.get('a')).toBeUndefined();
    expect(memo.get('b')).toBeDefined();
    now = 1001;
    expect(memo.get('c')).toBeUndefined();
  });
});

describe('FfmpegTools.probe', () => {
  it('runs ffprobe once for a source probed twice, or probed as a file after; again for a rewritten file; every time for a rendition', async () => {
    const { ffmpeg, ffprobe: real } = await testBinaries();
    const dir = makeTempDir();
    const counter = path.join(dir, 'runs');
    const ffprobe = path.join(dir, 'ffprobe');
    // A wrapper that records each run of the real ffprobe.
    fs.writeFileSync(ffprobe, `#!/bin/sh\necho run >> '${counter}'\nexec '${real.path}' "$@"\n`, { mode: 0o755 });
    const tools = new FfmpegTools({ ffprobePath: ffprobe, ffmpegPath: ffmpeg.path });
    const clip = path.join(dir, 'clip.mp4');
    fs.copyFileSync(await makeClip({ seconds: 1 }), clip);
    const runs = () => (fs.existsSync(counter) ? fs.readFileSync(counter, 'utf8').trim().split('\n').length : 0);

    const first = await tools.probe(clip, { timeoutMs: 20_000 });
    expect(first.isVideo).toBe(true);
    const before = runs();
    expect(await tools.probe(clip, { timeoutMs: 20_000 })).toEqual(first);
    expect(runs()).toBe(before);
    // The ladder's probe of the source, as a file: the verdict ingest's probe left.
    expect(await tools.probe(clip, { timeoutMs: 20_000, source: false })).toEqual(first);
    expect(runs()).toBe(before);
    // A rendition, probed as a file only: not kept.
    const rendition = path.join(dir, 'rendition.mp4');
    fs.copyFileSync(await makeClip({ seconds: 1 }), rendition);
    await tools.probe(rendition, { timeoutMs: 20_000, source: false });
    await tools.probe(rendition, { timeoutMs: 20_000, source: false });
    expect(runs()).toBe(before + 2);
    await new Promise((r) => setTimeout(r, 20)); // time itself: a later modification time
    fs.copyFileSync(await makeClip({ seconds: 2 }), clip);
    const second = await tools.probe(clip, { timeoutMs: 20_000 });
    expect(runs()).toBe(before + 3);
    expect(second.isVideo && second.durationSeconds).toBeGreaterThan(1.5);
  });
});
