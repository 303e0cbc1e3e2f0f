/**
 * Playable with the first rendition, the rest of the ladder after (processing/ladderPlan.ts), cut
 * off by `kill -9` at each step without a long encode: the server runs as `npm start`'s entry in a
 * process group of its own, as a supervisor starts it, and the whole group (ffmpeg included) is
 * killed with SIGKILL, then started again at once on the same data folder. Whatever the step, the
 * video stays (or becomes) playable, its ladder completes, and nothing half-written is listed or
 * left behind:
 *
 * - while the ladder stores its outputs (as its master playlist lands, before its rows);
 * - between the first rendition and the ladder (at the first sight of status 1);
 * - between the move to 1 and the queueing of the ladder (no ladder job recorded);
 * - during the first rendition's stream copy of an H.264 source (its ffmpeg caught with SIGSTOP,
 *   it is over in a blink).
 *
 * The step is told from the outside: the video's status, the files the ladder stores, the stopped
 * server's database, and which ffmpeg runs in the group (`-c:v copy` for the copy). The kills
 * during the encodes are in playable-crash.test.ts; the harness is test/helpers/playableCrash.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMasterPlaylist } from '../../server/media/hls.js';
import { openSqlJsStores } from '../../server/storage/sqljs/openSqlJsStores.js';
import { makeClip } from '../helpers/clips.js';
import { holdWhenSeen } from '../helpers/procs.js';
import { adminVideo, cleanups, dataDirWithLadder, detail, expectWholeLadder, ffmpegs, isCopy, isLadderEncode, killGroup, restartedWithFirstRendition, runCleanups, startVop, status, upload, waitHeld, type Upload } from '../helpers/playableCrash.js';
import { waitUntil } from '../helpers/wait.js';
import { signalGroup } from '../helpers/server.js';

afterEach(runCleanups);

/**
 * A 12 s clip uploaded, and the server's group killed at the first sight of status 1: the ladder
 * of 12 s takes a second or more to land, the kill comes milliseconds after the move to 1.
 */
async function killedAtFirstSightOfOne(): Promise<{ dataDir: string; u: Upload }> {
  const dataDir = dataDirWithLadder();
  const clip = await makeClip({ seconds: 12, width: 640, height: 360 });
  const first = await startVop(dataDir);
  const u = await upload(first, clip);
  await waitUntil('status 1', async () => ((await status(first, u)) === 1 ? true : undefined), { timeoutMs: 90_000, pollMs: 5 });
  await killGroup(first);
  return { dataDir, u };
}

