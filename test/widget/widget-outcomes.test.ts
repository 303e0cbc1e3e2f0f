/**
 * Honest widget outcomes (issue 10 item 6), in real Chromium against a real vop: a file that is
 * not a video is refused (by the page's quick look, which the server records, or by the server's
 * probe of the stored file) with one sentence in the page's language and the code in small print,
 * the video goes to 7 either way, the page takes another file for the same video, onSuccess
 * fires only for a file that is a video, and onFailure gets the code and message of the refusal,
 * distinct from a user's cancel.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Frame, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../helpers/clips.js';
import { closePopup, failureDetails, hostEvents, hostPageHtml, waitForHostEvents, widgetOptions, widgetRig } from '../helpers/widgetHost.js';
import { waitForStatus } from '../helpers/wait.js';

const rig = widgetRig('widget outcomes host');

let textFile: string;
let fakeVideo: string;

beforeAll(() => {
  const dir = makeTempDir('vop-outcomes-');
  textFile = path.join(dir, 'notes.txt');
  fs.writeFileSync(textFile, 'Things to film on Saturday:\n- the harbour\n- the market\n'.repeat(20));
  // Binary bytes under a video's name: only the server's probe can tell.
  fakeVideo = path.join(dir, 'holiday.mp4');
  fs.writeFileSync(fakeVideo, crypto.randomBytes(96 * 1024));
});

async function openOverlay(page: Page, videoId: string): Promise<Frame> {
  const { vop, host, app } = rig;
  host.page('/app.html', hostPageHtml(vop.baseUrl, 'initUploadABoxWidget.js', widgetOptions(app, videoId)));
  await page.goto(`${host.origin}/app.html`);
  await page.click('#open');
  return uploadFrame(page);
}

async function uploadFrame(page: Page): Promise<Frame> {
  const el = await page.waitForSelector('[data-vop-upload-layer] iframe');
  const frame = (await el.contentFrame())!;
  await frame.waitForSelector('#file', { state: 'attached' });
  return frame;
}

/** The page is ready for another file: idle, its chooser enabled. */
async function expectIdle(frame: Frame): Promise<void> {
  await expect.poll(() => frame.evaluate(() => document.body.dataset.state)).toBe('idle');
  expect(await frame.isEnabled('#file')).toBe(true);
}

