/**
 * An application's page shows how to integrate it (issue 13, item 2): the API base, the widget
 * scripts, and code filled with its AppId. The code is run, not just read: the Node snippet (and
 * the Python one where python3 is installed) registers a video on the real server with the token
 * it computes, a wrong secret is refused with 104, and the page snippets, given the values the
 * Node one computed, open the real upload page from another origin in both widget forms. The PHP
 * and C# snippets are checked for the AppId, the API base and the spec's token formula.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, startHostServer, type HostServer } from '../helpers/browser.js';
import type { SpecClient } from '../helpers/client.js';
import { ensureConsoleBuilt, logIntoConsole } from '../helpers/console.js';
import { startServer, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);

let s: TestServer;
let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let host: HostServer;
let app: SpecClient;
let dir: string;

/** Whether `cmd` runs here (python3, php). */
async function has(cmd: string): Promise<boolean> {
  return run(cmd, ['--version']).then(
    () => true,
    () => false,
  );
}
const hasPython = await has('python3');

beforeAll(async () => {
  [s, browser, host] = await Promise.all([startServer(), launchBrowser(), startHostServer(), ensureConsoleBuilt()]);
  app = await s.newApp('Integrated site');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-integrate-'));
  ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US' });
  page = await ctx.newPage();
  await logIntoConsole(page, s.baseUrl);
  await page.goto(`${s.baseUrl}/console/apps/${app.appId}`);
  await page.getByTestId('integrate').waitFor();
}, 120_000);

