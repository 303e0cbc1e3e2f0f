import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Ffmpeg from 'fluent-ffmpeg';
import { describe, expect, it } from 'vitest';
import { atomicOutput, removePartialOutputs } from '../../server/storage/atomicFile.js';
import {
  FfmpegAbortError,
  FfmpegExitError,
  killAll,
  killOrphans,
  liveProcessCount,
  parentDeathSignalSupported,
  run,
  type FfmpegProgress,
} from '../../server/media/ffmpegRunner.js';
import { ProgressParser } from '../../server/media/ffmpegProgress.js';
import { makeClip, makeTempDir, testBinaries } from '../helpers/clips.js';
import { hold } from '../helpers/procs.js';
import { waitUntil } from '../helpers/wait.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** `-re` reads the input at its own pace: a lavfi source of N seconds then takes N seconds of wall time. */
const realTime = (seconds: number) => ['-re', '-f', 'lavfi', '-i', `testsrc2=s=160x90:r=25:d=${seconds}`, '-f', 'null', '-'];

/** Alive means running or sleeping; a zombie is dead, waiting only to be reaped. */
function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

describe('ffmpeg runner', () => {
  it('reports progress with increasing percent, fps, speed and time left, ending at 100', async () => {
    const reports: FfmpegProgress[] = [];
    await run(realTime(2), { durationSeconds: 2, onProgress: (p) => reports.push(p) });
    expect(reports.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < reports.length; i++) expect(reports[i]!.percent!).toBeGreaterThanOrEqual(reports[i - 1]!.percent!);
    const middle = reports.filter((r) => !r.done && r.percent! > 0);
    expect(middle.length).toBeGreaterThanOrEqual(2);
    expect(middle[0]!.percent!).toBeLessThan(100);
    expect(middle.some((r) => r.etaSeconds !== null && r.etaSeconds > 0 && r.speed !== null && r.fps !== null)).toBe(true);
    expect(reports.at(-1)).toMatchObject({ percent: 100, done: true, etaSeconds: 0 });
    expect(liveProcessCount()).toBe(0);
  });

  it('parses -progress blocks split anywhere, with N/A values', () => {
    const parser = new ProgressParser(10);
    expect(parser.push('frame=0\nfps=0.00\nout_time_us=N/A\nspeed=N/A\nprog')).toEqual([]);
    expect(parser.push('ress=continue\nout_time_us=5000000\nspeed=2.5x\nfps=50\nprogress=continue\n')).toEqual([
      { percent: 0, fps: null, speed: null, outTimeSeconds: 0, etaSeconds: null, done: false },
      { percent: 50, fps: 50, speed: 2.5, outTimeSeconds: 5, etaSeconds: 2, done: false },
    ]);
    expect(parser.push('out_time_us=4000000\nprogress=end\n')[0]).toMatchObject({ percent: 100, done: true });
    expect(new ProgressParser().push('out_time_us=1000000\nprogress=continue\n')[0]).toMatchObject({ percent: null, outTimeSeconds: 1 });
  });

  it('cancels through an AbortSignal: the process is gone when the AbortError arrives', async () => {
    const controller = new AbortController();
    let pid = 0;
    const running = run(realTime(30), {
      durationSeconds: 30,
      signal: controller.signal,
      onSpawn: (p) => (pid = p),
      onProgress: () => controller.abort(),
    });
    const err = await running.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FfmpegAbortError);
    expect((err as Error).name).toBe('AbortError');
    expect(pid).toBeGreaterThan(0);
    expect(isAlive(pid)).toBe(false);
    expect(liveProcessCount()).toBe(0);
    await expect(run(realTime(1), { signal: AbortSignal.abort() })).rejects.toThrow(FfmpegAbortError);
  });

  it('escalates to SIGKILL when ffmpeg ignores the polite signal', async () => {
    // A stopped process cannot act on SIGTERM; only SIGKILL ends it.
    const controller = new AbortController();
    let pid = 0;
    let progressed = false;
    const running = run(realTime(30), { signal: controller.signal, killGraceMs: 200, onSpawn: (p) => (pid = p), onProgress: () => (progressed = true) });
    running.catch(() => undefined); // judged below; keep Node from calling it unhandled meanwhile
    // Only once ffmpeg reports progress has it installed its SIGTERM handler (before that, the
    // default action would kill even a stopped process at once).
    await waitUntil('a progress report', () => progressed || undefined, { timeoutMs: 5000, pollMs: 50 });
    expect(hold(pid)).toBe(true);
    const started = Date.now();
    controller.abort();
    await expect(running).rejects.toThrow(FfmpegAbortError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(isAlive(pid)).toBe(false);
  });

  it('rejects with the end of stderr when ffmpeg fails', async () => {
    const err = await run(['-i', '/nonexistent/input.mp4', '-f', 'null', '-']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FfmpegExitError);
    expect((err as FfmpegExitError).exitCode).not.toBe(0);
    expect((err as FfmpegExitError).message).toMatch(/No such file or directory/);
  });

  it('killAll() ends every live ffmpeg at shutdown', async () => {
    const pids: number[] = [];
    const runs = [run(realTime(30), { onSpawn: (p) => pids.push(p) }), run(realTime(30), { onSpawn: (p) => pids.push(p) })];
    await waitUntil('both pids', () => pids.length === 2 || undefined, { timeoutMs: 5000, pollMs: 50 });
    expect(liveProcessCount()).toBe(2);
    const settled = Promise.allSettled(runs); // handlers in place before the rejections arrive
    expect(await killAll()).toBe(2);
    for (const r of await settled) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toMatchObject({ name: 'FfmpegExitError', signal: 'SIGKILL' });
    }
    expect(pids.every((p) => !isAlive(p))).toBe(true);
    expect(liveProcessCount()).toBe(0);
  });

  it('keeps the PID file current while ffmpeg runs, and removes it after', async () => {
    const pidFile = path.join(makeTempDir(), 'ffmpeg.pids');
    let pid = 0;
    const running = run(realTime(1), { pidFile, onSpawn: (p) => (pid = p) });
    await waitUntil('the pid', () => pid > 0 || undefined, { timeoutMs: 5000, pollMs: 50 });
    expect(fs.readFileSync(pidFile, 'utf8')).toContain(`"pid":${pid}`);
    await running;
    expect(fs.existsSync(pidFile)).toBe(false);
  });

  it('killOrphans() kills what a crashed server left running, and nothing else', async () => {
    const pidFile = path.join(makeTempDir(), 'ffmpeg.pids');
    // A "server" without the parent-death signal, killed with SIGKILL mid-transcode: its ffmpeg lives on.
    const { pid: ffmpegPid, parent } = await childServerRunningFfmpeg({ pidFile, dieWithParent: false });
    parent.kill('SIGKILL');
    await new Promise((r) => parent.once('exit', r));
    // Time is the subject: nothing ends it within 300 ms of its parent's death (a parent-death signal would have).
    await new Promise((r) => setTimeout(r, 300));
    expect(isAlive(ffmpegPid), 'an orphan ffmpeg is left').toBe(true);

    // An unrelated process whose PID happens to be listed must survive (start time differs).
    const bystander = spawn('sleep', ['30']);
    const lines = fs.readFileSync(pidFile, 'utf8') + JSON.stringify({ pid: bystander.pid, startTime: '1', binary: 'ffmpeg' }) + '\n';
    fs.writeFileSync(pidFile, lines);

    expect(killOrphans(pidFile)).toEqual([ffmpegPid]);
    await waitUntil(`ffmpeg ${ffmpegPid} to end`, () => !isAlive(ffmpegPid) || undefined, { timeoutMs: 3000, pollMs: 50 });
    expect(isAlive(bystander.pid!)).toBe(true);
    expect(fs.existsSync(pidFile)).toBe(false);
    expect(killOrphans(pidFile)).toEqual([]); // no file: nothing to do
    bystander.kill('SIGKILL');
  });

  it.skipIf(!parentDeathSignalSupported())('leaves no orphan ffmpeg when the server is killed with SIGKILL (Linux, setpriv)', async () => {
    const { pid: ffmpegPid, parent } = await childServerRunningFfmpeg({ dieWithParent: true });
    expect(isAlive(ffmpegPid)).toBe(true);
    parent.kill('SIGKILL');
    await waitUntil(`ffmpeg ${ffmpegPid} to die with its parent`, () => !isAlive(ffmpegPid) || undefined, { timeoutMs: 3000, pollMs: 50 });
  });

  it('runs a fluent-ffmpeg command with the same progress and cancellation', async () => {
    const { ffmpeg } = await testBinaries();
    const dir = makeTempDir();
    const clip = await makeClip({ seconds: 2, width: 320, height: 180 });
    const out = path.join(dir, 'fluent.mp4');
    const reports: FfmpegProgress[] = [];
    const command = Ffmpeg(clip).videoCodec('libx264').outputOptions(['-preset', 'ultrafast']).output(out);
    await run(command, { ffmpegPath: ffmpeg.path, durationSeconds: 2, onProgress: (p) => reports.push(p) });
    expect(fs.statSync(out).size).toBeGreaterThan(0);
    expect(reports.at(-1)).toMatchObject({ percent: 100, done: true });

    const controller = new AbortController();
    let pid = 0;
    const slow = Ffmpeg().input('testsrc2=s=160x90:r=25:d=30').inputFormat('lavfi').native().format('null').output('-');
    const running = run(slow, { ffmpegPath: ffmpeg.path, signal: controller.signal, onSpawn: (p) => (pid = p) });
    await waitUntil('the pid', () => pid > 0 || undefined, { timeoutMs: 5000, pollMs: 50 });
    controller.abort();
    await expect(running).rejects.toThrow(FfmpegAbortError);
    expect(isAlive(pid)).toBe(false);
  });
});