describe('a file that is not a video', () => {
  it('the chooser offers video files first; a text file is refused before upload, then a clip is taken in the same page', async () => {
    const { app, clip, page, vop } = rig;
    const videoId = await app.register();
    const frame = await openOverlay(page, videoId);
    const accept = (await frame.getAttribute('#file', 'accept'))!.split(',');
    expect(accept).toEqual(expect.arrayContaining(['video/*', '.mkv', '.m2ts', '.ts', '.mts', '.avi', '.wmv', '.flv', '.mpg', '.vob']));

    await frame.setInputFiles('#file', textFile);
    await expect.poll(() => frame.textContent('#message')).toBe('"notes.txt" is not a video the server can take. Choose a video file. code 307');
    expect(await frame.textContent('#message small')).toBe('code 307');
    await expectIdle(frame);
    // Refused by the page before a byte of it was sent, and recorded by the server as ffprobe's
    // verdict would be: 7 "not a video", nothing stored.
    const refused = (await vop.vop.stores.videos.get(videoId))!;
    expect(refused).toMatchObject({ status: 7, statusReason: 'not a video: "notes.txt" is a .txt file', sourceFile: '' });
    expect(await hostEvents(page)).toEqual([]);

    await frame.setInputFiles('#file', clip);
    expect(await waitForHostEvents(page)).toEqual([{ type: 'success', value: videoId }]);
    expect(await waitForStatus(app, videoId, [5, 6, 1])).toBeGreaterThan(0);
    await page.click('[data-vop-upload-close]');
    expect(await hostEvents(page)).toEqual([{ type: 'success', value: videoId }]);
  });

  it("the server's probe refuses a non-video with a video's name; closing reports 307; the video takes a clip when opened again", async () => {
    const { app, clip, page, vop } = rig;
    const videoId = await app.register();
    let frame = await openOverlay(page, videoId);

    await frame.setInputFiles('#file', fakeVideo);
    await expect.poll(() => frame.textContent('#message'), { timeout: 30_000 }).toBe('"holiday.mp4" is not a video the server can take. Choose a video file. code 307');
    await expectIdle(frame);
    const video = (await vop.vop.stores.videos.get(videoId))!;
    expect(video.status).toBe(7);
    expect(video.statusReason).toMatch(/^not a video: /);
    expect(fs.existsSync(vop.vop.media.path('sources', videoId, 'source'))).toBe(false);
    expect(await hostEvents(page)).toEqual([]); // onSuccess never fired

    // Closing now reports why, not a cancel: the spec's line, for the host page's developer.
    await page.click('[data-vop-upload-close]');
    const [failure] = await waitForHostEvents(page);
    expect(failure!.type).toBe('failure');
    expect(failure!.value).toMatch(/^ErrorCode : 307, ErrorMessage : Not A Video: /);
    expect(await failureDetails(page)).toEqual([{ code: '307', message: expect.stringMatching(/^Not A Video: /), cancelled: false }]);

    // The same video, opened again: the page opens (7 "not a video" takes a file) and the clip is taken.
    await page.evaluate(() => (window as unknown as { openWith: () => void }).openWith());
    frame = await uploadFrame(page);
    await frame.setInputFiles('#file', clip);
    expect((await waitForHostEvents(page, 2))[1]).toEqual({ type: 'success', value: videoId });
    expect(await waitForStatus(app, videoId, [5, 6, 1])).toBeGreaterThan(0);
  });

  it('window form: a text file chosen, then the pop-up closed: onFailure gets 307 and its message, and the video still takes a file', async () => {
    const { vop, host, app, page } = rig;
    const videoId = await app.register();
    host.page('/app.html', hostPageHtml(vop.baseUrl, 'initUploadWidget.js', widgetOptions(app, videoId)));
    await page.goto(`${host.origin}/app.html`);
    const [popup] = await Promise.all([page.waitForEvent('popup'), page.click('#open')]);
    await popup.waitForSelector('body[data-state="idle"]', { state: 'attached' }); // the page's script listens from here
    await popup.setInputFiles('#file', textFile);
    await expect.poll(() => popup.textContent('#message')).toMatch(/is not a video the server can take\. Choose a video file\. code 307$/);
    await popup.close();
    expect(await waitForHostEvents(page)).toEqual([{ type: 'failure', value: 'ErrorCode : 307, ErrorMessage : Not A Video: "notes.txt" is a .txt file' }]);
    expect(await failureDetails(page)).toEqual([{ code: '307', message: 'Not A Video: "notes.txt" is a .txt file', cancelled: false }]);
    const a = app.auth();
    expect((await vop.vop.stores.videos.get(videoId))!.status).toBe(7);
    const again = await fetch(`${vop.baseUrl}/widget/upload?${new URLSearchParams({ appId: a.AppId!, timestamp: a.Timestamp!, token: a.Token!, videoId })}`);
    expect(again.status).toBe(200);
  });

  it('speaks Chinese on a Chinese browser, with no English but the file name and the code', async () => {
    const { vop, host, app, browser } = rig;
    const ctx = await browser.newContext({ locale: 'zh-CN' });
    try {
      const page = await ctx.newPage();
      const videoId = await app.register();
      host.page('/zh.html', hostPageHtml(vop.baseUrl, 'initUploadABoxWidget.js', widgetOptions(app, videoId)));
      await page.goto(`${host.origin}/zh.html`);
      await page.click('#open');
      const frame = await uploadFrame(page);
      await frame.setInputFiles('#file', textFile);
      await expect.poll(() => frame.textContent('#message')).toBe('“notes.txt”不是服务器能接受的视频。请选择视频文件。 错误代码 307');
      expect((await vop.vop.stores.videos.get(videoId))!.status).toBe(7);
    } finally {
      await ctx.close();
    }
  });

  it('closing without choosing a file is a cancel, told apart from an error', async () => {
    const { app, page } = rig;
    const videoId = await app.register();
    const frame = await openOverlay(page, videoId);
    await frame.press('body', 'Escape');
    expect(await waitForHostEvents(page)).toEqual([{ type: 'failure', value: 'the upload was closed before a file was uploaded' }]);
    expect(await failureDetails(page)).toEqual([{ code: '', message: 'the upload was closed before a file was uploaded', cancelled: true }]);
  });

  it('an error page reports its own code (301 for an unknown video) to onFailure', async () => {
    const { vop, host, app, page } = rig;
    host.page('/app.html', hostPageHtml(vop.baseUrl, 'initUploadABoxWidget.js', widgetOptions(app, '00000000-0000-4000-8000-000000000000')));
    await page.goto(`${host.origin}/app.html`);
    await page.click('#open');
    expect(await waitForHostEvents(page)).toEqual([{ type: 'failure', value: 'ErrorCode : 301, ErrorMessage : Video Not Found' }]);
    expect(await failureDetails(page)).toEqual([{ code: '301', message: 'Video Not Found', cancelled: false }]);
  });
});

