/**
 * The transcode queue's Up/Down move a job exactly one place (over the admin API and in the
 * console), cancelling a transcode or a download asks first, and a failed video's reason is said
 * once (issue 13, items 1 and 5).
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import type { SpecClient } from '../helpers/client.js';
import { ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { TINY_PROCESSING } from '../helpers/processing.js';
import { waitForStatus } from '../helpers/wait.js';
import { startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let client: SpecClient;

/** Far enough ahead that no queued job of these tests starts. */
const LATER = () => Date.now() + 3_600_000;

/** Registers a video and queues a transcode of it that waits (runAfter in an hour). */
async function queuedTranscode(title: string, priority = 0): Promise<string> {
  const videoId = await client.register({ VideoTitle: title });
  const job = await s.vop.jobs.enqueue('transcode', { videoId }, { videoId, priority, runAfter: LATER() });
  return job.id;
}

/** The queued transcodes' ids in queue order, as the admin API lists them. */
async function queueOrder(): Promise<string[]> {
  const r = await s.admin.request('GET', '/jobs?type=transcode&state=queued&limit=1000');
  expect(r.status).toBe(200);
  return r.body.jobs.map((j: { id: string }) => j.id);
}

const move = (id: string, direction: unknown) => s.admin.request('POST', `/jobs/${id}/move`, { direction });

beforeAll(async () => {
  [s, browser] = await Promise.all([startServer({ processing: TINY_PROCESSING }), launchBrowser(), ensureConsoleBuilt()]);
  client = await s.newApp('Queue site');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe('moving a queued transcode one place', () => {
  it('swaps the job with its neighbour in queue order, whatever the priorities, and leaves the others where they were', async () => {
    // Queue order: high (priority 5), then a, b, c (priority 0, in the order queued).
    const high = await queuedTranscode('high', 5);
    const a = await queuedTranscode('a');
    const b = await queuedTranscode('b');
    const c = await queuedTranscode('c');
    expect(await queueOrder()).toEqual([high, a, b, c]);

    expect((await move(c, 'up')).status).toBe(200);
    expect(await queueOrder()).toEqual([high, a, c, b]);
    // One place past a job of higher priority: a priority nudge of one would not do it.
    expect((await move(a, 'up')).status).toBe(200);
    expect(await queueOrder()).toEqual([a, high, c, b]);
    expect((await move(a, 'down')).status).toBe(200);
    expect((await move(a, 'down')).status).toBe(200);
    expect(await queueOrder()).toEqual([high, c, a, b]);

    // The server takes them in that order too.
    const claimed = await s.vop.stores.jobs.claimNext(['transcode'], Date.now() + 7_200_000);
    expect(claimed?.id).toBe(high);
    await s.vop.stores.jobs.update(high, { state: 'cancelled' });
    expect(await queueOrder()).toEqual([c, a, b]);

    // At the ends, a running or finished job, a wrong direction: refused, nothing changes.
    const first = await move(c, 'up');
    expect(first.status).toBe(409);
    expect(first.body).toMatchObject({ error: { code: '306', message: 'Job State Conflict: the job is already first in the queue' } });
    expect((await move(b, 'down')).status).toBe(409);
    expect((await move(high, 'up')).status).toBe(409);
    for (const bad of ['sideways', 1, undefined]) {
      const r = await move(a, bad);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: { code: '201' } });
    }
    expect((await s.admin.request('POST', '/jobs/no-such-job/move', { direction: 'up' })).status).toBe(404);
    expect(await queueOrder()).toEqual([c, a, b]);
    for (const id of [c, a, b]) await s.vop.jobs.cancel(id);
  });
});

describe('moving a queued transcode several places (a drag)', () => {
  it('moves it that many places, stops at the end of the queue, and refuses a count that is not one', async () => {
    const [a, b, c, d] = [await queuedTranscode('a'), await queuedTranscode('b'), await queuedTranscode('c'), await queuedTranscode('d')];
    expect(await queueOrder()).toEqual([a, b, c, d]);
    const far = await s.admin.request('POST', `/jobs/${d}/move`, { direction: 'up', places: 3 });
    expect(far.status).toBe(200);
    expect(await queueOrder()).toEqual([d, a, b, c]);
    // Past the end: as far as it goes.
    expect((await s.admin.request('POST', `/jobs/${a}/move`, { direction: 'down', places: 10 })).status).toBe(200);
    expect(await queueOrder()).toEqual([d, b, c, a]);
    for (const places of [0, -1, 1.5, 'two']) expect((await s.admin.request('POST', `/jobs/${b}/move`, { direction: 'up', places })).status).toBe(400);
    expect(await queueOrder()).toEqual([d, b, c, a]);
    for (const id of [a, b, c, d]) await s.vop.jobs.cancel(id);
  });
});