afterAll(async () => {
  await ctx?.close();
  await browser?.close();
  await host?.close();
  await s?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** The snippet a tab shows, as the admin would copy it. */
async function snippet(tab: string, kind: string): Promise<string> {
  await page.getByRole('tab', { name: tab, exact: true }).click();
  return (await page.locator(`code[data-snippet="${kind}"]`).textContent()) ?? '';
}

/** Runs the Node snippet as a module with `secret`: registers a video and prints its widget values. */
async function runNode(code: string, secret: string): Promise<{ videoId?: string; values?: Record<string, string>; error?: string }> {
  fs.writeFileSync(path.join(dir, 'vop.mjs'), code);
  fs.writeFileSync(
    path.join(dir, 'main.mjs'),
    `import { registerVideo, widgetValues } from './vop.mjs';
try {
  const videoId = await registerVideo('From the Node snippet', 'maria');
  console.log(JSON.stringify({ videoId, values: widgetValues(videoId) }));
} catch (err) {
  console.log(JSON.stringify({ error: err.message }));
}`,
  );
  const { stdout } = await run(process.execPath, [path.join(dir, 'main.mjs')], { env: { ...process.env, VOP_APP_SECRET: secret } });
  return JSON.parse(stdout);
}

describe("an application's Integrate section", () => {
  it('shows the API base and the widget scripts of the address the console is opened at', async () => {
    const facts = page.getByTestId('integrate').locator('dl.facts');
    const text = (await facts.textContent()) ?? '';
    expect(text).toContain(`${s.baseUrl}/Api/Video`);
    expect(text).toContain(`${s.baseUrl}/widget/initUploadWidget.js`);
    expect(text).toContain(`${s.baseUrl}/widget/initUploadABoxWidget.js`);
    // The scripts are really there.
    for (const script of ['initUploadWidget.js', 'initUploadABoxWidget.js']) expect((await fetch(`${s.baseUrl}/widget/${script}`)).status).toBe(200);
  });

  it("gives Node code whose token the server accepts, and a wrong secret's it refuses (104)", async () => {
    const code = await snippet('Node.js', 'node');
    expect(code).toContain(`const APP_ID = "${app.appId}";`);
    expect(code).toContain(`const VOP_API = "${s.baseUrl}/Api/Video";`);
    expect(code).not.toContain(app.secret); // the console never has the secret to show

    const ok = await runNode(code, app.secret);
    expect(ok.error).toBeUndefined();
    const video = (await s.admin.request('GET', `/videos/${ok.videoId}`)).body.video;
    expect(video).toMatchObject({ appId: app.appId, title: 'From the Node snippet', createUser: 'maria', status: 8 });
    expect(ok.values).toMatchObject({ appId: app.appId, videoId: ok.videoId });
    expect(ok.values!.token).toMatch(/^[0-9a-f]{32}$/);

    const wrong = await runNode(code, `${app.secret}x`);
    expect(wrong.error).toBe('vop: 104 App SecretKey Error');
  });

  it.skipIf(!hasPython)('gives Python code whose token the server accepts', async () => {
    const code = await snippet('Python', 'python');
    expect(code).toContain(`APP_ID = "${app.appId}"`);
    fs.writeFileSync(path.join(dir, 'vop_snippet.py'), code);
    const { stdout } = await run(
      'python3',
      ['-c', "import json, vop_snippet as v; vid = v.register_video('From the Python snippet'); print(json.dumps(v.widget_values(vid)))"],
      { cwd: dir, env: { ...process.env, VOP_APP_SECRET: app.secret, NO_PROXY: '*', no_proxy: '*' } },
    );
    const values = JSON.parse(stdout);
    expect(values).toMatchObject({ appId: app.appId });
    expect((await s.admin.request('GET', `/videos/${values.videoId}`)).body.video.title).toBe('From the Python snippet');
  });

  it('gives PHP and C# code with the AppId, the API base and the spec’s token', async () => {
    const phpCode = await snippet('PHP', 'php');
    expect(phpCode).toContain(`const VOP_APP_ID = '${app.appId}';`);
    expect(phpCode).toContain(`const VOP_API = '${s.baseUrl}/Api/Video';`);
    expect(phpCode).toContain("'Token' => md5($timestamp . $secret)");
    const cs = await snippet('C#', 'csharp');
    expect(cs).toContain(`public const string AppId = "${app.appId}";`);
    expect(cs).toContain(`public const string Api = "${s.baseUrl}/Api/Video";`);
    expect(cs).toContain('md5.ComputeHash(Encoding.UTF8.GetBytes(timestamp + AppSecret))');
    expect(cs).toContain('.ToLowerInvariant()');
  });

  it("gives page code for both widget forms that opens the upload page with the server's values", async () => {
    const node = await snippet('Node.js', 'node');
    for (const [tab, kind] of [
      ['Window', 'window'],
      ['Overlay', 'overlay'],
    ] as const) {
      const html = await snippet(tab, kind);
      expect(html).toContain(`appId: "${app.appId}"`);
      expect(html).toContain(`${s.baseUrl}/widget/${kind === 'window' ? 'initUploadWidget.js' : 'initUploadABoxWidget.js'}`);
      // Rendered by "the application's server": the placeholders replaced by the Node code's values.
      const { values } = await runNode(node, app.secret);
      const rendered = html.replace('"TIMESTAMP"', JSON.stringify(values!.timestamp)).replace('"TOKEN"', JSON.stringify(values!.token)).replace('"VIDEO_ID"', JSON.stringify(values!.videoId));
      host.page(`/${kind}.html`, `<!doctype html><html><head><meta charset="utf-8"><title>Host</title></head><body>${rendered}</body></html>`);
      const hostPage = await ctx.newPage();
      try {
        await hostPage.goto(`${host.origin}/${kind}.html`);
        if (kind === 'window') {
          const [popup] = await Promise.all([hostPage.waitForEvent('popup'), hostPage.click('#upload')]);
          await popup.waitForLoadState('domcontentloaded');
          expect(popup.url()).toContain(`${s.baseUrl}/widget/upload`);
          await popup.waitForSelector('#file', { state: 'attached' });
          await popup.close();
        } else {
          await hostPage.click('#upload');
          const el = await hostPage.waitForSelector('[data-vop-upload-layer] iframe');
          const frame = (await el.contentFrame())!;
          await frame.waitForSelector('#file', { state: 'attached' });
          expect(new URL(frame.url()).origin).toBe(s.baseUrl);
        }
      } finally {
        await hostPage.close();
      }
    }
  }, 60_000);
});
