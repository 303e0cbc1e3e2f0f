/**
 * Files that make ffprobe open other files: a playlist that names itself drove the intake probe
 * to some 4 GB and half a minute of CPU. The probe now opens only the allowed demuxers
 * (`-format_whitelist`, media/demuxers.ts), so such a file is refused by name before any demuxer
 * reads what it names. Real server, real ffprobe, every run under a 512 MiB cap.
 */
import fs from 'node:fs';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpecClient } from '../helpers/client.js';
import { makeClip } from '../helpers/clips.js';
import { processes, runs } from '../helpers/procs.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let client: SpecClient;

beforeAll(async () => {
  // The default memory cap of a transcode (gigabytes): a probe is capped lower by itself.
  s = await startServer({ processing: { retry: { maxRetries: 0 } } });
  client = await s.newApp();
});
afterAll(async () => {
  await s?.close();
});

/** ffprobe processes this test process started, running now (their parent is us). */
const ourFfprobes = () => processes((p) => p.ppid === process.pid && runs(p, 'ffprobe'));

/** A process's address-space cap in bytes, from /proc (Infinity for none; undefined if it has ended). */
function addressSpaceCap(pid: number): number | undefined {
  try {
    const line = fs.readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max address space'))!;
    const soft = line.replace('Max address space', '').trim().split(/\s+/)[0]!;
    return soft === 'unlimited' ? Infinity : Number(soft);
  } catch {
    return undefined;
  }
}

async function upload(videoId: string, content: string | Buffer): Promise<{ ResultCode: string; ResultMessage: string }> {
  const f = new FormData();
  for (const [k, v] of Object.entries({ ...client.auth(), VideoId: videoId })) f.append(k, v);
  f.append('file', new Blob([typeof content === 'string' ? content : Uint8Array.from(content)]), 'clip.mp4');
  const res = await fetch(`${s.baseUrl}/Api/Video/Upload`, { method: 'POST', body: f });
  return (await res.json()).AuthMsg;
}

describe.runIf(process.platform === 'linux')('uploads that name other files, and many uploads at once', () => {
  it('refuses three self-naming playlists sent at once within seconds, by name, and keeps nothing', async () => {
    const ids = [await client.register(), await client.register(), await client.register()];
    // A playlist ffprobe's HLS demuxer takes for one, naming the stored source it would become.
    const playlist = (id: string) => `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n${s.vop.media.path('sources', id, 'source')}\n`;
    const started = Date.now();
    const answers = await Promise.all(ids.map((id) => upload(id, playlist(id))));
    expect(Date.now() - started).toBeLessThan(10_000);
    for (const [i, a] of answers.entries()) {
      expect(a.ResultCode, JSON.stringify(a)).toBe('307');
      const video = (await s.vop.stores.videos.get(ids[i]!))!;
      expect(video.status).toBe(7);
      expect(video.statusReason).toMatch(/"hls" refers to other files or streams/);
      expect(fs.existsSync(s.vop.media.path('sources', ids[i]!, 'source'))).toBe(false);
    }
  });

  it('probes at most as many uploads at once as the machine has cores (at least 2), whatever arrives', async () => {
    const bound = Math.max(2, os.availableParallelism());
    const clip = fs.readFileSync(await makeClip({ seconds: 1 }));
    // The binaries are chosen (and proved, with probes of their own) before the burst.
    const first = await client.register();
    expect((await upload(first, clip)).ResultCode).toBe('1');
    const ids = await Promise.all(Array.from({ length: 4 * bound }, () => client.register()));
    let most = 0;
    const caps = new Set<number>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const running = ourFfprobes();
        most = Math.max(most, running.length);
        for (const p of running) {
          const cap = addressSpaceCap(p.pid);
          if (cap !== undefined) caps.add(cap);
        }
        await new Promise((r) => setTimeout(r, 2)); // the sampling interval
      }
    })();
    try {
      const answers = await Promise.all(ids.map((id) => upload(id, clip)));
      expect(answers.map((a) => a.ResultCode)).toEqual(ids.map(() => '1'));
    } finally {
      sampling = false;
      await sampler;
    }
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(bound);
    // Every probe seen ran under a cap of 512 MiB at most, though transcodes may take gigabytes.
    expect(caps.size).toBeGreaterThan(0);
    for (const cap of caps) expect(cap).toBeLessThanOrEqual(512 * 2 ** 20);
    expect(s.vop.options.processing.memoryLimitBytes).toBeGreaterThan(512 * 2 ** 20);
  });

  it('refuses a concat list and a DASH manifest the same way', async () => {
    for (const [content, name] of [
      [`ffconcat version 1.0\nfile '${s.vop.media.path('sources')}/x'\n`, 'concat'],
      ['<?xml version="1.0"?>\n<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static"><Period><AdaptationSet><Representation id="1" bandwidth="1"><BaseURL>file:///etc/passwd</BaseURL></Representation></AdaptationSet></Period></MPD>\n', 'dash'],
    ] as const) {
      const id = await client.register();
      const a = await upload(id, content);
      expect(a.ResultCode, name).toBe('307');
      expect((await s.vop.stores.videos.get(id))!.statusReason, name).toMatch(/^not a video: /);
    }
  });
});