describe.runIf(process.platform === 'linux')('kill -9 of the server at each step of a video made playable first, its ladder after', () => {
  it('while the ladder stores its outputs (just after its master playlist): after a restart the master lists each rung once', async () => {
    const clip = await makeClip({ seconds: 12, width: 640, height: 360 });
    // The ladder stores its HLS variants, then the master playlist that lists them with the first
    // rendition's, then its MP4s (renames), then the rows: killed as the master lands (inotify),
    // with the MP4s and rows still to come. The window is milliseconds wide, and the kill comes
    // from this process's event loop: when it lands after the rows (seen in the stopped server's
    // database), the case proved nothing and is made again, at most three times.
    let dataDir = '';
    let u: Upload | undefined;
    for (let round = 1; round <= 3 && !u; round++) {
      dataDir = dataDirWithLadder();
      const first = await startVop(dataDir);
      const made = await upload(first, clip);
      await waitUntil('the ladder encode', () => ffmpegs(first).find(isLadderEncode), { timeoutMs: 90_000, pollMs: 20 });
      const hlsDir = path.join(dataDir, 'media', 'hls', made.videoId);
      const masterBefore = fs.readFileSync(path.join(hlsDir, 'master.m3u8'), 'utf8');
      expect(parseMasterPlaylist(masterBefore)).toHaveLength(1);
      const landed = new Promise<void>((resolve) => {
        const watcher = fs.watch(hlsDir, (_event, name) => {
          if (name !== 'master.m3u8') return;
          signalGroup(first.pid, 'SIGKILL');
          watcher.close();
          resolve();
        });
        cleanups.push(() => watcher.close());
      });
      await Promise.race([landed, new Promise((_, reject) => setTimeout(() => reject(new Error(`the ladder stored no master playlist in time:\n${first.output()}`)), 90_000))]);
      await killGroup(first);
      // The master on disk lists the ladder's variants too.
      expect(parseMasterPlaylist(fs.readFileSync(path.join(hlsDir, 'master.m3u8'), 'utf8'))).toHaveLength(3);
      const stores = await openSqlJsStores({ dir: dataDir, log: () => undefined });
      const rows = (await stores.videos.renditions(made.videoId)).map((r) => r.label);
      await stores.close();
      if (rows.length === 1) u = made;
    }
    if (!u) throw new Error('in three rounds the kill never landed between the master playlist and the rows');

    // The kill came before the rows named the ladder's files (the window this case is about).
    const second = await restartedWithFirstRendition(dataDir, u);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 12, oneDelivery: true });
  }, 240_000);

  it('between the first rendition and the ladder (at the first sight of status 1): after a restart the ladder completes', async () => {
    const { dataDir, u } = await killedAtFirstSightOfOne();
    // The ladder had not landed: the kill came with the first rendition alone listed.
    const second = await restartedWithFirstRendition(dataDir, u);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 12, oneDelivery: false });
  }, 240_000);

  it('between the move to 1 and the queueing of the ladder (no ladder job recorded): start-up queues it, and it completes', async () => {
    const { dataDir, u } = await killedAtFirstSightOfOne();

    // The kill landed a moment later than the window this case is about (the ladder's job is
    // queued a few milliseconds after the move, in the same process): what a kill inside it
    // leaves is made so, the job's row removed from the stopped server's database.
    const stores = await openSqlJsStores({ dir: dataDir, log: () => undefined });
    expect((await stores.videos.get(u.videoId))).toMatchObject({ status: 1, ladder: 'pending' });
    await stores.db.write([[`DELETE FROM jobs WHERE video_id = ? AND type = 'ladder'`, [u.videoId]]]);
    expect(await stores.jobs.list({ types: ['ladder'], videoId: u.videoId, limit: 10 })).toEqual([]);
    await stores.close();

    const restartedAt = Date.now();
    const second = await startVop(dataDir);
    // Start-up queued the ladder (the server answers once it has looked): a job of the new server's.
    const queued = (await adminVideo(second, u.videoId)).jobs.filter((j) => j.type === 'ladder');
    expect(queued).toHaveLength(1);
    expect(queued[0]!.createdAt).toBeGreaterThanOrEqual(restartedAt);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 12, oneDelivery: false });
  }, 240_000);

  it('during the stream copy of an H.264 source (its ffmpeg held with SIGSTOP): after a restart it is 1 and the ladder completes', async () => {
    const dataDir = dataDirWithLadder();
    // Its length does not matter: the copy is held, not raced.
    const clip = await makeClip({ seconds: 12, width: 640, height: 360 });
    const first = await startVop(dataDir);
    const u = await upload(first, clip);

    // The copy is over in a fraction of a second: caught as soon as it is spawned, and held.
    const copy = await holdWhenSeen('the copy', () => ffmpegs(first).find(isCopy), { timeoutMs: 60_000, pollMs: 1 });
    await waitHeld(first, copy);
    expect(await status(first, u)).toBe(6);
    expect((await detail(first, u)).VideoPlayFile).toEqual([]);
    await killGroup(first);

    const second = await startVop(dataDir);
    await expectWholeLadder(second, dataDir, u, { labels: ['360p', '240p', '180p'], seconds: 12, oneDelivery: true });
    const v = await adminVideo(second, u.videoId);
    // Cut off once, run again from the start.
    expect(v.statusHistory.map((c) => c.to)).toEqual([8, 5, 6, 1]);
  }, 240_000);
});
