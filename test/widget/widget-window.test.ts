/**
 * The window form (spec 4.5, initUploadWidget.js) in real Chromium: a host page on another origin
 * loads the script from vop, opens the pop-up, uploads a generated clip, and its callbacks fire.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { VopEvents } from '../../server/core/events.js';
import { screenshot } from '../helpers/browser.js';
import type { SpecClient } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { closePopup, failureDetails, hostEvents, hostPageHtml, sha256File, waitForFullBar, waitForHostEvents, widgetOptions, widgetRig } from '../helpers/widgetHost.js';
import { waitForStatus } from '../helpers/wait.js';


const statusChanges: Array<VopEvents['video.status'][0]> = [];
const rig = widgetRig('window widget host', ({ vop }) => vop.vop.events.on('video.status', (e) => statusChanges.push(e)));

/** Opens the host page for a new video and returns the pop-up the click opened. */
async function openFromHost(options: Record<string, unknown>): Promise<Page> {
  const { vop, host, page } = rig;
  host.page('/app.html', hostPageHtml(vop.baseUrl, 'initUploadWidget.js', options));
  await page.goto(`${host.origin}/app.html`);
  const [popup] = await Promise.all([page.waitForEvent('popup'), page.click('#open')]);
  await popup.waitForLoadState('domcontentloaded');
  return popup;
}

describe('window form', () => {
  it('uploads a clip from a host page on another origin; onSuccess gets the videoId once the file is stored', async () => {
    const { vop, host, app, clip, page } = rig;
    const videoId = await app.register({ VideoTitle: 'From the window widget' });
    const popup = await openFromHost(widgetOptions(app, videoId));
    expect(new URL(popup.url()).origin).toBe(vop.baseUrl);
    expect(new URL(popup.url()).searchParams.get('origin')).toBe(host.origin);
    // Once open, the address holds the scoped credential, not the spec's token (reloads use it).
    await expect.poll(() => new URL(popup.url()).searchParams.get('session')).toBeTruthy();
    expect(new URL(popup.url()).searchParams.get('token')).toBeNull();
    await popup.setViewportSize({ width: 640, height: 560 });

    await popup.setInputFiles('#file', clip);
    expect(await waitForHostEvents(page)).toEqual([{ type: 'success', value: videoId }]);
    await expect.poll(() => popup.textContent('#message')).toMatch(/Upload complete/);
    expect(await popup.textContent('#percent')).toBe('100%');
    await waitForFullBar(popup);
    await screenshot(popup, 'widget-window.png');

    // Safely stored: the very bytes, and the video left 8 for 5 (waiting for transcoding).
    expect(sha256File(path.join(vop.dataDir, 'media/sources', videoId, 'source'))).toBe(sha256File(clip));
    expect(await waitForStatus(app, videoId, [5, 6, 1])).toBeGreaterThan(0);
    expect(statusChanges).toContainEqual(expect.objectContaining({ videoId, from: 8, to: 5 }));

    // Closing the pop-up after success is not a failure.
    await closePopup(popup);
    expect(popup.isClosed()).toBe(true);
    await page.waitForTimeout(800); // longer than the widget's poll of popup.closed
    expect(await hostEvents(page)).toEqual([{ type: 'success', value: videoId }]);
  });

  it('calls onFailure when the user closes the pop-up without uploading', async () => {
    const { app, page } = rig;
    const videoId = await app.register();
    const popup = await openFromHost(widgetOptions(app, videoId));
    await popup.waitForSelector('#file', { state: 'attached' });
    await popup.close();
    const events = await waitForHostEvents(page);
    expect(events).toEqual([{ type: 'failure', value: 'the upload was closed before a file was uploaded' }]);
    expect(await failureDetails(page)).toEqual([{ code: '', message: 'the upload was closed before a file was uploaded', cancelled: true }]);
  });

  it('shows the plain error text for a wrong token; onFailure gets its code and message, not a cancel', async () => {
    const { app, page } = rig;
    const videoId = await app.register();
    const popup = await openFromHost({ ...widgetOptions(app, videoId), token: '0'.repeat(32) });
    // A sentence for the person, the spec's line in small print for the site's developer.
    expect(await popup.textContent('#sentence')).toBe('This upload link is not valid. Please tell the site you came from; the code below says why.');
    expect(await popup.textContent('small pre')).toBe('ErrorCode : 104, ErrorMessage : App SecretKey Error');
    await popup.close();
    expect(await waitForHostEvents(page)).toEqual([{ type: 'failure', value: 'ErrorCode : 104, ErrorMessage : App SecretKey Error' }]);
    expect(await failureDetails(page)).toEqual([{ code: '104', message: 'App SecretKey Error', cancelled: false }]);
  });

  it('reports missing or bad options to onFailure with a reason and the console, without opening anything', async () => {
    const { vop, host, app, page } = rig;
    const videoId = await app.register();
    host.page('/app.html', hostPageHtml(vop.baseUrl, 'initUploadWidget.js', widgetOptions(app, videoId)));
    await page.goto(`${host.origin}/app.html`);
    const consoleErrors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    let popups = 0;
    page.on('popup', () => popups++);

    await page.evaluate(() => (window as any).openWith({ token: '' }));
    await page.evaluate(() => (window as any).openWith({ uploadType: 'java' }));
    await page.evaluate(() => (window as any).openWith({ onSuccess: 'yes' }));
    const events = await waitForHostEvents(page, 3);
    expect(events).toEqual([
      { type: 'failure', value: 'option token is required (a non-empty string)' },
      { type: 'failure', value: 'option uploadType must be "flash" or "silverlight", not "java"' },
      { type: 'failure', value: 'option onSuccess must be a function' },
    ]);
    expect(consoleErrors).toEqual([
      'vop openUpload: option token is required (a non-empty string)',
      'vop openUpload: option uploadType must be "flash" or "silverlight", not "java"',
      'vop openUpload: option onSuccess must be a function',
    ]);
    // Not even a throw for a call without options.
    await page.evaluate(() => (window as any).openUpload());
    expect(popups).toBe(0);
  });

  it('ignores messages from other windows and other origins', async () => {
    const { vop, host, app, page } = rig;
    const videoId = await app.register();
    // The host page also frames a vop page: same origin as the pop-up, but another window.
    host.page('/app.html', hostPageHtml(vop.baseUrl, 'initUploadWidget.js', widgetOptions(app, videoId), `<iframe name="other" src="${vop.baseUrl}/healthz"></iframe>`));
    await page.goto(`${host.origin}/app.html`);
    const [popup] = await Promise.all([page.waitForEvent('popup'), page.click('#open')]);
    await popup.waitForSelector('#file', { state: 'attached' });
    const forged = { tag: 'vop-upload', type: 'success', videoId, reason: '' };

    // From the host page itself: right shape, wrong origin and source.
    await page.evaluate((m) => window.postMessage(m, '*'), forged);
    // From vop's origin, but not from the pop-up.
    await page.frame({ name: 'other' })!.evaluate((m) => window.parent.postMessage(m, '*'), forged);
    // From the pop-up, but not a message of the page's shape.
    await popup.evaluate((origin) => (window.opener as Window).postMessage({ type: 'success' }, origin), host.origin);
    // Time is the subject: nothing comes of them (a message acted on is seen within a task or two).
    await page.waitForTimeout(300);
    expect(await hostEvents(page)).toEqual([]);

    // Still open and unsettled: closing it now is the failure.
    await popup.close();
    expect(await waitForHostEvents(page)).toEqual([{ type: 'failure', value: 'the upload was closed before a file was uploaded' }]);
  });
});

