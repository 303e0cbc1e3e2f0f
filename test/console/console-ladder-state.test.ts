/**
 * The console's view of a ladder that grows while its video is served: the admin API's video
 * answer carries where the rest of the ladder stands (`ladder`: state, renditions listed, how
 * many it comes to, its job), the events stream says when it lands or gives up
 * (`video.renditions`), and the transcode monitor's one request lists first renditions and
 * ladders together. Real server on a port, real ffmpeg: a 320x180 H.264 clip is copied as the
 * 180p first rendition and the ladder adds 120p (TINY_PROCESSING).
 *
 * The ladder job is held back (queued an hour ahead) so that its pending state can be looked at
 * before it runs; a cancel and a retry then take it through failed to landed, as an admin would.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ladderView } from '../../server/console/ladderView.js';
import { resolveLadderOptions } from '../../server/media/ladder.js';
import type { JobRecord } from '../../server/storage/jobRecords.js';
import type { RenditionRecord, VideoRecord } from '../../server/storage/types.js';
import type { JobType } from '../../server/core/jobTypes.js';
import { makeClip } from '../helpers/clips.js';
import type { SpecClient } from '../helpers/client.js';
import { collectEvents } from '../helpers/console.js';
import { TINY_PROCESSING, placeSource } from '../helpers/processing.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let client: SpecClient;
let clip: string;
/** While true, every ladder job is queued an hour ahead, so it waits where a test can see it. */
let holdLadders = true;
const events: Array<{ event: string; data: any }> = [];
const stream = new AbortController();

beforeAll(async () => {
  [s, clip] = await Promise.all([startServer({ processing: TINY_PROCESSING }), makeClip({ seconds: 1, width: 320, height: 180 })]);
  client = await s.newApp('Ladder site');
  // The scheduler queues ladders through this same queue (TranscodeScheduler.ensureLadder).
  const jobs = s.vop.jobs;
  const enqueue = jobs.enqueue.bind(jobs);
  jobs.enqueue = ((type: JobType, payload: never, o: { runAfter?: number } = {}) =>
    enqueue(type, payload, type === 'ladder' && holdLadders ? { ...o, runAfter: Date.now() + 3_600_000 } : o)) as typeof jobs.enqueue;
  const res = await fetch(`${s.baseUrl}/admin/api/events`, { headers: { authorization: `Bearer ${s.vop.adminToken}` }, signal: stream.signal });
  expect(res.status).toBe(200);
  collectEvents(res, events);
  await waitUntil('the events stream', () => (events.some((e) => e.event === 'uploads') ? true : undefined), { timeoutMs: 5_000 });
}, 120_000);

afterAll(async () => {
  stream.abort();
  await s?.close();
});

const detail = async (id: string) => {
  const r = await s.admin.request('GET', `/videos/${id}`);
  expect(r.status).toBe(200);
  return r.body;
};

