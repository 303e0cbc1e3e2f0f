/**
 * A copy is what it claims (issue 34, item 2): a browser-ready H.264 source whose picture
 * changes after its first SPS, the one ffprobe judges, is not copied: its renditions are encoded
 * at the ladder's sizes, and its largest picture is judged against the source limits as any
 * source's (over them, it is refused). SEI units, the user data an encoder or a crafter wrote
 * there among them, never reach a viewer in a copy.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../server/media/ffmpegRunner.js';
import { makeTempDir } from '../helpers/clips.js';
import { SpecClient } from '../helpers/client.js';
import { probe } from '../helpers/probe.js';
import { placeSource } from '../helpers/processing.js';
import { waitForStatus } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { execFileSync } from 'node:child_process';

let t: TestServer;
let client: SpecClient;
let dir: string;

beforeAll(async () => {
  dir = makeTempDir('vop-copy-faithful-');
  t = await startServer({
    processing: {
      preset: 'ultrafast',
      concurrency: 1,
      retry: { maxRetries: 0 },
      ladder: { rungs: [{ label: '360p', shortSide: 360, videoBitrateKbps: 800 }, { label: '240p', shortSide: 240, videoBitrateKbps: 400 }], audioBitrateKbps: 64 },
      // A megapixel at most: a 1080p picture in the middle of a 360p stream is over it.
      sourceLimits: { maxSide: 8192, maxPixels: 1_000_000, maxFrameRate: 240, maxDurationSeconds: 43_200 },
    },
  });
  client = await t.newApp();
});
afterAll(async () => {
  await t?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** An MP4 whose H.264 stream is `sizes` one after the other, a second each (MPEG-TS parts joined, then put in MP4 as a copy). */
