/**
 * What one transcode may cost, and which media tools run (issue 12, items 8 and 11): the
 * allow-list of containers and codecs, the limits on pixels, frame rate and length (refused at
 * upload, at once), the `-f` that makes ffmpeg read a file as what ffprobe judged it, the memory
 * cap and least privilege of every ffmpeg run, and the deadline of a transcode attempt. Every
 * source is made here with Debian's ffmpeg and sent through the spec API to a real server.
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confine, confinementSupport } from '../../server/media/confinement.js';
import { FfmpegExitError, FfmpegMemoryError, liveProcessCount, run } from '../../server/media/ffmpegRunner.js';
import { buildTranscodeArgs } from '../../server/media/transcodeArgs.js';
import { DEFAULT_ALLOWED_FORMATS, demuxerOf } from '../../server/media/sourcePolicy.js';
import { resolveProcessingOptions, type ProcessingOptionsInput } from '../../server/processing/processingOptions.js';
import type { SpecClient } from '../helpers/client.js';
import { makeTempDir } from '../helpers/clips.js';
import { TINY_PROCESSING } from '../helpers/processing.js';
import { notYet, waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

const FFMPEG = '/usr/bin/ffmpeg';
const FFPROBE = '/usr/bin/ffprobe';
const available = fs.existsSync(FFMPEG) && fs.existsSync(FFPROBE);
const BINARIES = { ffmpegPath: FFMPEG, ffprobePath: FFPROBE };

let dir: string;
let encoders = '';
const servers: TestServer[] = [];

beforeAll(async () => {
  if (!available) return;
  dir = makeTempDir('vop-limits-');
  encoders = (await promisify(execFile)(FFMPEG, ['-hide_banner', '-encoders'])).stdout;
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function server(processing: ProcessingOptionsInput = {}): Promise<{ t: TestServer; client: SpecClient }> {
  const t = await startServer({ processing: { ...TINY_PROCESSING, ...BINARIES, ...processing } });
  servers.push(t);
  return { t, client: await t.newApp() };
}

/** The files made so far, by their arguments: tests that need the same file share it (only read). */
const made = new Map<string, string>();

/**
 * Makes a file with Debian's ffmpeg, once per set of arguments (the 16000x16000 Motion JPEG costs
 * 3 CPU-seconds); `args` are the ffmpeg arguments without the output.
 */
function make(name: string, args: string[]): string {
  const key = JSON.stringify(args);
  const known = made.get(key);
  if (known) return known;
  const out = path.join(dir, name);
  execFileSync(FFMPEG, ['-v', 'error', '-nostdin', ...args, '-y', out]);
  made.set(key, out);
  return out;
}

/** Uploads `file` by multipart (spec API) and returns the envelope and the video's id. */
async function upload(t: TestServer, client: SpecClient, file: string): Promise<{ id: string; code: string; message: string; ms: number }> {
  const id = await client.register();
  const body = new FormData();
  for (const [k, v] of Object.entries({ ...client.auth(), VideoId: id })) body.append(k, v);
  body.append('file', new Blob([Uint8Array.from(fs.readFileSync(file))]), path.basename(file));
  const started = Date.now();
  const res = await fetch(`${t.baseUrl}/Api/Video/Upload`, { method: 'POST', body });
  const msg = ((await res.json()) as { AuthMsg: { ResultCode: string; ResultMessage: string } }).AuthMsg;
  return { id, code: msg.ResultCode, message: msg.ResultMessage, ms: Date.now() - started };
}

function hasEncoder(name: string): boolean {
  return new RegExp(`^ \\S{6} ${name} `, 'm').test(encoders);
}

