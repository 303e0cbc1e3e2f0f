import { afterEach, describe, expect, it } from 'vitest';
import { VopEventBus } from '../../server/core/events.js';
import { JobQueue } from '../../server/jobs/jobQueue.js';
import { backoffDelay } from '../../server/core/retry.js';
import { openSqlJsStores } from '../../server/storage/sqljs/openSqlJsStores.js';
import { tempDataDir } from '../helpers/server.js';

const quick = { maxRetries: 2, baseDelayMs: 20, maxDelayMs: 100, jitter: false };
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

async function openQueue(dir = tempDataDir()) {
  const stores = await openSqlJsStores({ dir });
  const queue = new JobQueue<string>(stores.jobs, new VopEventBus(), () => undefined);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await queue.stop();
    await stores.close();
  };
  closers.push(close);
  return { dir, stores, queue, close };
}

describe('job queue', () => {
  it('runs jobs by priority, then in order, within the type concurrency', async () => {
    const { queue } = await openQueue();
    const order: string[] = [];
    let concurrent = 0;
    let maxConcurrent = 0;
    queue.register('work', {
      concurrency: 1,
      retry: quick,
      async handle(job) {
        concurrent++;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        order.push(String(job.payload.name));
        // Time is the subject: each job works 5 ms, long enough for a second to overlap if the queue let it.
        await new Promise((r) => setTimeout(r, 5));
        concurrent--;
      },
    });
    await queue.enqueue('work', { name: 'a' });
    await queue.enqueue('work', { name: 'b' });
    await queue.enqueue('work', { name: 'urgent' }, { priority: 10 });
    await queue.start();
    await queue.idle();
    expect(order).toEqual(['urgent', 'a', 'b']);
    expect(maxConcurrent).toBe(1);
  });

  it('retries with backoff, then gives up and records why', async () => {
    const { queue, stores } = await openQueue();
    const attempts: number[] = [];
    const gaveUp: string[] = [];
    queue.register('flaky', {
      concurrency: 2,
      retry: quick,
      async handle(_job, ctx) {
        attempts.push(ctx.attempt);
        throw new Error(`boom ${ctx.attempt}`);
      },
      async onGiveUp(_job, reason) {
        gaveUp.push(reason);
      },
    });
    await queue.start();
    const job = await queue.enqueue('flaky', {});
    await queue.idle();
    const stored = await stores.jobs.get(job.id);
    expect(attempts).toEqual([1, 2, 3]);
    expect(stored).toMatchObject({ state: 'failed', attempts: 3, error: 'boom 3' });
    expect(gaveUp).toEqual(['boom 3']);
    expect(await queue.retry(job.id)).toBe(true);
    await queue.idle();
    expect(attempts).toEqual([1, 2, 3, 1, 2, 3]);
    expect(backoffDelay(quick, 1)).toBe(20);
    expect(backoffDelay(quick, 3)).toBe(80);
    expect(backoffDelay(quick, 9)).toBe(100);
  });

  it('cancels a running job through its signal', async () => {
    const { queue, stores } = await openQueue();
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    queue.register('long', {
      concurrency: 1,
      retry: quick,
      handle: (_job, ctx) =>
        new Promise((_resolve, reject) => {
          started();
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
        }),
    });
    await queue.start();
    const job = await queue.enqueue('long', {});
    await running;
    expect(await queue.cancel(job.id)).toBe(true);
    expect((await stores.jobs.get(job.id))?.state).toBe('cancelled');
  });

  it('does not report a cancel that the handler ignored: the job keeps its success', async () => {
    const { queue, stores } = await openQueue();
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let finish!: () => void;
    queue.register('stubborn', {
      concurrency: 1,
      retry: quick,
      // Never looks at ctx.signal and completes once released.
      handle: () =>
        new Promise<void>((resolve) => {
          finish = resolve;
          started();
        }),
    });
    await queue.start();
    const job = await queue.enqueue('stubborn', {});
    await running;
    const cancelled = queue.cancel(job.id);
    finish();
    expect(await cancelled).toBe(false);
    expect((await stores.jobs.get(job.id))?.state).toBe('succeeded');
  });

  it('re-runs from the start a job cut off by a stop, after recovering it', async () => {
    const first = await openQueue();
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    first.queue.register('cut', {
      concurrency: 1,
      retry: { ...quick, maxRetries: 0 },
      handle: (_job, ctx) =>
        new Promise((_resolve, reject) => {
          started();
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
        }),
    });
    await first.queue.start();
    const job = await first.queue.enqueue('cut', { n: 1 });
    await running;
    await first.close();

    const second = await openQueue(first.dir);
    expect((await second.stores.jobs.get(job.id))?.state).toBe('queued');
    const recovered: string[] = [];
    const ran: number[] = [];
    second.queue.register('cut', {
      concurrency: 1,
      retry: { ...quick, maxRetries: 0 },
      async recover(j) {
        recovered.push(j.id);
      },
      async handle(_j, ctx) {
        ran.push(ctx.attempt);
      },
    });
    await second.queue.start();
    await second.queue.idle();
    expect(ran).toEqual([1]);
    expect((await second.stores.jobs.get(job.id))?.state).toBe('succeeded');
  });

  it("tells how each cut-off job's recover went ('job.recovered'), a failed one included, and runs both again", async () => {
    const dir = tempDataDir();
    const stores = await openSqlJsStores({ dir });
    const now = Date.now();
    // What a crash leaves: jobs recorded running, whose process is gone.
    const cut = (id: string, type: string) => ({
      id, type, videoId: `video-${id}`, appId: '', payload: {}, state: 'running' as const, priority: 0, seq: 0, attempts: 1, maxAttempts: 3,
      runAfter: 0, progress: 40, error: '', createdAt: now, startedAt: now, finishedAt: null, updatedAt: now,
    });
    await stores.jobs.insertMany([{ ...cut('a', 'tidy'), seq: 1 }, { ...cut('b', 'messy'), seq: 2 }, { ...cut('c', 'plain'), seq: 3 }]);
    const events = new VopEventBus();
    const told: unknown[] = [];
    events.on('job.recovered', (e) => told.push(e));
    const queue = new JobQueue<string>(stores.jobs, events, () => undefined);
    closers.push(async () => {
      await queue.stop();
      await stores.close();
    });
    const ran: string[] = [];
    const handle = async (j: { id: string }) => void ran.push(j.id);
    queue.register('tidy', { concurrency: 1, retry: quick, recover: async () => undefined, handle });
    queue.register('messy', { concurrency: 1, retry: quick, recover: async () => Promise.reject(new Error('the bucket said no')), handle });
    // A type without a recover has nothing to tell.
    queue.register('plain', { concurrency: 1, retry: quick, handle });
    await queue.start();
    expect(told).toEqual([
      { jobId: 'a', type: 'tidy', videoId: 'video-a', outcome: 'recovered', error: '' },
      { jobId: 'b', type: 'messy', videoId: 'video-b', outcome: 'failed', error: 'Error: the bucket said no' },
    ]);
    await queue.idle();
    expect(ran.sort()).toEqual(['a', 'b', 'c']);
  });
});
