/**
 * The desktop app's first run as the console sees it: the shell's preload hands over the first
 * application once (main/preload.ts, window.vopDesktop.takeFirstRun). Electron cannot run here,
 * so the test stands in for the preload with the same API in real Chromium.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OneTimeValue } from '../../main/shellSettings.js';
import { launchBrowser, screenshot } from '../helpers/browser.js';
import { SpecClient } from '../helpers/client.js';
import { ensureConsoleBuilt } from '../helpers/console.js';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
let browser: Browser;
beforeAll(async () => {
  [s, browser] = await Promise.all([startServer(), launchBrowser(), ensureConsoleBuilt()]);
});
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe('desktop first run in the console', () => {
  it('hands the first application over once', () => {
    const once = new OneTimeValue<string>();
    once.set('secret');
    expect(once.take()).toBe('secret');
    expect(once.take()).toBeNull();
  });

  it('shows the API address and the first application with its secret, once, and the secret works', async () => {
    const first = await s.vop.services.apps.create({ name: 'My first application' });
    const welcome = { apiAddress: `${s.baseUrl}/Api/Video`, appId: first.appId, appSecret: first.appSecret, appName: first.name };
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // main's side: the one-time value behind the IPC handler, outliving page reloads.
    const handOver = new OneTimeValue(welcome);
    await context.exposeFunction('__vopTakeFirstRun', () => handOver.take());
    // What main/preload.ts exposes.
    await context.addInitScript(
      ({ token }) => {
        const w = window as unknown as { vopDesktop: unknown; __vopTakeFirstRun: () => Promise<unknown> };
        w.vopDesktop = {
          adminToken: async () => token,
          copyText: async () => undefined,
          getSettings: async () => ({ port: 8080, dataDir: '', startAtLogin: false, serveLan: true, firstRunDone: true }),
          setSettings: async () => ({ port: 8080, dataDir: '', startAtLogin: false, serveLan: true, firstRunDone: true }),
          takeFirstRun: () => w.__vopTakeFirstRun(),
        };
      },
      { token: ADMIN_TOKEN },
    );
    const page = await context.newPage();
    await page.goto(`${s.baseUrl}/console`);
    page.on("console", (m) => process.stdout.write(`[page] ${m.text()}\n`));
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await expect.poll(() => page.getByText(welcome.apiAddress).count()).toBeGreaterThan(0);
    await expect.poll(() => page.getByTestId('app-secret').textContent()).toContain(first.appSecret);
    await screenshot(page, 'console-first-run.png');

    // The secret shown is the application's: it registers a video.
    const client = new SpecClient(s.baseUrl, first.appId, first.appSecret);
    expect(await client.register({ VideoTitle: 'first video' })).toMatch(/^[0-9a-f-]{36}$/);

    // Shown once: a reload has nothing left to show.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await page.getByTestId('app-secret').count()).toBe(0);
    await context.close();
  });
});
