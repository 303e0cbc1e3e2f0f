/**
 * HDR sources look right: an HLG (HEVC 10-bit, as iPhones record) and a PQ (VP9 10-bit) source
 * are tone-mapped to BT.709 SDR in every rendition, HLS segment and cover, tagged `bt709`, and
 * never stream-copied. The colour is checked, not only the tags: each test source is made from an
 * SDR picture the BT.2408 way (its white at 203 cd/m²), so a right tone mapping gives back about
 * that picture. Measured with ffmpeg's signalstats on both, in the same limited-range 4:4:4: the
 * mean luma (YAVG) and mean saturation (SATAVG) within 10 % of the SDR original's. Converted
 * without tone mapping, the saturation is a third of the original's. And an ffmpeg that lacks the
 * filters is said at start-up and in /healthz.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FfmpegTools } from '../../server/media/ffmpegTools.js';
import { run } from '../../server/media/ffmpegRunner.js';
import { makeTempDir } from '../helpers/clips.js';
import { SpecClient } from '../helpers/client.js';
import { probe } from '../helpers/probe.js';
import { placeSource, probeVideo } from '../helpers/processing.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';
import { isWarningLine } from '../../server/core/logLines.js';

let dir: string;
let t: TestServer;
let client: SpecClient;
/** The SDR picture both HDR sources were made from. */
let sdr: string;

/** An SDR source's picture made HDR as BT.2408 says (diffuse white at 203 cd/m²), 10-bit. */
function hdrArgs(transfer: 'arib-std-b67' | 'smpte2084'): string[] {
  return ['-vf', `format=gbrpf32le,zscale=tin=bt709:min=bt709:pin=bt709:rin=limited:t=${transfer}:m=bt2020nc:p=bt2020:r=limited:npl=203,format=yuv420p10le`, '-color_primaries', 'bt2020', '-color_trc', transfer, '-colorspace', 'bt2020nc'];
}

const PICTURE = ['-f', 'lavfi', '-i', 'testsrc2=s=640x360:r=25:d=3', '-f', 'lavfi', '-i', 'sine=f=440:sample_rate=48000:d=3'];

