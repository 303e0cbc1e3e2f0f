/**
 * ffmpeg chosen by what works (issue 10, item 1): the candidates are proved on a sample of each
 * common container, a probe that crashes is retried with the other ffprobe, and when every one
 * crashes the video fails as a retryable tool failure, never as "not a video". The crashes are
 * real: the ffprobe bundled by @ffprobe-installer dies with SIGSEGV on every MPEG-TS file.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareVersions, resolveFfmpegBinaries } from '../../server/media/ffmpegBinaries.js';
import { PROOF_SAMPLES } from '../../server/media/ffmpegProof.js';
import { ProbeError } from '../../server/media/probe.js';
import { FfmpegTools } from '../../server/media/ffmpegTools.js';
import { launchBrowser } from '../helpers/browser.js';
import { makeTempDir, testBinaries } from '../helpers/clips.js';
import { ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { TINY_PROCESSING } from '../helpers/processing.js';
import { waitForStatus } from '../helpers/wait.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';

const require = createRequire(import.meta.url);
const bundledFfprobe = (require('@ffprobe-installer/ffprobe') as { path: string }).path;
const SYSTEM = '/usr/bin';
const containers = PROOF_SAMPLES.map((s) => s.container);

let dir: string;
let tsClip: string;
/** An "ffprobe" that answers -version and then dies of SIGSEGV on any file, as the bundled one does on TS. */
let crasher: string;

beforeAll(async () => {
  dir = makeTempDir('vop-proof-test-');
  tsClip = path.join(dir, 'camcorder.ts');
  const { ffmpeg } = await testBinaries();
  execFileSync(ffmpeg.path, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=s=160x90:r=25:d=1', '-f', 'lavfi', '-i', 'sine=d=1', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-f', 'mpegts', '-y', tsClip]);
  crasher = path.join(dir, 'ffprobe');
  fs.writeFileSync(crasher, '#!/bin/sh\ncase "$*" in *-version*) echo "ffprobe version 0.0-crasher"; exit 0;; esac\nkill -SEGV $$\n', { mode: 0o755 });
});

