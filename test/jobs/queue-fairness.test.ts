import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitForIngest } from '../helpers/ingest.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';

/**
 * Issue 12, items 6 and 8: slots are shared fairly between applications. One application that
 * queues many pulls must not make every other application wait behind all of them. Driven as the
 * applications would (the spec API over HTTP, pulls from a real HTTP source), with one download
 * slot; the order is read from the source server's own log of requests, not from timing.
 */

/** Paths the source was asked for, in the order the requests arrived. */
const asked: string[] = [];
/** Answers held back until the test lets them go. */
const held: Array<() => void> = [];
let holding = true;
let source: http.Server;
let sourceBase: string;

beforeAll(async () => {
  source = http.createServer((req, res) => {
    asked.push(new URL(req.url!, 'http://x').pathname);
    // Not a video: ffprobe (a real one) refuses it at once, so each pull ends quickly in 7.
    const answer = () => res.writeHead(200, { 'content-type': 'video/mp4' }).end(Buffer.from('not a video at all\n'.repeat(20)));
    if (holding) held.push(answer);
    else answer();
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  sourceBase = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const answer of held.splice(0)) answer();
  source.closeAllConnections();
  await new Promise((r) => source.close(r));
});

let s: TestServer | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe('download slots shared between applications', () => {
  it('runs the one pull of an application that queued after another queued four second, not last', async () => {
    const { aVideos, bVideo, queue, a, b } = await queueFiveBehindOne();
    const waiting = await queue();

    // What the console shows is the order the slot will take them in: B's pull next.
    expect(waiting.map((j) => j.videoId)).toEqual([aVideos[0], bVideo, aVideos[1], aVideos[2], aVideos[3]]);
    expect(waiting.map((j) => j.appId)).toEqual([a.appId, b.appId, a.appId, a.appId, a.appId]);

    await releaseAll([...aVideos, bVideo]);
    // Before fairness the slot took them in the order they were queued: a1, a2, a3, a4, b1.
    expect(asked).toEqual(['/a1.mp4', '/b1.mp4', '/a2.mp4', '/a3.mp4', '/a4.mp4']);
  });

  it('keeps the admin\'s "run next" above fairness, and Up/Down within the application', async () => {
    const { aVideos, bVideo, queue, jobOf } = await queueFiveBehindOne();
    const server = s!;
    const move = async (videoId: string, direction: string) =>
      (await server.admin.request('POST', `/jobs/${(await jobOf(videoId)).id}/move`, { direction })).status;
    // a4 runs next, though A already holds the slot and B has waited longer.
    expect(await move(aVideos[3]!, 'top')).toBe(200);
    expect(await move(aVideos[3]!, 'top')).toBe(409);
    // Down moves a2 one place among A's own jobs: after a3, and B's turn is untouched.
    expect(await move(aVideos[1]!, 'down')).toBe(200);
    expect((await queue()).map((j) => j.videoId)).toEqual([aVideos[0], aVideos[3], bVideo, aVideos[2], aVideos[1]]);
    await releaseAll([...aVideos, bVideo]);
    expect(asked).toEqual(['/a1.mp4', '/a4.mp4', '/b1.mp4', '/a3.mp4', '/a2.mp4']);
  });
});

/**
 * One download slot; application A registers four pulls (the first holds the slot: its answer
 * is held back), then B one. Resolves once all five are in the queue.
 */
async function queueFiveBehindOne() {
  asked.length = 0;
  holding = true;
  s = await startServer({ ingest: { pull: { concurrency: 1, allow: ['127.0.0.0/8'] } } });
  const server = s;
  const [a, b] = [await server.newApp('A'), await server.newApp('B')];
  const queue = async () =>
    (await server.admin.request('GET', '/jobs?type=download&state=queued,running')).body.jobs as Array<{ id: string; videoId: string; state: string; appId: string }>;
  const aVideos: string[] = [];
  for (const n of [1, 2, 3, 4]) aVideos.push(await a.register({ SourceFileGetType: 2, SourceFilePath: `${sourceBase}/a${n}.mp4` }));
  await waitUntil("A's four pulls queued, one running", async () => {
    const q = await queue();
    return q.length === 4 && q.filter((j) => j.state === 'running').length === 1 ? q : notYet(q);
  });
  await waitUntil('the first source to be asked for', () => asked.length > 0 || undefined);
  expect(asked).toEqual(['/a1.mp4']);
  const bVideo = await b.register({ SourceFileGetType: 2, SourceFilePath: `${sourceBase}/b1.mp4` });
  await waitUntil("B's pull queued", async () => {
    const q = await queue();
    return q.length === 5 ? q : notYet(q);
  });
  const jobOf = async (videoId: string) => (await queue()).find((j) => j.videoId === videoId)!;
  return { a, b, aVideos, bVideo, queue, jobOf };
}

/** Lets the held answer go and waits until every pull has ended (in 7: not a video). */
async function releaseAll(videoIds: string[]): Promise<void> {
  holding = false;
  for (const answer of held.splice(0)) answer();
  for (const id of videoIds) expect(await waitForIngest(s!.vop, id)).toBe(7);
}