beforeAll(async () => {
  dir = makeTempDir('vop-hdr-');
  sdr = path.join(dir, 'sdr.mp4');
  await run([...PICTURE, '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-y', sdr]);
  t = await startServer({ processing: { preset: 'ultrafast', concurrency: 1, retry: { maxRetries: 0 }, ladder: { rungs: [{ label: '360p', shortSide: 360, videoBitrateKbps: 800 }, { label: '180p', shortSide: 180, videoBitrateKbps: 300 }], audioBitrateKbps: 64 } } });
  client = await t.newApp();
});
afterAll(async () => {
  await t?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Mean luma and saturation of a picture (a frame of a video at `at`, or an image), in limited-range 4:4:4. */
async function colour(file: string, at = 0): Promise<{ luma: number; saturation: number }> {
  const { stdout } = await run([...(at > 0 ? ['-ss', String(at)] : []), '-i', file, '-frames:v', '1', '-vf', 'scale=out_range=limited,format=yuv444p,signalstats,metadata=print:file=-', '-f', 'null', '-'], { maxStdoutBytes: 65536 });
  const text = stdout.toString();
  const read = (key: string) => Number(new RegExp(`${key}=([\\d.]+)`).exec(text)?.[1]);
  return { luma: read('YAVG'), saturation: read('SATAVG') };
}

/** The colour tags of a file's first video stream, as ffprobe names them. */
async function tags(file: string): Promise<string[]> {
  const info = await probeVideo(file);
  return [info.colorPrimaries ?? '?', info.colorTransfer ?? '?', info.colorMatrix ?? '?'];
}

function near(actual: number, expected: number, fraction: number): void {
  expect(Math.abs(actual - expected) / expected, `${actual} against ${expected}`).toBeLessThanOrEqual(fraction);
}

const SOURCES = [
  { name: 'HLG, HEVC 10-bit (an iPhone)', transfer: 'arib-std-b67', codec: ['-c:v', 'libx265', '-x265-params', 'log-level=error', '-tag:v', 'hvc1'], ext: 'mp4' },
  { name: 'PQ, VP9 10-bit', transfer: 'smpte2084', codec: ['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '1M', '-c:a', 'libopus'], ext: 'webm' },
] as const;

/** Makes the HDR source `s` from the SDR picture (a file of its own for each call). */
async function hdrSource(s: (typeof SOURCES)[number], name: string): Promise<string> {
  const source = path.join(dir, `${name}.${s.ext}`);
  await run([...PICTURE, ...hdrArgs(s.transfer), ...s.codec, ...(s.ext === 'mp4' ? ['-c:a', 'aac'] : []), '-y', source]);
  return source;
}

describe('HDR sources are tone-mapped to SDR everywhere', () => {
  for (const s of SOURCES) {
    it(`${s.name}: every rendition, HLS segment and cover is bt709 and keeps the colours of the SDR original`, async () => {
      const source = await hdrSource(s, s.transfer);
      const info = await probeVideo(source);
      expect(info.colorTransfer).toBe(s.transfer);
      // Without tone mapping (what vop made before), the picture is washed out: the check can fail.
      const raw = await colour(source, 1);
      const original = await colour(sdr, 1);
      expect(raw.saturation).toBeLessThan(original.saturation * 0.5);

      const id = await client.register();
      await placeSource(t.vop, id, source);
      expect(await waitForStatus(t.vop, id, [1, 7], { timeoutMs: 90_000 })).toBe(1);
      const renditions = await t.vop.stores.videos.renditions(id);
      expect(renditions.map((r) => r.label).sort()).toEqual(['180p', '360p']);
      for (const r of renditions) {
        const file = t.vop.media.resolveRelative('play', r.file)!;
        expect(await tags(file)).toEqual(['bt709', 'bt709', 'bt709']);
        expect((await probeVideo(file)).pixelFormat).toBe('yuv420p');
      }
      const top = t.vop.media.resolveRelative('play', renditions.find((r) => r.label === '360p')!.file)!;
      const made = await colour(top, 1);
      near(made.luma, original.luma, 0.1);
      near(made.saturation, original.saturation, 0.1);

      const segment = t.vop.media.path('hls', id, '360p', 'seg_00000.ts');
      expect(await tags(segment)).toEqual(['bt709', 'bt709', 'bt709']);

      // The cover is a frame the sampler chose: testsrc2's bars keep the same colours throughout.
      const cover = t.vop.media.path('covers', id, 'cover.jpg');
      const shown = await colour(cover);
      near(shown.luma, original.luma, 0.1);
      near(shown.saturation, original.saturation, 0.1);
    }, 120_000);
  }
});

describe('an ffmpeg that cannot tone-map', () => {
  let lacking: string;
  beforeAll(() => {
    // Debian's ffmpeg, but for its list of filters, which leaves zscale out.
    lacking = path.join(dir, 'ffmpeg');
    fs.writeFileSync(lacking, '#!/bin/sh\ncase "$*" in *-filters*) /usr/bin/ffmpeg "$@" | grep -v " zscale "; exit 0;; esac\nexec /usr/bin/ffmpeg "$@"\n', { mode: 0o755 });
  });

  it('is said: the filters it lacks and what happens to HDR sources', async () => {
    const tools = new FfmpegTools({ ffmpegPath: lacking, ffprobePath: '/usr/bin/ffprobe' });
    const status = await tools.toneMapping();
    expect(status).toMatchObject({ available: false, missing: ['zscale'] });
    expect(status.warning).toMatch(/zscale/);
    expect(status.warning).toMatch(/washed out/);
    expect((await new FfmpegTools({ ffmpegPath: '/usr/bin/ffmpeg', ffprobePath: '/usr/bin/ffprobe' }).toneMapping()).available).toBe(true);
  });

  it('is said at start-up and in /healthz, and an HDR source is still converted', async () => {
    const other = await startServer({ processing: { ffmpegPath: lacking, ffprobePath: '/usr/bin/ffprobe', preset: 'ultrafast', retry: { maxRetries: 0 } } });
    try {
      // Warned of at start-up in the words the tools give (checked above: it names zscale).
      const said = (await new FfmpegTools({ ffmpegPath: lacking, ffprobePath: '/usr/bin/ffprobe' }).toneMapping()).warning!;
      await waitUntil('the start-up warning', () => (other.logs.some((l) => isWarningLine(l) && l.includes(said)) ? true : undefined), { timeoutMs: 20_000 });
      const health = await (await fetch(`${other.baseUrl}/healthz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json();
      expect(JSON.stringify(health)).toMatch(/"toneMapping":\{"available":false,"missing":\["zscale"\]/);
      const source = await hdrSource(SOURCES[0], 'hlg-without-tone-mapping');
      const c = await other.newApp();
      const id = await c.register();
      await placeSource(other.vop, id, source);
      expect(await waitForStatus(other.vop, id, [1, 7], { timeoutMs: 90_000 })).toBe(1);
      const file = other.vop.media.resolveRelative('play', (await other.vop.stores.videos.renditions(id))[0]!.file)!;
      expect((await probe(file)).isVideo).toBe(true);
    } finally {
      await other.close();
    }
  }, 120_000);
});