describe.skipIf(!available)('the allow-list of containers and codecs', () => {
  it('names, for each built-in container, a demuxer that this ffmpeg knows as -f', async () => {
    expect(demuxerOf('mov,mp4,m4a,3gp,3g2,mj2')).toBe('mov');
    expect(demuxerOf('matroska,webm')).toBe('matroska');
    expect(demuxerOf('')).toBeNull();
    for (const name of DEFAULT_ALLOWED_FORMATS.containers) {
      const { stdout } = await promisify(execFile)(FFMPEG, ['-hide_banner', '-h', `demuxer=${name}`]);
      // "Demuxer mov,mp4,m4a,3gp,3g2,mj2 [QuickTime / MOV]:": the name is one of the demuxer's.
      expect(stdout, name).toMatch(new RegExp(`^Demuxer ([\\w,]*,)?${name}[, ]`, 'm'));
    }
  });

  it('refuses Cinepak in AVI and RealMedia at upload (307, status 7) naming what an admin can allow, and takes them once allowed', async ({ skip }) => {
    if (!hasEncoder('cinepak') || !hasEncoder('rv10')) skip("Debian's ffmpeg lacks cinepak or rv10");
    const cinepak = make('cinepak.avi', ['-f', 'lavfi', '-i', 'testsrc2=s=160x120:r=10:d=1', '-c:v', 'cinepak', '-f', 'avi']);
    // RealVideo 1.0 takes sizes in multiples of 16.
    const real = make('real.rm', ['-f', 'lavfi', '-i', 'testsrc2=s=176x144:r=10:d=1', '-c:v', 'rv10', '-f', 'rm']);
    const { t, client } = await server();

    const c = await upload(t, client, cinepak);
    expect(c.code).toBe('307');
    expect(c.message).toContain('video codec (cinepak)');
    expect(c.message).toContain('processing.allowFormats.videoCodecs');
    expect((await t.vop.stores.videos.get(c.id))?.status).toBe(7);
    // Refused files are not kept.
    expect(fs.existsSync(t.vop.media.path('sources', c.id, 'source'))).toBe(false);

    const r = await upload(t, client, real);
    expect(r.code).toBe('307');
    expect(r.message).toContain('container (rm)');
    expect(r.message).toContain('processing.allowFormats.containers');

    // The admin's setting admits them: both end playable.
    const allowed = await server({ allowFormats: { containers: ['rm'], videoCodecs: ['cinepak', 'rv10'] } });
    for (const file of [cinepak, real]) {
      const u = await upload(allowed.t, allowed.client, file);
      expect(u.code, u.message).toBe('1');
      expect(await waitForStatus(allowed.t.vop, u.id, [1, 7], { timeoutMs: 60_000 }), (await allowed.t.vop.stores.videos.get(u.id))?.statusReason).toBe(1);
    }
  }, 120_000);

  it('refuses an audio codec off the list, and rejects a malformed setting by name', async ({ skip }) => {
    // Speex in FLV is something nobody uploads today.
    if (!hasEncoder('libspeex')) skip("Debian's ffmpeg lacks libspeex");
    const speex = make('speex.flv', ['-f', 'lavfi', '-i', 'testsrc2=s=160x120:r=10:d=1', '-f', 'lavfi', '-i', 'sine=d=1:sample_rate=16000', '-c:v', 'flv', '-c:a', 'libspeex', '-f', 'flv']);
    const { t, client } = await server();
    const u = await upload(t, client, speex);
    expect(u.code).toBe('307');
    expect(u.message).toContain('audio codec (speex)');
    expect(() => resolveProcessingOptions({ allowFormats: { videoCodecs: ['Cine pak'] } })).toThrow(/processing\.allowFormats\.videoCodecs\[0\]/);
  }, 60_000);
});