describe('the choice of binaries', () => {
  it('compares library versions numerically', () => {
    expect(compareVersions('59.27.100', '58.24.100')).toBe(1);
    expect(compareVersions('59.27.100', '60.10.100')).toBe(-1);
    expect(compareVersions('59.9.0', '59.10.0')).toBe(-1);
    expect(compareVersions(null, '1.0.0')).toBe(-1);
    expect(compareVersions('59.27.100', '59.27.100')).toBe(0);
  });

  it("prefers the system's ffmpeg when newer than the bundled 2018 build, and passes over the bundled ffprobe that crashes on MPEG-TS", async () => {
    const b = await resolveFfmpegBinaries({ env: { PATH: SYSTEM } });
    expect(b.ffmpeg).toMatchObject({ source: 'PATH', path: `${SYSTEM}/ffmpeg` });
    // The bundled ffprobe (2023, libavformat 60) is newer than Debian's (59), so it is tried first…
    expect(compareVersions(b.alternates.ffprobe[0]!.libavformat, b.ffprobe.libavformat)).toBe(1);
    // …and the proof passes it over for its crash, naming the container and the signal.
    expect(b.ffprobe).toMatchObject({ source: 'PATH', path: `${SYSTEM}/ffprobe` });
    expect(b.skipped.join('\n')).toMatch(/ffprobe from @ffprobe-installer\/ffprobe .*MPEG-TS sample: ffprobe crashed \(SIGSEGV\)/);
    expect(b.proof.containers.map((c) => c.container)).toEqual(containers);
    expect(b.proof.containers.every((c) => c.ok)).toBe(true);
    expect(b.proof.summary).toBe('');
  });

  it('with only the bundled pair, chooses it and reports the container that fails', async () => {
    const b = await resolveFfmpegBinaries({ env: { PATH: '/nonexistent' } });
    expect(b.ffprobe.source).toBe('@ffprobe-installer/ffprobe');
    expect(b.ffmpeg.source).toBe('@ffmpeg-installer/ffmpeg');
    const failed = b.proof.containers.filter((c) => !c.ok);
    expect(failed).toEqual([{ container: 'MPEG-TS', ok: false, problem: 'ffprobe crashed (SIGSEGV)' }]);
    expect(b.proof.summary).toBe('MPEG-TS: ffprobe crashed (SIGSEGV).');
  });

  it('keeps a setting even when it fails the proof, and says what fails', async () => {
    const b = await resolveFfmpegBinaries({ ffprobePath: crasher, env: { PATH: SYSTEM } });
    expect(b.ffprobe).toMatchObject({ source: 'setting', path: crasher });
    expect(b.proof.containers.every((c) => !c.ok && /crashed \(SIGSEGV\)/.test(c.problem ?? ''))).toBe(true);
    expect(b.alternates.ffprobe.map((a) => a.source)).toEqual(['@ffprobe-installer/ffprobe', 'PATH']);
  });

  it('makes the samples in one run where it can; where that run fails, each on its own, so each failure is its own sample\'s', async () => {
    // An "ffmpeg" that notes its arguments, then is the system's: one run makes every sample.
    const noted = makeTempDir('vop-proof-one-run-');
    const recorder = path.join(noted, 'ffmpeg');
    fs.writeFileSync(recorder, `#!/bin/sh\necho "$*" >> ${noted}/runs.txt\nexec ${SYSTEM}/ffmpeg "$@"\n`, { mode: 0o755 });
    const whole = await resolveFfmpegBinaries({ ffmpegPath: recorder, env: { PATH: SYSTEM }, proofMemory: path.join(noted, 'proof.json') });
    expect(whole.proof.containers.every((c) => c.ok)).toBe(true);
    const sampleRuns = fs.readFileSync(path.join(noted, 'runs.txt'), 'utf8').trim().split('\n').filter((r) => r.includes('lavfi'));
    expect(sampleRuns).toHaveLength(1);
    for (const spec of PROOF_SAMPLES) expect(sampleRuns[0]).toContain(`sample.${spec.ext}`);

    // An "ffmpeg" that cannot write WebM, as a build without libvpx: the one run that makes every
    // sample fails, and WebM's sample is then made by the next candidate.
    const noWebm = path.join(makeTempDir('vop-proof-no-webm-'), 'ffmpeg');
    fs.writeFileSync(noWebm, `#!/bin/sh\ncase "$*" in *"-f webm"*) echo "Unknown encoder 'libvpx-vp9'" >&2; exit 1;; esac\nexec ${SYSTEM}/ffmpeg "$@"\n`, { mode: 0o755 });
    const b = await resolveFfmpegBinaries({ ffmpegPath: noWebm, env: { PATH: SYSTEM }, proofMemory: path.join(dir, 'no-webm-proof.json') });
    expect(b.ffmpeg).toMatchObject({ source: 'setting', path: noWebm });
    expect(b.proof.containers).toEqual(containers.map((container) => ({ container, ok: true })));
  });
});

describe('the proof runs its candidates confined', () => {
  it.runIf(process.platform === 'linux')('with no new privileges and no capabilities, as every transcode run', async () => {
    // A candidate "ffmpeg" that notes how it was started, then is the real one.
    const record = path.join(dir, 'started-as.txt');
    const recorder = path.join(dir, 'ffmpeg');
    fs.writeFileSync(recorder, `#!/bin/sh\ngrep -E '^(NoNewPrivs|CapBnd):' /proc/self/status | tr -d '\\t' | tr '\\n' ' ' >> ${record}\necho >> ${record}\nexec ${SYSTEM}/ffmpeg "$@"\n`, { mode: 0o755 });
    const b = await resolveFfmpegBinaries({ ffmpegPath: recorder, env: { PATH: SYSTEM } });
    expect(b.ffmpeg).toMatchObject({ source: 'setting', path: recorder });
    expect(b.proof.containers.every((c) => c.ok)).toBe(true);
    const runs = fs.readFileSync(record, 'utf8').trim().split('\n');
    // -version (how a candidate is found to run) plus the proof's sample and decode runs.
    const proofRuns = runs.filter((l) => l.includes('NoNewPrivs:1'));
    expect(proofRuns.length).toBeGreaterThanOrEqual(PROOF_SAMPLES.length);
    for (const line of proofRuns) expect(line).toContain('CapBnd:0000000000000000');
  });
});

