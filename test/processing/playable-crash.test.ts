/**
 * Playable with the first rendition, the rest of the ladder after (processing/ladderPlan.ts), cut
 * off by `kill -9` during each of its encodes: the server runs as `npm start`'s entry in a process
 * group of its own, as a supervisor starts it, and the whole group (ffmpeg included) is killed
 * with SIGKILL, then started again at once on the same data folder. Whatever the step, the video
 * stays (or becomes) playable, its ladder completes, and nothing half-written is listed or left
 * behind:
 *
 * - during the ladder's rung encode (the ffmpeg at niceness 10);
 * - during the first rendition's lowest-rung encode of a 4:4:4 source.
 *
 * Each encode is held with SIGSTOP once it has written some of its outputs, so the kill lands in
 * it however fast it is: the clips are 12 s (they were 40 s and 30 s, long enough to race the
 * kill against, and their encodes, done twice per case, were most of the file's CPU).
 *
 * The step is told from the outside: the video's status, and which ffmpeg runs in the group
 * (libx264 at niceness 10 for the ladder, at 0 for a first rendition). The other steps are in
 * playable-crash-steps.test.ts (one file ran over a minute); the harness is
 * test/helpers/playableCrash.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { makeClip } from '../helpers/clips.js';
import { adminVideo, dataDirWithLadder, detail, expectWholeLadder, ffmpegs, isFirstEncode, isLadderEncode, killGroup, recoveries, restartedWithFirstRendition, runCleanups, startVop, status, upload, waitHeld } from '../helpers/playableCrash.js';
import { holdOnceWriting, type Proc } from '../helpers/procs.js';
import type { GroupNode } from '../helpers/server.js';
import { waitUntil } from '../helpers/wait.js';

afterEach(runCleanups);

describe.runIf(process.platform === 'linux')('kill -9 of the server during each encode of a video made playable first, its ladder after', () => {
  it('during the ladder\'s rung encode: the video stays playable, and after a restart the ladder completes', async () => {
    const dataDir = dataDirWithLadder();
    const clip = await makeClip({ seconds: 12, width: 640, height: 360 });
    const first = await startVop(dataDir);
    const u = await upload(first, clip);

    // Playable with the copy, then the ladder's ffmpeg at work on 240p and 180p.
    const ladder = await waitUntil('the ladder encode', () => ffmpegs(first).find(isLadderEncode), { timeoutMs: 90_000, pollMs: 20 });
    expect(ladder.cmdline).not.toContain('-c:v copy');
    await holdWithOutputsHalfWritten(first, ladder);
    const before = await detail(first, u);
    expect(before.VideoModel.Status).toBe(1);
    expect(before.VideoPlayFile.map((f) => f.BitrateLabel)).toEqual(['360p']);
    expect((await adminVideo(first, u.videoId)).video.ladder).toBe('pending');
    await killGroup(first);

    // Served all along: playable at once after the restart, before the ladder is done.
    const second = await restartedWithFirstRendition(dataDir, u);
    // The ladder's cut-off attempt was recovered before it ran again (the server answers once its
    // jobs have started, the cut-off ones recovered first), and its recover did not fail.
    const recovered = await recoveries(second);
    expect(recovered['ladder recovered']).toBe(1);
    expect(Object.keys(recovered).filter((k) => k.endsWith(' failed'))).toEqual([]);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 12, oneDelivery: true });
  }, 240_000);

  it('during the lowest-rung encode of a 4:4:4 source: after a restart it is 1 and the ladder completes', async () => {
    const dataDir = dataDirWithLadder();
    // Odd sizes are encoded 4:4:4: not copied, 180p is encoded first and the ladder makes 360p and 240p.
    const clip = await makeClip({ seconds: 12, width: 641, height: 361 });
    const first = await startVop(dataDir);
    const u = await upload(first, clip);

    const encode = await waitUntil('the first-rendition encode', () => ffmpegs(first).find(isFirstEncode), { timeoutMs: 60_000, pollMs: 10 });
    expect(encode.cmdline).not.toContain('-c:v copy');
    await holdWithOutputsHalfWritten(first, encode);
    expect(await status(first, u)).toBe(6);
    expect(ffmpegs(first).some(isLadderEncode)).toBe(false);
    await killGroup(first);

    const second = await startVop(dataDir);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 12, oneDelivery: true });
  }, 240_000);
});

/** Holds `encode` once some way into it (holdOnceWriting), and checks that it is held, not ended. */
async function holdWithOutputsHalfWritten(node: GroupNode, encode: Proc): Promise<void> {
  await holdOnceWriting(encode);
  await waitHeld(node, encode);
  expect(ffmpegs(node).find((p) => p.pid === encode.pid)).toBeDefined();
}
