/**
 * First renditions first, on every core: while a video's first rendition is made, a ladder
 * encoding on the same node is stopped (SIGSTOP), not merely niced, and goes on (SIGCONT) once the
 * first rendition is done, finishing as it would have. Seen from outside, as an admin would: the
 * state of the ladder's ffmpeg process in /proc (the ladder's is the one at niceness 10).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../server/media/ffmpegRunner.js';
import { makeTempDir } from '../helpers/clips.js';
import { SpecClient } from '../helpers/client.js';
import { placeSource } from '../helpers/processing.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

let dir: string;
let t: TestServer;
let client: SpecClient;

beforeAll(async () => {
  dir = makeTempDir('vop-ladder-pause-');
  t = await startServer({
    processing: {
      preset: 'veryfast',
      retry: { maxRetries: 0 },
      ladder: {
        rungs: [
          { label: '720p', shortSide: 720, videoBitrateKbps: 2800 },
          { label: '480p', shortSide: 480, videoBitrateKbps: 1400 },
          { label: '360p', shortSide: 360, videoBitrateKbps: 800 },
        ],
        audioBitrateKbps: 64,
      },
    },
  });
  client = await t.newApp();
});
afterAll(async () => {
  await t?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** The ffmpeg processes this test process runs (the server runs in it), with their state and niceness. */
function ffmpegChildren(): Array<{ pid: number; state: string; nice: number }> {
  const out: Array<{ pid: number; state: string; nice: number }> = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid …": the name may hold spaces, so split after its closing parenthesis.
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (comm !== 'ffmpeg' || Number(fields[1]) !== process.pid) continue;
    out.push({ pid: Number(name), state: fields[0]!, nice: Number(fields[16]) });
  }
  return out;
}

async function clip(name: string, args: string[]): Promise<string> {
  const file = path.join(dir, name);
  await run(args.concat('-y', file));
  return file;
}

describe('a ladder gives way to first renditions', () => {
  it("stops a running ladder's ffmpeg while another video's first rendition is made, and lets it finish after", async () => {
    // 720p H.264, copied; its ladder (480p and 360p at veryfast, niced) takes some seconds: the
    // other video's first rendition (a second or less) is made well inside it.
    const long = await clip('long.mp4', ['-f', 'lavfi', '-i', 'testsrc2=s=1280x720:r=30:d=20', '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '60', '-pix_fmt', 'yuv420p']);
    // 4:4:4 is not copied: its first rendition is the 360p rung, encoded.
    const other = await clip('other.mp4', ['-f', 'lavfi', '-i', 'testsrc2=s=640x360:r=30:d=8', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv444p']);

    const first = await client.register();
    await placeSource(t.vop, first, long);
    await waitForStatus(t.vop, first, [1], { timeoutMs: 60_000, firstRendition: true });
    const ladder = await waitUntil('the ladder encoding', () => ffmpegChildren().find((c) => c.nice === 10 && c.state !== 'T'), { timeoutMs: 30_000 });

    const second = await client.register();
    await placeSource(t.vop, second, other);
    const states = new Set<string>();
    for (;;) {
      const v = await t.vop.stores.videos.get(second);
      const mine = ffmpegChildren().find((c) => c.pid === ladder.pid);
      if (v?.status === 1 || v?.status === 7 || !mine) break;
      if (v?.status === 6) states.add(mine.state);
      await new Promise((r) => setTimeout(r, 20)); // the sampling interval: states are seen over time
    }
    expect(await waitForStatus(t.vop, second, [1, 7], { timeoutMs: 60_000, firstRendition: true })).toBe(1);
    // Stopped while the first rendition was made…
    expect([...states]).toContain('T');
    // …and going again once it was: running or sleeping, never left stopped, until it ends.
    await waitUntil('the ladder going on', () => {
      const mine = ffmpegChildren().find((c) => c.pid === ladder.pid);
      return !mine || mine.state !== 'T' ? true : undefined;
    }, { timeoutMs: 10_000 });
    expect(await waitForStatus(t.vop, first, [1], { timeoutMs: 120_000 })).toBe(1);
    expect((await t.vop.stores.videos.renditions(first)).map((r) => r.label).sort()).toEqual(['360p', '480p', '720p']);
    expect((await t.vop.stores.videos.get(first))?.ladder).toBe('');
  }, 180_000);
});
