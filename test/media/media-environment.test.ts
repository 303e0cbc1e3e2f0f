/**
 * What ffmpeg and ffprobe are given to work with (media/confinement.ts, probe.ts): an environment
 * without the server's secrets, and a report size past which the file is refused rather than the
 * tool taken for broken. Stand-in tools (shell scripts in place of ffmpeg and ffprobe) show what a
 * real one would be handed, through the real spawning code.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolEnvironment } from '../../server/media/confinement.js';
import { run } from '../../server/media/ffmpegRunner.js';
import { probe } from '../../server/media/probe.js';
import { makeTempDir } from '../helpers/clips.js';

let dir: string;
const SECRETS = { VOP_ADMIN_TOKEN: 'admin-token-that-no-tool-may-read', VOP_DATABASE_URL: 'postgres://u:p@db/vop', AWS_SECRET_ACCESS_KEY: 's3-secret' };
const saved: Record<string, string | undefined> = {};

/** A stand-in tool: writes its environment to `<name>.env`, then runs `rest` (shell). */
function standIn(name: string, rest: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!/bin/sh\nenv > "${file}.env"\n${rest}\n`, { mode: 0o755 });
  return file;
}

const namesIn = (envFile: string) => fs.readFileSync(envFile, 'utf8').split('\n').filter(Boolean).map((l) => l.split('=')[0]!);

beforeAll(() => {
  dir = makeTempDir('vop-tool-env-');
  for (const [k, v] of Object.entries(SECRETS)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
});
afterAll(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

describe.runIf(process.platform !== 'win32')("the tools' environment", () => {
  it('gives an ffmpeg run where programs and libraries are, and none of the server’s secrets', async () => {
    const ffmpeg = standIn('ffmpeg', 'exit 0');
    await run(['-version'], { ffmpegPath: ffmpeg });
    const names = namesIn(`${ffmpeg}.env`);
    expect(names).toContain('PATH');
    for (const secret of Object.keys(SECRETS)) expect(names).not.toContain(secret);
    expect(fs.readFileSync(`${ffmpeg}.env`, 'utf8')).not.toContain(SECRETS.VOP_ADMIN_TOKEN);
  });

  it('gives ffprobe the same', async () => {
    const ffprobe = standIn('ffprobe', `echo '{"streams":[{"codec_type":"video","codec_name":"h264","width":2,"height":2}],"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2","duration":"1"}}'`);
    const file = path.join(dir, 'some.mp4');
    fs.writeFileSync(file, 'x');
    expect((await probe(file, { ffprobePath: ffprobe, timeoutMs: 10_000 })).isVideo).toBe(true);
    for (const secret of Object.keys(SECRETS)) expect(namesIn(`${ffprobe}.env`)).not.toContain(secret);
  });

  it('keeps only the variables a tool needs to start', () => {
    expect(toolEnvironment({ PATH: '/usr/bin', LD_LIBRARY_PATH: '/opt/lib', HOME: '/root', ...SECRETS })).toEqual({ PATH: '/usr/bin', LD_LIBRARY_PATH: '/opt/lib' });
  });
});

describe.runIf(process.platform !== 'win32')("ffprobe's report", () => {
  it('refuses a file whose report is over 8 MiB (a crafted metadata tag), instead of passing it on as a probe that broke', async () => {
    // 9 MiB of JSON, as ffprobe prints for a file with a 9 MB tag.
    const ffprobe = standIn('ffprobe-big', `printf '{"format":{"tags":{"comment":"'; head -c 9437184 /dev/zero | tr '\\0' a; printf '"}}}'`);
    const file = path.join(dir, 'tagged.mp4');
    fs.writeFileSync(file, 'x');
    const verdict = await probe(file, { ffprobePath: ffprobe, timeoutMs: 20_000 });
    expect(verdict).toMatchObject({ isVideo: false, reason: expect.stringMatching(/report on it is over 8 MiB/) });
  });
});
