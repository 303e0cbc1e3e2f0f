/**
 * Views and watch time (docs/watch.md): three viewers in Chromium watch a video's page for 10 s
 * each, at the same time, which counts three views and about 30 s; a reload counts no second
 * view; the counts are in the console's calls and in /metrics, and survive the server killed with
 * SIGKILL (its process group, as a supervisor does) and started again at once. The report
 * endpoint refuses what a player never sends and is bounded per address.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { makeClip } from '../helpers/clips.js';
import { placeSource, TINY_PROCESSING } from '../helpers/processing.js';
import { waitForStatus, waitUntil } from '../helpers/wait.js';
import { ADMIN_TOKEN, killStrayProcesses, signalGroup, startNodeGroup, startServer, tempDataDir, type GroupNode } from '../helpers/server.js';

let browser: Browser;
let node: GroupNode;
let videoId: string;
const dataDir = tempDataDir('vop-views-');
const contexts: BrowserContext[] = [];

async function admin(base: string, route: string): Promise<any> {
  const res = await fetch(`${base}/admin/api${route}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(res.status, route).toBe(200);
  return res.json();
}

function start(): Promise<GroupNode> {
  return startNodeGroup('vop', ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], { VOP_ADMIN_TOKEN: ADMIN_TOKEN });
}

beforeAll(async () => {
  // The video is made by a server in this process, then served by one in a process of its own.
  const t = await startServer({ dataDir, processing: TINY_PROCESSING });
  const client = await t.newApp('viewed');
  videoId = await client.register({ VideoTitle: 'watched' });
  await placeSource(t.vop, videoId, await makeClip({ seconds: 20, dir: tempDataDir('vop-views-clip-') }));
  expect(await waitForStatus(t.vop, videoId, [1, 7], { timeoutMs: 120_000 })).toBe(1);
  await t.close();
  node = await start();
  [browser] = await Promise.all([launchBrowser(), ensureConsoleBuilt()]);
}, 240_000);

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  if (node) signalGroup(node.pid, 'SIGKILL');
  killStrayProcesses();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A viewer: a browser of its own user agent, watching the page muted for `seconds` of the video's time. */
async function watch(agent: string, seconds: number, context?: BrowserContext): Promise<BrowserContext> {
  const ctx = context ?? (await browser.newContext({ userAgent: `Mozilla/5.0 (viewer ${agent}) Chrome/120` }));
  if (!context) contexts.push(ctx);
  const page = await ctx.newPage();
  await page.goto(`${node.baseUrl}/embed/${videoId}?muted=1`);
  await page.waitForSelector('#vop-watch[data-engine]');
  await page.evaluate(() => document.querySelector('video')!.play());
  await page.waitForFunction((s) => document.querySelector('video')!.currentTime >= s, seconds, { timeout: 30_000 });
  await page.evaluate(() => document.querySelector('video')!.pause()); // a pause reports
  await page.close(); // and so does leaving
  return ctx;
}

describe('views and watch time', () => {
  it('count three viewers of 10 s each as three views and about 30 s; a reload adds no view', async () => {
    // At the same time: each is a viewer of its own by its user agent (the address is the same).
    const [first] = await Promise.all([watch('one', 10), watch('two', 10), watch('three', 10)]);
    const counted = await waitUntil('three views written', async () => {
      const v = await admin(node.baseUrl, `/videos/${videoId}/views`);
      return v.views === 3 && v.watchSeconds >= 27 ? v : undefined;
    }, { timeoutMs: 30_000 });
    expect(counted.watchSeconds).toBeLessThanOrEqual(36);
    expect(counted.days).toHaveLength(1);

    // The first viewer again, in the same tab's session (a reload) and in a new page: no new view.
    await watch('one', 3, first);
    await waitUntil('the replay written', async () => ((await admin(node.baseUrl, `/videos/${videoId}/views`)).watchSeconds >= counted.watchSeconds + 2 ? true : undefined), { timeoutMs: 30_000 });
    const after = await admin(node.baseUrl, `/videos/${videoId}/views`);
    expect(after.views).toBe(3);

    const overview = await admin(node.baseUrl, '/views?days=7');
    expect(overview.days).toHaveLength(7);
    expect(overview.days.at(-1)).toMatchObject({ views: 3 });
    const metrics = await (await fetch(`${node.baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    expect(metrics).toMatch(/^vop_views_total\{app="[^"]+"\} 3$/m);
  }, 120_000);

  it('show in the console: the video page and the overview', async () => {
    const page = await browser.newPage();
    try {
      await logIntoConsole(page, node.baseUrl);
      const chart = page.getByTestId('views-by-day');
      await chart.waitFor();
      expect(await chart.locator('.bar').count()).toBe(30);
      expect(await chart.locator('p').textContent()).toMatch(/^3 views · 0:3\d watched$/);
      await page.goto(`${node.baseUrl}/console/videos/${videoId}`);
      await expect.poll(() => page.getByTestId('views').textContent(), { timeout: 10_000 }).toMatch(/^3 · watched 0:3\d$/);
    } finally {
      await page.close();
    }
  }, 60_000);

  it('survive the server killed with SIGKILL and started again at once', async () => {
    const before = await admin(node.baseUrl, `/videos/${videoId}/views`);
    // Written: the counter writes every 2 s; what the console shows includes what is not written yet.
    // Time is the subject: past one write period (no answer tells what is written and what is not).
    await new Promise((r) => setTimeout(r, 2_500));
    signalGroup(node.pid, 'SIGKILL');
    await node.exited;
    node = await start();
    const again = await admin(node.baseUrl, `/videos/${videoId}/views`);
    expect(again).toEqual(before);
  }, 90_000);

  it('refuse reports a player never sends, and more than 600 a minute from one address', async () => {
    const url = `${node.baseUrl}/embed/${videoId}/views`;
    const post = (body: string, u = url) => fetch(u, { method: 'POST', body, headers: { 'content-type': 'text/plain' } });
    expect((await post('not json')).status).toBe(400);
    expect((await post('{"s":"x","w":1}')).status).toBe(400);
    expect((await post('{"s":"abcdefgh","w":-1}')).status).toBe(400);
    expect((await post('{"s":"abcdefgh","w":5}', `${node.baseUrl}/embed/00000000-0000-4000-8000-000000000000/views`)).status).toBe(404);
    // One report claiming an hour at once adds only what could have been played since the first.
    const before = await admin(node.baseUrl, `/videos/${videoId}/views`);
    expect((await post('{"s":"abcdefgh","w":3600}')).status).toBe(204);
    // Time is the subject: the counter's 2 s write period passes, and what it added is read after.
    await new Promise((r) => setTimeout(r, 2_500));
    const after = await admin(node.baseUrl, `/videos/${videoId}/views`);
    expect(after.watchSeconds - before.watchSeconds).toBeLessThanOrEqual(16);
    // The minute began at this address's first report above, seconds ago: 600 more fill it.
    let refused = 0;
    for (let i = 1; i <= 620 && refused === 0; i++) if ((await post('{"s":"abcdefgh","w":1}')).status === 429) refused = i;
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThanOrEqual(601);
    const r = await post('{"s":"abcdefgh","w":1}');
    expect(r.status).toBe(429);
    expect((await r.json()).AuthMsg.ResultCode).toBe('421');
  }, 60_000);
});
