/**
 * The proof's outcome remembered between starts (media/proofMemory.ts): a second resolution of
 * the same binaries runs no proof, only each candidate's `-version`; a binary changed on disk, or
 * a remembered choice that is not one of this start's candidates, makes the proof run again. The
 * runs are counted by a candidate "ffmpeg" that notes each start, then is the system's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveFfmpegBinaries } from '../../server/media/ffmpegBinaries.js';
import { PROOF_SAMPLES } from '../../server/media/ffmpegProof.js';
import { proofMemoryFile } from '../../server/media/proofMemory.js';
import { makeTempDir } from '../helpers/clips.js';

const SYSTEM = '/usr/bin';
const available = fs.existsSync(`${SYSTEM}/ffmpeg`) && fs.existsSync(`${SYSTEM}/ffprobe`);

let dir: string;
let recorder: string;
let record: string;

/** The recorder's runs since the last call, each its arguments. */
function runsSince(): string[] {
  const runs = fs.existsSync(record) ? fs.readFileSync(record, 'utf8').trim().split('\n').filter(Boolean) : [];
  fs.rmSync(record, { force: true });
  return runs;
}

beforeAll(() => {
  dir = makeTempDir('vop-proof-memory-');
  record = path.join(dir, 'runs.txt');
  recorder = path.join(dir, 'ffmpeg');
  fs.writeFileSync(recorder, `#!/bin/sh\necho "$*" >> ${record}\nexec ${SYSTEM}/ffmpeg "$@"\n`, { mode: 0o755 });
});

describe.runIf(available && process.platform === 'linux')('the proof remembered', () => {
  it('runs once for the same binaries: the second start runs -version alone and chooses the same', async () => {
    const memory = path.join(dir, 'a', 'ffmpeg-proof.json');
    const first = await resolveFfmpegBinaries({ ffmpegPath: recorder, env: { PATH: SYSTEM }, proofMemory: memory });
    const proofRuns = runsSince().filter((r) => !r.includes('-version'));
    expect(proofRuns.length).toBeGreaterThanOrEqual(PROOF_SAMPLES.length);
    expect(fs.statSync(memory).mode & 0o777).toBe(0o600);

    const second = await resolveFfmpegBinaries({ ffmpegPath: recorder, env: { PATH: SYSTEM }, proofMemory: memory });
    expect(runsSince()).toEqual(['-hide_banner -version']);
    expect(second.ffmpeg).toEqual(first.ffmpeg);
    expect(second.ffprobe).toEqual(first.ffprobe);
    expect(second.proof).toEqual(first.proof);
    expect(second.skipped).toEqual(first.skipped);
  });

  it('proves again once a candidate changed on disk', async () => {
    const memory = path.join(dir, 'b', 'ffmpeg-proof.json');
    await resolveFfmpegBinaries({ ffmpegPath: recorder, env: { PATH: SYSTEM }, proofMemory: memory });
    runsSince();
    // An upgrade: the same path, another file.
    fs.appendFileSync(recorder, '# upgraded\n');
    await resolveFfmpegBinaries({ ffmpegPath: recorder, env: { PATH: SYSTEM }, proofMemory: memory });
    expect(runsSince().filter((r) => !r.includes('-version')).length).toBeGreaterThanOrEqual(PROOF_SAMPLES.length);
  });

  it('ignores a remembered choice that is not one of the candidates found, and a file that is not its own', async () => {
    const memory = path.join(dir, 'c', 'ffmpeg-proof.json');
    await resolveFfmpegBinaries({ ffmpegPath: recorder, env: { PATH: SYSTEM }, proofMemory: memory });
    runsSince();
    const kept = JSON.parse(fs.readFileSync(memory, 'utf8'));
    kept.entries[0].ffprobe = path.join(dir, 'elsewhere', 'ffprobe');
    fs.writeFileSync(memory, JSON.stringify(kept));
    const b = await resolveFfmpegBinaries({ ffmpegPath: recorder, env: { PATH: SYSTEM }, proofMemory: memory });
    expect(b.ffprobe.path).toBe(`${SYSTEM}/ffprobe`);
    expect(runsSince().filter((r) => !r.includes('-version')).length).toBeGreaterThanOrEqual(PROOF_SAMPLES.length);

    fs.writeFileSync(memory, 'not json');
    expect((await resolveFfmpegBinaries({ ffmpegPath: recorder, env: { PATH: SYSTEM }, proofMemory: memory })).ffprobe.path).toBe(`${SYSTEM}/ffprobe`);
  });

  it('still resolves where the memory cannot be written', async () => {
    const blocked = path.join(dir, 'a-file');
    fs.writeFileSync(blocked, '');
    const b = await resolveFfmpegBinaries({ ffmpegPath: recorder, env: { PATH: SYSTEM }, proofMemory: path.join(blocked, 'ffmpeg-proof.json') });
    expect(b.proof.containers.every((c) => c.ok)).toBe(true);
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('a-file.'))).toEqual([]);
  });
});

describe('where the proof is remembered', () => {
  it("is the user's cache folder, and nowhere when the environment names no home", () => {
    expect(proofMemoryFile({ HOME: '/home/ana' }, 'linux')).toBe('/home/ana/.cache/vop/ffmpeg-proof.json');
    expect(proofMemoryFile({ HOME: '/home/ana', XDG_CACHE_HOME: '/var/cache/ana' }, 'linux')).toBe('/var/cache/ana/vop/ffmpeg-proof.json');
    // XDG: a relative XDG_CACHE_HOME is to be ignored.
    expect(proofMemoryFile({ HOME: '/home/ana', XDG_CACHE_HOME: 'cache' }, 'linux')).toBe('/home/ana/.cache/vop/ffmpeg-proof.json');
    expect(proofMemoryFile({ HOME: '/Users/ana' }, 'darwin')).toBe('/Users/ana/Library/Caches/vop/ffmpeg-proof.json');
    expect(proofMemoryFile({}, 'linux')).toBeUndefined();
    expect(proofMemoryFile({ PATH: '/usr/bin' }, 'darwin')).toBeUndefined();
  });
});