describe('the upload page', () => {
  /** The page opened directly (as the window form would, without a host to report to). */
  function directUrl(server: TestServer, client: SpecClient, videoId: string): string {
    const o = widgetOptions(client, videoId) as Record<string, string>;
    return `${server.baseUrl}/widget/upload?${new URLSearchParams({ appId: o.appId!, timestamp: o.timestamp!, token: o.token!, videoId, mode: 'window' })}`;
  }

  it('takes a dropped file', async () => {
    const { vop, app, clip, page } = rig;
    const videoId = await app.register();
    await page.goto(directUrl(vop, app, videoId));
    const bytes = fs.readFileSync(clip).toString('base64');
    const dataTransfer = await page.evaluateHandle((b64) => {
      const dt = new DataTransfer();
      dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], 'dropped.mp4', { type: 'video/mp4' }));
      return dt;
    }, bytes);
    await page.dispatchEvent('#drop', 'dragover', { dataTransfer });
    expect(await page.getAttribute('#drop', 'class')).toContain('over');
    await page.dispatchEvent('#drop', 'drop', { dataTransfer });
    await page.waitForSelector('body[data-state="done"]');
    expect(await page.textContent('#file-name')).toBe('dropped.mp4');
    expect(sha256File(path.join(vop.dataDir, 'media/sources', videoId, 'source'))).toBe(sha256File(clip));
  });

  it('refuses a file too large for the uploadType before sending a byte', async () => {
    const { clip, page } = rig;
    const small = await startServer({ ingest: { maxUploadBytes: { flash: 50_000 } } });
    try {
      const client = await small.newApp('small limit');
      const videoId = await client.register();
      const tusRequests: string[] = [];
      page.on('request', (r) => r.url().includes('/upload/tus') && tusRequests.push(r.method()));
      await page.goto(directUrl(small, client, videoId));
      expect(await page.textContent('#limit')).toBe('Upload of up to 48.8 KB');
      await page.setInputFiles('#file', clip);
      expect(await page.textContent('#message')).toMatch(/^"clip-[^"]+\.mp4" is 1\d\d KB; flash uploads take at most 48\.8 KB\. Choose a smaller file\.$/);
      expect(await page.getAttribute('body', 'data-state')).toBe('idle');
      expect(tusRequests).toEqual([]);
    } finally {
      await small.close();
    }
  });
});