describe('the console', () => {
  beforeAll(async () => {
    ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await ctx.newPage();
    await logIntoConsole(page, s.baseUrl);
  }, 60_000);
  afterAll(async () => {
    await ctx?.close();
  });

  /** The queued table's video names, top to bottom. */
  const rows = () => page.locator('table.queue tr[data-job] td:nth-child(3) a').allTextContents();

  it('moves a job one place with Up and Down, and asks before cancelling it', async () => {
    const ids: Record<string, string> = {};
    for (const id of await queueOrder()) await s.vop.jobs.cancel(id);
    for (const t of ['First', 'Second', 'Third']) ids[t] = await queuedTranscode(t);
    await page.goto(`${s.baseUrl}/console/transcode`);
    await expect.poll(rows).toEqual(['First', 'Second', 'Third']);

    await page.getByRole('button', { name: 'Move Third up' }).click();
    await expect.poll(rows).toEqual(['First', 'Third', 'Second']);
    await page.getByRole('button', { name: 'Move First down' }).click();
    await expect.poll(rows).toEqual(['Third', 'First', 'Second']);
    expect(await queueOrder()).toEqual([ids.Third, ids.First, ids.Second]);

    // Cancel asks; saying no leaves the job queued.
    await page.getByRole('button', { name: 'Cancel First' }).click();
    const dialog = page.getByRole('dialog', { name: 'Cancel the transcode of “First”?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await s.admin.request('GET', `/jobs/${ids.First}`)).body.state).toBe('queued');
    await page.getByRole('button', { name: 'Cancel First' }).click();
    await dialog.getByRole('button', { name: 'Cancel the transcode' }).click();
    await expect.poll(rows).toEqual(['Third', 'Second']);
    expect((await s.admin.request('GET', `/jobs/${ids.First}`)).body.state).toBe('cancelled');
    for (const id of [ids.Third, ids.Second]) await s.vop.jobs.cancel(id!);
  });

  it('loads the monitor in one request however long the queue, and moves a job as far as it is dragged', async () => {
    for (const id of await queueOrder()) await s.vop.jobs.cancel(id);
    // More than the 200 the monitor used to ask for, and each with its title.
    const ids: string[] = [];
    for (let i = 1; i <= 250; i++) ids.push(await queuedTranscode(`Long queue ${String(i).padStart(3, '0')}`));
    await page.goto(`${s.baseUrl}/console/`);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const calls: string[] = [];
    const record = (r: { url(): string }) => {
      const u = new URL(r.url());
      if (u.pathname.startsWith('/admin/api/') && u.pathname !== '/admin/api/events') calls.push(`${u.pathname}${u.search}`);
    };
    page.on('request', record);
    await page.getByRole('link', { name: 'Transcode monitor' }).click();
    await expect.poll(() => page.locator('table.queue tr[data-job]').count()).toBe(250);
    expect(await rows()).toEqual(ids.map((_, i) => `Long queue ${String(i + 1).padStart(3, '0')}`));
    page.off('request', record);
    expect(calls).toEqual(['/admin/api/queue/transcode,ladder?recent=20']);
    for (const id of ids) await s.vop.jobs.cancel(id);

    // Drag: the third row dropped on the first runs next (POST move {direction: 'top'}).
    const three: Record<string, string> = {};
    for (const t of ['First', 'Second', 'Third']) three[t] = await queuedTranscode(t);
    await page.goto(`${s.baseUrl}/console/transcode`);
    await expect.poll(rows).toEqual(['First', 'Second', 'Third']);
    await page.locator(`tr[data-job="${three.Third}"]`).dragTo(page.locator(`tr[data-job="${three.First}"]`));
    await expect.poll(rows).toEqual(['Third', 'First', 'Second']);
    expect(await queueOrder()).toEqual([three.Third, three.First, three.Second]);
    await page.getByText('“Third” runs next.').waitFor();
    // And down, one row: onto its neighbour.
    await page.locator(`tr[data-job="${three.Third}"]`).dragTo(page.locator(`tr[data-job="${three.First}"]`));
    await expect.poll(rows).toEqual(['First', 'Third', 'Second']);
    expect(await queueOrder()).toEqual([three.First, three.Third, three.Second]);
    for (const id of Object.values(three)) await s.vop.jobs.cancel(id);

    // Two applications (the queue shows the order they take turns in): a job passes its own
    // application's jobs; one dropped past only the other's stays, and the page says why.
    const other = await s.newApp('Other queue site');
    const otherJob = async (title: string) => {
      const videoId = await other.register({ VideoTitle: title });
      return (await s.vop.jobs.enqueue('transcode', { videoId }, { videoId, runAfter: LATER() })).id;
    };
    const ids2: Record<string, string> = {};
    for (const t of ['A1', 'A2', 'B1', 'B2', 'A3']) ids2[t] = t.startsWith('A') ? await queuedTranscode(t) : await otherJob(t);
    await page.goto(`${s.baseUrl}/console/transcode`);
    await expect.poll(async () => (await rows()).length).toBe(5);
    const own = async () => (await rows()).filter((n) => n.startsWith('A'));
    expect(await own()).toEqual(['A1', 'A2', 'A3']);
    // Up and Down stop at the ends of the job's own application's jobs, wherever those sit.
    expect(await page.getByRole('button', { name: 'Move A1 up' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Move A3 down' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Move B2 down' }).isDisabled()).toBe(true);
    const before = await rows();
    expect(before.indexOf('A2')).toBeGreaterThan(0); // not the first row (that one means "run next")
    await page.locator(`tr[data-job="${ids2.A3}"]`).dragTo(page.locator(`tr[data-job="${ids2.A2}"]`));
    await expect.poll(own).toEqual(['A1', 'A3', 'A2']);
    await page.getByText('“A3” moved one place up.').waitFor();
    // An A row next to a B row that is not the first: dropped there, it passes no A job.
    const order = await rows();
    const at = order.findIndex((n, i) => n.startsWith('A') && ((order[i + 1]?.startsWith('B') ?? false) || (i - 1 > 0 && order[i - 1]!.startsWith('B'))));
    expect(at).toBeGreaterThanOrEqual(0);
    const target = order[at + 1]?.startsWith('B') ? order[at + 1]! : order[at - 1]!;
    await page.locator(`tr[data-job="${ids2[order[at]!]}"]`).dragTo(page.locator(`tr[data-job="${ids2[target]}"]`));
    await page.getByText(`“${order[at]}” moves among its own application’s jobs`).waitFor();
    expect(await rows()).toEqual(order);
    const [a1, a2, b1, a3] = [ids2.A1!, ids2.A2!, ids2.B1!, ids2.A3!];
    await s.vop.jobs.cancel(ids2.B2!);
    for (const id of [a1, a2, b1, a3]) await s.vop.jobs.cancel(id);
  }, 120_000);

  it('asks before cancelling a download', async () => {
    const videoId = await client.register({ VideoTitle: 'Pulled later' });
    const job = await s.vop.jobs.enqueue('download', { videoId }, { videoId, runAfter: LATER() });
    await page.goto(`${s.baseUrl}/console/transfers`);
    const button = page.getByRole('button', { name: 'Cancel the download of Pulled later' });
    await button.click();
    const dialog = page.getByRole('dialog', { name: 'Cancel the download of “Pulled later”?' });
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await s.admin.request('GET', `/jobs/${job.id}`)).body.state).toBe('queued');
    await button.click();
    await dialog.getByRole('button', { name: 'Cancel the download' }).click();
    await expect.poll(async () => (await s.admin.request('GET', `/jobs/${job.id}`)).body.state).toBe('cancelled');
    await page.getByText('Download cancelled.').waitFor();
  });

  it('asks before disabling an application, and enables it again at once', async () => {
    const app = await s.admin.createApp('Careful site');
    await page.goto(`${s.baseUrl}/console/apps/${app.appId}`);
    await page.getByRole('button', { name: 'Disable', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Disable “Careful site”?' });
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await s.admin.request('GET', `/apps/${app.appId}`)).body.disabled).toBe(false);
    await page.getByRole('button', { name: 'Disable', exact: true }).click();
    await dialog.getByRole('button', { name: 'Disable', exact: true }).click();
    await expect.poll(async () => (await s.admin.request('GET', `/apps/${app.appId}`)).body.disabled).toBe(true);
    await page.getByRole('button', { name: 'Enable', exact: true }).click();
    await expect.poll(async () => (await s.admin.request('GET', `/apps/${app.appId}`)).body.disabled).toBe(false);
  });

  it('says a failed download once ("Download failed: download failed: …" before) and how an uploaded file came', async () => {
    const pulled = await client.register({ VideoTitle: 'Missing keynote', SourceFileGetType: 2, SourceFilePath: 'http://127.0.0.1:9/missing/keynote.mp4' });
    await waitForStatus(s.vop, pulled, [4], { timeoutMs: 30_000 });
    const reason = (await s.admin.request('GET', `/videos/${pulled}`)).body.video.statusReason as string;
    expect(reason).toMatch(/^download failed: /);
    // Stored once on the server too (the connection error's message had its own prefix).
    expect(reason.match(/download failed/g)).toHaveLength(1);
    await page.goto(`${s.baseUrl}/console/videos/${pulled}`);
    const alert = page.locator('main p.error[role=alert]');
    await alert.waitFor();
    const said = (await alert.textContent())!;
    expect(said.toLowerCase().match(/download failed/g)?.length, said).toBe(1);
    expect(said.toLowerCase()).toBe(reason.toLowerCase());
    await page.getByText('pulled from http://127.0.0.1:9/missing/keynote.mp4').waitFor();

    const uploaded = await client.register({ VideoTitle: 'Not sent yet' });
    await page.goto(`${s.baseUrl}/console/videos/${uploaded}`);
    await page.getByText('to be uploaded (nothing received yet)').waitFor();
    // Never the widget alone: a file can as well come by POST /Api/Video/Upload.
    expect(await page.getByText('uploaded through the widget').count()).toBe(0);
  });
});