describe('a probe that crashes is a failure of the tool, not a verdict on the file', () => {
  it('is retried with the other ffprobe, which reads the MPEG-TS file as a video', async () => {
    const tools = new FfmpegTools({ ffprobePath: bundledFfprobe, env: { PATH: SYSTEM } });
    const verdict = await tools.probe(tsClip, { timeoutMs: 20_000 });
    expect(verdict).toMatchObject({ isVideo: true, videoCodec: 'h264', audioCodec: 'aac' });
  });

  it('throws ProbeError naming each crash when every ffprobe crashes', async () => {
    const tools = new FfmpegTools({ ffprobePath: crasher, env: { PATH: '/nonexistent' } });
    const err = await tools.probe(tsClip, { timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProbeError);
    const message = (err as Error).message;
    expect(message).toMatch(/^every ffprobe failed: /);
    expect(message).toContain(crasher);
    expect(message).toContain(bundledFfprobe);
    expect(message.match(/crashed \(SIGSEGV\)/g)).toHaveLength(2);
  });
});

describe('through the server', () => {
  let t: TestServer | undefined;
  const savedPath = process.env.PATH;
  afterAll(async () => {
    process.env.PATH = savedPath;
    await t?.close();
  });

  async function uploadTs(server: TestServer): Promise<string> {
    const client = await server.newApp();
    const id = await client.register();
    const form = new FormData();
    for (const [k, v] of Object.entries({ ...client.auth(), VideoId: id })) form.append(k, v);
    form.append('file', new Blob([fs.readFileSync(tsClip)], { type: 'video/mp2t' }), 'camcorder.ts');
    const res = await fetch(`${server.baseUrl}/Api/Video/Upload`, { method: 'POST', body: form });
    expect(res.status).toBe(200);
    return id;
  }

  it('an MPEG-TS upload becomes a video when the configured ffprobe crashes on it but another reads it', async () => {
    t = await startServer({ processing: { ...TINY_PROCESSING, ffprobePath: crasher } });
    const health = (await (await fetch(`${t.baseUrl}/healthz`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { ffmpeg: { ok: boolean; proof: { summary: string } } };
    expect(health.ffmpeg.ok).toBe(true);
    expect(health.ffmpeg.proof.summary).toMatch(/MPEG-TS: ffprobe crashed \(SIGSEGV\)/);
    const id = await uploadTs(t);
    expect(await waitForStatus(t.vop, id, [1, 7])).toBe(1);

    // The console's overview tells the admin what fails and what to do about it.
    await ensureConsoleBuilt();
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await logIntoConsole(page, t.baseUrl);
      await page.getByRole('heading', { name: 'ffmpeg in use' }).waitFor();
      const section = page.locator('section', { has: page.getByRole('heading', { name: 'ffmpeg in use' }) });
      await expect.poll(() => section.textContent()).toContain('MPEG-TS ✗');
      const advice = await section.getByRole('alert').textContent();
      expect(advice).toMatch(/cannot be processed with the ffmpeg in use: .*MPEG-TS: ffprobe crashed \(SIGSEGV\)/);
      expect(advice).toContain('sudo apt-get install ffmpeg');
      expect(advice).toContain('VOP_FFPROBE_PATH');
    } finally {
      await browser.close();
    }
    await t.close();
    t = undefined;
  });

  it('when every ffprobe crashes, the video ends in 7 with the crash as its reason, not "not a video", and can be retried', async () => {
    // Only the bundled pair and the crasher: nothing here can read MPEG-TS.
    process.env.PATH = '/nonexistent';
    t = await startServer({ processing: { ...TINY_PROCESSING, ffprobePath: crasher } });
    const id = await uploadTs(t);
    expect(await waitForStatus(t.vop, id, [1, 7])).toBe(7);
    const video = await t.vop.stores.videos.get(id);
    expect(video?.statusReason).toMatch(/crashed \(SIGSEGV\)/);
    expect(video?.statusReason).not.toMatch(/not a video/);
    // The source is kept, so an admin retries once ffmpeg is mended.
    expect(video?.sourceFile).not.toBe('');
    const retried = await fetch(`${t.baseUrl}/admin/api/videos/${id}/retry`, { method: 'POST', headers: { authorization: `Bearer ${t.vop.adminToken}` } });
    expect(retried.status).toBe(200);
    expect(await waitForStatus(t.vop, id, [7], { timeoutMs: 30_000 })).toBe(7);
    expect((await t.vop.stores.videos.statusHistory(id)).map((c) => c.to)).toEqual([8, 5, 6, 7, 5, 6, 7]);
  });
});