describe('atomic outputs', () => {
  it('writes under a temporary name in the same folder and renames on commit', async () => {
    const dir = makeTempDir();
    const final = path.join(dir, 'video', '720p.mp4');
    const out = atomicOutput(final);
    expect(path.dirname(out.tmpPath)).toBe(path.dirname(final));
    expect(out.tmpPath.endsWith('.mp4')).toBe(true);
    fs.writeFileSync(out.tmpPath, 'data');
    expect(fs.existsSync(final)).toBe(false);
    await out.commit();
    expect(fs.readFileSync(final, 'utf8')).toBe('data');
    expect(fs.readdirSync(path.dirname(final))).toEqual(['720p.mp4']);
    await expect(out.commit()).rejects.toThrow(/already committed/);
  });

  it('abort() removes the partial file, and removePartialOutputs() sweeps what a crash left', async () => {
    const dir = makeTempDir();
    const a = atomicOutput(path.join(dir, 'a.mp4'));
    fs.writeFileSync(a.tmpPath, 'half');
    await a.abort();
    await a.abort();
    expect(fs.readdirSync(dir)).toEqual([]);

    const crashed = atomicOutput(path.join(dir, 'b.mp4'));
    fs.writeFileSync(crashed.tmpPath, 'half');
    const crashedDir = atomicOutput(path.join(dir, 'hls'), { directory: true });
    fs.writeFileSync(path.join(crashedDir.tmpPath, 'seg.ts'), 'half');
    fs.writeFileSync(path.join(dir, 'keep.mp4'), 'whole');
    expect((await removePartialOutputs(dir)).length).toBe(2);
    expect(fs.readdirSync(dir)).toEqual(['keep.mp4']);
  });

  it('replaces a committed directory as a whole', async () => {
    const dir = makeTempDir();
    for (const content of ['first', 'second']) {
      const out = atomicOutput(path.join(dir, 'hls'), { directory: true });
      fs.writeFileSync(path.join(out.tmpPath, `${content}.m3u8`), content);
      await out.commit();
    }
    expect(fs.readdirSync(path.join(dir, 'hls'))).toEqual(['second.m3u8']);
  });
});

/**
 * Starts a separate Node process (a stand-in for the server) that runs a long ffmpeg through the
 * runner, and resolves with ffmpeg's PID once it is running.
 */
async function childServerRunningFfmpeg(opts: { pidFile?: string; dieWithParent: boolean }) {
  const { ffmpeg } = await testBinaries();
  const runner = path.join(ROOT, 'server/media/ffmpegRunner.ts');
  const script = `
    const { run } = await import(${JSON.stringify(runner)});
    run(${JSON.stringify(realTime(60))}, {
      ffmpegPath: ${JSON.stringify(ffmpeg.path)},
      pidFile: ${JSON.stringify(opts.pidFile)},
      dieWithParent: ${opts.dieWithParent},
      onSpawn: (pid) => console.log('PID ' + pid),
    }).catch(() => {});`;
  const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = await new Promise<number>((resolve, reject) => {
    let out = '';
    parent.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /PID (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    parent.once('exit', (code) => reject(new Error(`child server exited early (${code})`)));
  });
  if (opts.pidFile) expect(fs.readFileSync(opts.pidFile, 'utf8')).toContain(`"pid":${pid}`);
  return { pid, parent };
}