async function mixed(name: string, sizes: string[]): Promise<string> {
  const parts = [];
  for (const [i, size] of sizes.entries()) {
    const part = path.join(dir, `${name}-${i}.ts`);
    await run(['-f', 'lavfi', '-i', `testsrc2=s=${size}:r=25:d=1`, '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '25', '-output_ts_offset', String(i), '-f', 'mpegts', '-y', part]);
    parts.push(fs.readFileSync(part));
  }
  const joined = path.join(dir, `${name}.ts`);
  fs.writeFileSync(joined, Buffer.concat(parts));
  const file = path.join(dir, `${name}.mp4`);
  await run(['-i', joined, '-c', 'copy', '-f', 'mp4', '-y', file]);
  return file;
}

/** Every decoded frame's size in `file`, with how many frames had it. */
function frameSizes(file: string): Record<string, number> {
  const out = execFileSync('ffprobe', ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'frame=width,height', '-of', 'csv=p=0', file], { encoding: 'utf8' });
  const sizes: Record<string, number> = {};
  for (const line of out.split('\n')) {
    const m = /^(\d+),(\d+)/.exec(line);
    if (m) sizes[`${m[1]}x${m[2]}`] = (sizes[`${m[1]}x${m[2]}`] ?? 0) + 1;
  }
  return sizes;
}

async function publish(file: string): Promise<{ id: string; status: number }> {
  const info = await probe(file);
  expect(info.isVideo && `${info.width}x${info.height}`).toBe('640x360');
  const id = await client.register();
  await placeSource(t.vop, id, file);
  return { id, status: await waitForStatus(t.vop, id, [1, 7], { timeoutMs: 120_000 }) };
}

describe('a source whose picture changes after its first SPS', () => {
  it('is encoded, not copied: every rendition decodes at its rung size, frame after frame', async () => {
    const { id, status } = await publish(await mixed('grows', ['640x360', '960x540']));
    expect(status).toBe(1);
    // Every rung, the ladder's included, once it has landed.
    await expect.poll(async () => (await t.vop.stores.videos.get(id))?.ladder, { timeout: 60_000 }).toBe('');
    const rows = await t.vop.stores.videos.renditions(id);
    expect(rows.map((r) => r.label).sort()).toEqual(['240p', '360p']);
    // Encoded here, each: x264's own header is in every file (a copy carries no SEI unit, so none
    // of the source's).
    for (const r of rows) expect(fs.readFileSync(t.vop.media.resolveRelative('play', r.file)!).includes('x264 - core'), r.label).toBe(true);
    for (const r of rows) expect(frameSizes(t.vop.media.resolveRelative('play', r.file)!)).toEqual({ [`${r.width}x${r.height}`]: 50 });
  }, 180_000);

  it('is refused, as any source over the limits, when a later picture is over them', async () => {
    const { id, status } = await publish(await mixed('huge', ['640x360', '1920x1080']));
    expect(status).toBe(7);
    expect((await t.vop.stores.videos.get(id))?.statusReason).toMatch(/1920x1080.*over the limit of 1 megapixels/);
    expect(await t.vop.stores.videos.renditions(id)).toEqual([]);
  }, 180_000);
});

describe('a copied source', () => {
  it('carries no SEI user data into its rendition or its HLS segments', async () => {
    const file = path.join(dir, 'sei.mp4');
    await run([
      '-f', 'lavfi', '-i', 'testsrc2=s=640x360:r=25:d=2',
      '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '25',
      '-bsf:v', 'h264_metadata=sei_user_data=086f3693-b7b3-4f2c-9653-21492feee5b8+<script>alert(1)</script>',
      '-f', 'mp4', '-y', file,
    ]);
    expect(fs.readFileSync(file).includes('<script>')).toBe(true);
    const { id, status } = await publish(file);
    expect(status).toBe(1);
    const rows = await t.vop.stores.videos.renditions(id);
    const copy = rows.find((r) => r.width === 640)!;
    const bytes = fs.readFileSync(t.vop.media.resolveRelative('play', copy.file)!);
    expect(bytes.includes('<script>')).toBe(false);
    // It is the copy (the source's own stream, not an encode here, which would carry x264's own
    // header as the source did: the copy leaves out every SEI unit), and it plays whole.
    expect(bytes.includes('x264 - core')).toBe(false);
    expect(frameSizes(t.vop.media.resolveRelative('play', copy.file)!)).toEqual({ '640x360': 50 });
    const hlsDir = t.vop.media.path('hls', id, copy.label);
    for (const seg of fs.readdirSync(hlsDir).filter((f) => f.endsWith('.ts'))) expect(fs.readFileSync(path.join(hlsDir, seg)).includes('<script>')).toBe(false);
  }, 180_000);
});

describe('a transport stream whose timestamps jump three hours after 4 s of video', () => {
  it('has the duration of its frames, not of the jump, in the API and in its renditions', async () => {
    const parts = [];
    for (const [i, offset] of [0, 10_800].entries()) {
      const part = path.join(dir, `jump-${i}.ts`);
      await run([
        '-f', 'lavfi', '-i', 'testsrc2=s=640x360:r=25:d=2', '-f', 'lavfi', '-i', 'sine=d=2',
        '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-g', '25', '-c:a', 'aac',
        '-output_ts_offset', String(offset), '-f', 'mpegts', '-y', part,
      ]);
      parts.push(fs.readFileSync(part));
    }
    const file = path.join(dir, 'jump.ts');
    fs.writeFileSync(file, Buffer.concat(parts));
    // What the header says: the span of the timestamps.
    const header = Number(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', file], { encoding: 'utf8' }));
    expect(header).toBeGreaterThan(10_800);

    const { id, status } = await publish(file);
    expect(status).toBe(1);
    const detail = await client.get('/Api/Video/Get', { Id: id });
    expect(detail.body.VideoModel.Duration).toBe(4);
    for (const r of await t.vop.stores.videos.renditions(id)) {
      const played = Number(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', t.vop.media.resolveRelative('play', r.file)!], { encoding: 'utf8' }));
      expect(played, r.label).toBeGreaterThan(3.5);
      expect(played, r.label).toBeLessThan(5);
    }
  }, 180_000);
});