describe.skipIf(!available)('limits on what one source may cost', () => {
  it('refuses the 8000x8000 clip and the 16000x16000 Motion JPEG of the issue at upload, at once, naming the limit', async () => {
    // Two frames each (a single frame is a still picture, refused for that): a fraction of a second.
    const square8k = make('8000.mp4', ['-f', 'lavfi', '-i', 'color=c=gray:s=8000x8000:r=10:d=0.2', '-c:v', 'libx264', '-preset', 'ultrafast', '-f', 'mp4']);
    const mjpeg16k = make('16000.avi', ['-f', 'lavfi', '-i', 'color=c=gray:s=16000x16000:r=10:d=0.2', '-c:v', 'mjpeg', '-q:v', '31', '-f', 'avi']);
    const { t, client } = await server();

    const a = await upload(t, client, square8k);
    expect(a.code).toBe('307');
    expect(a.message).toMatch(/8000x8000, 64 megapixels\) is over the limit of 36 megapixels \(processing\.sourceLimits\.maxPixels\)/);
    const b = await upload(t, client, mjpeg16k);
    expect(b.code).toBe('307');
    expect(b.message).toMatch(/16000x16000\) is over the limit of 8192 pixels a side \(processing\.sourceLimits\.maxSide\)/);
    // Judged by ffprobe at upload (the answer includes sending the file): nothing entered the
    // transcode slot. Generous for a loaded test machine; unrefused, the 8000x8000 clip took 55 s of it.
    expect(a.ms).toBeLessThan(20_000);
    expect(b.ms).toBeLessThan(20_000);
    expect(await t.vop.stores.jobs.list({ types: ['transcode'], limit: 10 })).toEqual([]);
  }, 60_000);

  it('refuses a frame rate and a length over the limits (here set low), and takes a source within them', async () => {
    const fast = make('fast.mp4', ['-f', 'lavfi', '-i', 'testsrc2=s=160x90:r=100:d=1', '-c:v', 'libx264', '-preset', 'ultrafast', '-f', 'mp4']);
    const long = make('long.mp4', ['-f', 'lavfi', '-i', 'testsrc2=s=160x90:r=10:d=3', '-c:v', 'libx264', '-preset', 'ultrafast', '-f', 'mp4']);
    const { t, client } = await server({ sourceLimits: { maxFrameRate: 50, maxDurationSeconds: 2 } });
    const f = await upload(t, client, fast);
    expect(f.code).toBe('307');
    expect(f.message).toContain('frame rate (100 fps) is over the limit of 50 fps (processing.sourceLimits.maxFrameRate)');
    const l = await upload(t, client, long);
    expect(l.code).toBe('307');
    expect(l.message).toContain('over the limit of 2 s (processing.sourceLimits.maxDurationSeconds)');
    const ok = make('ok.mp4', ['-f', 'lavfi', '-i', 'testsrc2=s=160x90:r=25:d=1', '-c:v', 'libx264', '-preset', 'ultrafast', '-f', 'mp4']);
    expect((await upload(t, client, ok)).code).toBe('1');
  }, 60_000);

  it('stops an attempt past its deadline (processing.jobTimeout) and fails the video with that reason, no ffmpeg left', async () => {
    // Long enough at this size that ultrafast cannot finish in 300 ms on any machine.
    const clip = make('slow.mp4', ['-f', 'lavfi', '-i', 'testsrc2=s=1280x720:r=30:d=6', '-c:v', 'libx264', '-preset', 'ultrafast', '-f', 'mp4']);
    const { t, client } = await server({ jobTimeout: { minMs: 300, perSourceSecondMs: 10 }, ladder: { rungs: [{ label: '720p', shortSide: 720, videoBitrateKbps: 2000 }] }, preset: 'veryslow' });
    const u = await upload(t, client, clip);
    expect(u.code).toBe('1');
    const started = Date.now();
    expect(await waitForStatus(t.vop, u.id, [1, 7], { timeoutMs: 30_000 })).toBe(7);
    expect(Date.now() - started).toBeLessThan(10_000);
    const video = await t.vop.stores.videos.get(u.id);
    expect(video?.statusReason).toMatch(/^transcoding failed: took longer than 0\.3 s, the limit for a source of 6 s \(processing\.jobTimeout\); ffmpeg was stopped$/);
    // Failed for good at once (a second attempt would take as long), its outputs gone.
    const [job] = await t.vop.stores.jobs.list({ types: ['transcode'], videoId: u.id, limit: 1 });
    expect(job).toMatchObject({ state: 'failed', attempts: 1 });
    expect(fs.readdirSync(t.vop.media.path('play')).flatMap((d) => fs.readdirSync(t.vop.media.path('play', d)))).toEqual([]);
    await waitForNoFfmpeg();
  }, 60_000);
});