describe("the admin API's video answer, while the ladder grows", () => {
  it('says pending with 1 of 2 before the ladder lands, failed with the reason when it gives up, and complete with both renditions after', async () => {
    const videoId = await client.register({ VideoTitle: 'Growing ladder' });
    const source = await placeSource(s.vop, videoId, clip);
    expect(await waitForStatus(s.vop, videoId, [1], { timeoutMs: 30_000, firstRendition: true })).toBe(1);

    // Playable with the copied 180p; the ladder job queued (held), 120p to come.
    const job = await waitUntil('the ladder job', async () => (await detail(videoId)).ladder.job ?? undefined);
    expect(job).toMatchObject({ state: 'queued', error: '' });
    expect((await detail(videoId)).ladder).toEqual({ state: 'pending', labels: ['180p'], done: 1, total: 2, job: { id: job.id, state: 'queued', error: '' } });

    // The monitor's one request lists the ladder beside the first renditions, marked by its type.
    const q = (await s.admin.request('GET', '/queue/transcode,ladder?recent=20')).body;
    expect(q.queued.map((j: any) => [j.id, j.type])).toContainEqual([job.id, 'ladder']);
    expect(q.recent).toContainEqual(expect.objectContaining({ videoId, type: 'transcode', state: 'succeeded' }));
    expect(q.titles[videoId]).toBe('Growing ladder');
    expect(q.processing).toMatchObject({ ladderConcurrency: 1, ladderRunning: 0 });
    expect((await s.admin.request('GET', '/queue/transcode,?recent=1')).status).toBe(400);

    // Cancelled by an admin: the ladder failed, the video still playable with its 180p.
    expect((await s.admin.request('POST', `/jobs/${job.id}/cancel`)).status).toBe(200);
    const cancelled = await detail(videoId);
    expect(cancelled.video.status).toBe(1);
    expect(cancelled.ladder).toEqual({ state: 'failed', labels: ['180p'], done: 1, total: 2, job: { id: job.id, state: 'cancelled', error: '' } });
    await waitUntil('video.renditions failed', () => (events.some((e) => e.event === 'video.renditions' && e.data.videoId === videoId && e.data.ladder === 'failed') ? true : undefined), { timeoutMs: 5_000 });
    expect(events.find((e) => e.event === 'video.renditions' && e.data.videoId === videoId)!.data).toEqual({ videoId, appId: client.appId, ladder: 'failed', labels: ['180p'] });

    // Retried without its source: it fails again, and the answer gives the job's reason.
    holdLadders = false;
    const stored = fs.readFileSync(source);
    fs.rmSync(source);
    expect((await s.admin.request('POST', `/jobs/${job.id}/retry`)).status).toBe(200);
    const failed = await waitUntil('the retried ladder to fail', async () => {
      const d = await detail(videoId);
      return d.ladder.job?.state === 'failed' ? d : undefined;
    });
    expect(failed.ladder).toMatchObject({ state: 'failed', labels: ['180p'], done: 1, total: 2 });
    expect(failed.ladder.job.error).toMatch(/source file is missing/);

    // Retried with it back: the ladder lands, and the answer says nothing is to come.
    fs.writeFileSync(source, stored);
    expect((await s.admin.request('POST', `/jobs/${job.id}/retry`)).status).toBe(200);
    expect(await waitForStatus(s.vop, videoId, [1], { timeoutMs: 30_000 })).toBe(1);
    // The rows first, then the job's end: the answer may say complete while its job still runs.
    const landed = await waitUntil('the ladder to land and its job to end', async () => {
      const d = await detail(videoId);
      return d.ladder.state === '' && d.ladder.job?.state === 'succeeded' ? d : undefined;
    });
    expect(landed.ladder).toEqual({ state: '', labels: ['180p', '120p'], done: 2, total: 2, job: { id: job.id, state: 'succeeded', error: '' } });
    await waitUntil('video.renditions landed', () => (events.some((e) => e.event === 'video.renditions' && e.data.videoId === videoId && e.data.ladder === '') ? true : undefined), { timeoutMs: 5_000 });
    const lastTold = events.filter((e) => e.event === 'video.renditions' && e.data.videoId === videoId).at(-1)!.data;
    expect({ ...lastTold, labels: [...lastTold.labels].sort() }).toEqual({ videoId, appId: client.appId, ladder: '', labels: ['120p', '180p'] });
    // job.state events carry the ladder's type, which the console's pages filter on.
    await waitUntil('job.state succeeded of the ladder', () => (events.some((e) => e.event === 'job.state' && e.data.jobId === job.id && e.data.state === 'succeeded') ? true : undefined), { timeoutMs: 5_000 });
    expect(events.filter((e) => e.event === 'job.state' && e.data.jobId === job.id).every((e) => e.data.type === 'ladder')).toBe(true);
  }, 90_000);
});

describe('ladderView', () => {
  const rungs = resolveLadderOptions({
    rungs: [
      { label: '1080p', shortSide: 1080, videoBitrateKbps: 5000 },
      { label: '720p', shortSide: 720, videoBitrateKbps: 2800 },
      { label: '480p', shortSide: 480, videoBitrateKbps: 1400 },
      { label: '360p', shortSide: 360, videoBitrateKbps: 800 },
    ],
  });
  const video = (o: Partial<VideoRecord> = {}) => ({ id: 'v', appId: 'a', status: 1, ladder: 'pending', ...o }) as VideoRecord;
  const rendition = (label: string, width: number, height: number) => ({ videoId: 'v', label, width, height }) as RenditionRecord;
  const job = (state: JobRecord['state'], error = '') => ({ id: 'j', type: 'ladder', state, error }) as JobRecord;

  it('counts the rungs the copied source reaches: 1 of 3 for a 720p copy', () => {
    expect(ladderView(video(), [rendition('720p', 1280, 720)], job('running'), rungs)).toEqual({ state: 'pending', labels: ['720p'], done: 1, total: 3, job: { id: 'j', state: 'running', error: '' } });
  });

  it('does not make up a total when the lowest rung came first (the source size is not at hand)', () => {
    expect(ladderView(video(), [rendition('360p', 640, 360)], job('queued'), rungs)).toMatchObject({ state: 'pending', done: 1, total: null });
  });

  it('shows a failed ladder retried from the console as pending while its job is live, and failed once it ends', () => {
    const renditions = [rendition('720p', 1280, 720)];
    expect(ladderView(video({ ladder: 'failed' }), renditions, job('queued'), rungs).state).toBe('pending');
    expect(ladderView(video({ ladder: 'failed' }), renditions, job('failed', 'boom'), rungs)).toMatchObject({ state: 'failed', job: { error: 'boom' } });
  });

  it('shows nothing to come for a complete ladder, or a video that is not playable', () => {
    const all = [rendition('360p', 640, 360), rendition('720p', 1280, 720), rendition('480p', 854, 480)];
    expect(ladderView(video({ ladder: '' }), all, job('succeeded'), rungs)).toEqual({ state: '', labels: ['720p', '480p', '360p'], done: 3, total: 3, job: { id: 'j', state: 'succeeded', error: '' } });
    expect(ladderView(video({ status: 0 }), all, undefined, rungs)).toMatchObject({ state: '', job: null });
  });
});