describe('the error page', () => {
  it('is the plain text of spec 4.5 to a client that does not ask for HTML, and a sentence in its language over the same line to a browser', async () => {
    const { vop, app } = rig;
    const a = app.auth();
    const url = `${vop.baseUrl}/widget/upload?${new URLSearchParams({ appId: a.AppId!, timestamp: a.Timestamp!, token: 'f'.repeat(32), videoId: await app.register(), origin: 'http://localhost:1' })}`;
    const plain = await fetch(url);
    expect(plain.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await plain.text()).toBe('ErrorCode : 104, ErrorMessage : App SecretKey Error');
    const html = await fetch(url, { headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
    expect(html.status).toBe(401);
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(html.headers.get('vary')).toMatch(/Accept/);
    expect(html.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    const body = await html.text();
    expect(body).toContain('<small><pre>ErrorCode : 104, ErrorMessage : App SecretKey Error</pre></small>');
    expect(body).toContain('<p id="sentence">This upload link is not valid.');
    // A Chinese browser reads Chinese, the code's line under it as it is.
    const zh = await (await fetch(url, { headers: { accept: 'text/html', 'accept-language': 'zh-CN,zh;q=0.9' } })).text();
    expect(zh).toContain('<p id="sentence">此上传链接无效。');
    expect(zh).toContain('<pre>ErrorCode : 104, ErrorMessage : App SecretKey Error</pre>');
    expect(body).toContain('"hostOrigin":"http://localhost:1"');
    expect(body).not.toContain('f'.repeat(32)); // the token is not echoed
    expect(body).toContain('<link rel="stylesheet" href="page/failed.css">');
    expect(html.headers.get('content-security-policy')).toMatch(/style-src 'self'/);
    expect((await fetch(`${vop.baseUrl}/widget/page/failed.css`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
  });

  it('looks like the upload page in a narrow window: its font, the code line wrapped, a Close button for the window it opened', async () => {
    const { vop, app, page } = rig;
    const a = app.auth();
    // An expired link (105), as a person meets it: from the site's page, in the window the widget opens.
    const url = `${vop.baseUrl}/widget/upload?${new URLSearchParams({ appId: a.AppId!, timestamp: String(Math.floor(Date.now() / 1000) - 86_400), token: 'f'.repeat(32), videoId: await app.register(), origin: rig.host.origin, mode: 'window' })}`;
    const [popup] = await Promise.all([page.context().waitForEvent('page'), page.evaluate((u) => void window.open(u, 'vop-err', 'width=320,height=400'), url)]);
    // Its stylesheet applied: the page's load waits for it, the sentence alone does not.
    await popup.waitForLoadState('load');
    await popup.setViewportSize({ width: 320, height: 400 });
    const look = await popup.evaluate(() => {
      const pre = document.querySelector('pre')!;
      return { font: getComputedStyle(document.body).fontFamily, preFits: pre.scrollWidth <= pre.clientWidth, pageFits: document.documentElement.scrollWidth <= 320, close: !document.getElementById('close')!.hidden };
    });
    expect(look.font).not.toMatch(/^(serif|"?Times)/);
    expect(look).toMatchObject({ preFits: true, pageFits: true, close: true });
    await closePopup(popup);
    expect(popup.isClosed()).toBe(true);
  });
});