describe.skipIf(!available)('how ffmpeg runs', () => {
  it('reads a source with the demuxer ffprobe judged it by (-f), never with another', async () => {
    const mp4 = make('judged.mp4', ['-f', 'lavfi', '-i', 'testsrc2=s=160x90:r=10:d=1', '-c:v', 'libx264', '-preset', 'ultrafast', '-f', 'mp4']);
    const source = { audioCodec: null, frameRate: 10, nominalFrameRate: 10, interlaced: false, storedWidth: 160, storedHeight: 90 };
    const out = [{ rendition: { label: '90p', width: 160, height: 90, videoBitrateKbps: 200, audioBitrateKbps: 64 }, path: path.join(dir, 'judged-out.mp4') }];
    const args = buildTranscodeArgs(mp4, { ...source, formatName: 'mov,mp4,m4a,3gp,3g2,mj2' }, out);
    expect(args.slice(0, 5)).toEqual(['-f', 'mov', '-protocol_whitelist', 'file', '-i']);
    await run(args, { ffmpegPath: FFMPEG });
    // The same file named as another container is not read at all.
    await expect(run(buildTranscodeArgs(mp4, { ...source, formatName: 'avi' }, out), { ffmpegPath: FFMPEG })).rejects.toThrow(FfmpegExitError);
  });

  it.skipIf(!confinementSupport().noNewPrivileges)('runs with no new privileges and, where the server holds capabilities, none of them', () => {
    const cmd = confine('/usr/bin/grep', ['-E', '^(NoNewPrivs|CapEff|CapBnd):', '/proc/self/status'], { dieWithParent: true, memoryLimitBytes: 256 * 2 ** 20 });
    const status = execFileSync(cmd.file, cmd.args, { encoding: 'utf8' });
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    if (confinementSupport().dropCapabilities) {
      expect(status).toMatch(/^CapEff:\s+0+$/m);
      expect(status).toMatch(/^CapBnd:\s+0+$/m);
    }
    if (confinementSupport().memoryCap) {
      const limits = execFileSync(cmd.file, [...cmd.args.slice(0, cmd.args.indexOf('/usr/bin/grep')), '/usr/bin/cat', '/proc/self/limits'], { encoding: 'utf8' });
      expect(limits).toMatch(/^Max address space\s+268435456\s+268435456\s+bytes/m);
      expect(limits).toMatch(/^Max core file size\s+0\s+0\s+bytes/m);
    }
  });

  it.skipIf(!confinementSupport().memoryCap)('fails a source that needs more memory than the cap cleanly, with the cap as the reason', async () => {
    // The 16000x16000 Motion JPEG, let past the pixel limits: one decoded frame is 384 MB.
    const mjpeg16k = make('16000-capped.avi', ['-f', 'lavfi', '-i', 'color=c=gray:s=16000x16000:r=10:d=0.2', '-c:v', 'mjpeg', '-q:v', '31', '-f', 'avi']);
    const { t, client } = await server({ sourceLimits: { maxSide: 20_000, maxPixels: 300_000_000 }, memoryLimitBytes: 512 * 2 ** 20 });
    const u = await upload(t, client, mjpeg16k);
    expect(u.code, u.message).toBe('1');
    expect(await waitForStatus(t.vop, u.id, [1, 7], { timeoutMs: 60_000 })).toBe(7);
    const video = await t.vop.stores.videos.get(u.id);
    expect(video?.statusReason).toMatch(/^transcoding failed: ffmpeg needed more memory than its cap of 512 MiB \(processing\.memoryLimitBytes\)/);
    const [job] = await t.vop.stores.jobs.list({ types: ['transcode'], videoId: u.id, limit: 1 });
    expect(job).toMatchObject({ state: 'failed', attempts: 1 });
    await waitForNoFfmpeg();

    // The runner says so too, with the cap it ran under.
    const err = await run(['-protocol_whitelist', 'file', '-f', 'avi', '-i', mjpeg16k, '-f', 'null', '-'], { ffmpegPath: FFMPEG, memoryLimitBytes: 512 * 2 ** 20 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FfmpegMemoryError);
    expect((err as FfmpegMemoryError).memoryCapBytes).toBe(512 * 2 ** 20);
    // Without the cap the same run gets further than the first frame (the cap made the difference).
    const free = await run(['-protocol_whitelist', 'file', '-f', 'avi', '-i', mjpeg16k, '-frames:v', '1', '-f', 'null', '-'], { ffmpegPath: FFMPEG }).catch((e: unknown) => e);
    expect(free).not.toBeInstanceOf(Error);
  }, 90_000);

  it('shows the confinement and the memory cap in /healthz (admin), and validates the cap', async () => {
    const { t } = await server({ memoryLimitBytes: 3 * 2 ** 30 });
    const res = await fetch(`${t.baseUrl}/healthz`, { headers: { authorization: `Bearer ${t.vop.adminToken}` } });
    const body = (await res.json()) as { ffmpeg: { confinement: Record<string, unknown> } };
    expect(body.ffmpeg.confinement).toMatchObject({ memoryLimitBytes: 3 * 2 ** 30, memoryCap: confinementSupport().memoryCap, noNewPrivileges: confinementSupport().noNewPrivileges });
    expect(body.ffmpeg.confinement.warning).toBe(confinementSupport().memoryCap && confinementSupport().noNewPrivileges ? '' : expect.any(String));
    expect(() => resolveProcessingOptions({ memoryLimitBytes: 1000 })).toThrow(/processing\.memoryLimitBytes/);
    expect(resolveProcessingOptions().memoryLimitBytes).toBeGreaterThanOrEqual(4 * 2 ** 30);
  });
});

async function waitForNoFfmpeg(): Promise<void> {
  await waitUntil('no ffmpeg left running', () => (liveProcessCount() === 0 ? true : notYet(`${liveProcessCount()} running`)), { timeoutMs: 10_000, pollMs: 50 });
}
