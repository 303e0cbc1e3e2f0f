/**
 * The widget scripts and the upload page over plain HTTP (the browser tests are widget-window,
 * widget-overlay and widget-resume): what is served, with which headers, and the page's checks.
 */
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonForScriptBlock, renderUploadPage } from '../../server/widget/uploadPage.js';
import { nowSeconds, specToken, type SpecClient } from '../helpers/client.js';
import { ROOT, startServer, type TestServer } from '../helpers/server.js';
import { typecheck } from '../helpers/typecheck.js';

const SCRIPTS = ['initUploadWidget.js', 'initUploadABoxWidget.js'];
/** Each served script and the form source it is made of, after widget/src/shared.js. */
const FORMS = [
  { script: 'initUploadWidget.js', form: 'window.js' },
  { script: 'initUploadABoxWidget.js', form: 'overlay.js' },
];

let vop: TestServer;
let app: SpecClient;

beforeAll(async () => {
  vop = await startServer({ scriptBaseUrl: 'https://cdn.example.com/vop/widget' });
  app = await vop.newApp('widget scripts');
});
afterAll(async () => {
  await vop?.close();
});

/** The upload page's address as a widget builds it. */
function pageUrl(params: Record<string, string>): string {
  return `${vop.baseUrl}/widget/upload?${new URLSearchParams(params)}`;
}

function widgetValues(videoId: string, timestamp = nowSeconds()): Record<string, string> {
  return { appId: app.appId, timestamp, token: specToken(timestamp, app.secret), videoId, mode: 'overlay', origin: 'http://localhost:1234' };
}

describe('the widget scripts', () => {
  it.each(FORMS)('$script is one self-contained script: the shared source once, then its form, defining openUpload and nothing else', async ({ script, form }) => {
    const text = await (await fetch(`${vop.baseUrl}/widget/${script}`)).text();
    const source = (f: string) => fs.readFileSync(path.join(ROOT, 'widget/src', f), 'utf8');
    // Spec 4.5: a host page loads it alone, from its own address, so it must carry the shared code itself, once.
    expect(text.split(source('shared.js')).length - 1, 'the shared source appears once').toBe(1);
    expect(text.split(source(form)).length - 1, `${form} appears once`).toBe(1);
    expect(text.indexOf(source('shared.js'))).toBeLessThan(text.indexOf(source(form)));
    expect(text, 'no module loading: a plain <script src> runs it').not.toMatch(/\brequire\s*\(|^\s*(import|export)\b/m);
    // Run as a classic script (an import or export would not even compile) on a bare page: the
    // one name it leaves on the page is openUpload, everything else stays in its own scope.
    const page = vm.createContext({ document: { currentScript: null, getElementsByTagName: () => [] }, HTMLScriptElement: class {} });
    vm.runInContext('var window = globalThis;', page);
    new vm.Script(text, { filename: script }).runInContext(page);
    expect(Object.keys(page).sort()).toEqual(['HTMLScriptElement', 'document', 'openUpload', 'window']);
    expect(typeof page.openUpload).toBe('function');
  });

  it('type-check clean as plain JavaScript (the last step of npm run typecheck)', async () => {
    expect((await typecheck('widget')).out).toBe('');
  });

  it.each(SCRIPTS)('%s is served as JavaScript, loadable from any origin, with a validator and a short max-age', async (file) => {
    const res = await fetch(`${vop.baseUrl}/widget/${file}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(res.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(res.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"[\w-]+"$/);

    const again = await fetch(`${vop.baseUrl}/widget/${file}`, { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);
  });

  it("serves the page's assets and tus-js-client's browser build", async () => {
    for (const [p, type] of [
      ['/widget/page/upload.js', 'application/javascript; charset=utf-8'],
      ['/widget/page/upload.css', 'text/css; charset=utf-8'],
      ['/widget/vendor/tus.min.js', 'application/javascript; charset=utf-8'],
    ]) {
      const res = await fetch(`${vop.baseUrl}${p}`);
      expect(res.status, p).toBe(200);
      expect(res.headers.get('content-type'), p).toBe(type);
    }
  });

  it('tells where the scripts are (option scriptBaseUrl)', async () => {
    const res = await fetch(`${vop.baseUrl}/widget/`);
    expect(await res.json()).toEqual({
      window: 'https://cdn.example.com/vop/widget/initUploadWidget.js',
      overlay: 'https://cdn.example.com/vop/widget/initUploadABoxWidget.js',
    });
  });
});

describe('the upload page', () => {
  it('shows the spec text for a wrong token, before anything else (spec 4.5, 7.2)', async () => {
    const videoId = await app.register();
    const res = await fetch(pageUrl({ ...widgetValues(videoId), token: specToken(nowSeconds(), 'not-the-secret') }));
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toBe('ErrorCode : 104, ErrorMessage : App SecretKey Error');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it.each([
    ['an unknown video', { videoId: '00000000-0000-4000-8000-000000000000' }, /^ErrorCode : 301, ErrorMessage : Video Not Found/],
    ['a missing videoId', { videoId: '' }, /^ErrorCode : 100, ErrorMessage : Missing parameter/],
    ['an old timestamp', { timestamp: String(Number(nowSeconds()) - 3600) }, /^ErrorCode : 105, ErrorMessage : Timestamp Expired/],
    ['a bad uploadType', { uploadType: 'java' }, /^ErrorCode : 201, ErrorMessage : Invalid Parameter/],
    ['an origin with a path', { origin: 'http://localhost:1234/page' }, /^ErrorCode : 201, ErrorMessage : Invalid Parameter: origin/],
    ['a chunkSize out of range', { chunkSize: '12' }, /^ErrorCode : 201, ErrorMessage : Invalid Parameter: chunkSize/],
  ])('shows the spec text for %s', async (_name, change: Record<string, string>, expected) => {
    const videoId = await app.register();
    const values: Record<string, string> = { ...widgetValues(videoId), ...change };
    if (change.timestamp) values.token = specToken(change.timestamp, app.secret);
    const res = await fetch(pageUrl(values));
    expect(await res.text()).toMatch(expected);
  });

  it('refuses a video registered to be pulled from a URL (SourceFileGetType 2)', async () => {
    const videoId = await app.register({ SourceFileGetType: 2, SourceFilePath: 'http://127.0.0.1:9/none.mp4' });
    const res = await fetch(pageUrl(widgetValues(videoId)));
    expect(await res.text()).toMatch(/^ErrorCode : 303, ErrorMessage : Video State Conflict/);
  });

  it('embeds the session as a JSON data block under a strict CSP', async () => {
    const videoId = await app.register();
    const res = await fetch(pageUrl({ ...widgetValues(videoId), uploadType: 'silverlight', needHandleSepcial: 'True', chunkSize: '65536' }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain('frame-ancestors *'); // overlay form: framed by the host page
    const html = await res.text();
    const m = /<script type="application\/json" id="vop-session">([^<]*)<\/script>/.exec(html);
    expect(m).not.toBeNull();
    const data = JSON.parse(m![1]!);
    expect(data).toMatchObject({
      videoId,
      uploadType: 'silverlight',
      needHandleSepcial: true,
      hostOrigin: 'http://localhost:1234',
      mode: 'overlay',
      endpoint: '../upload/tus/',
      chunkSize: 65536,
      maxBytes: 6 * 1024 ** 3,
    });
    expect(typeof data.credential).toBe('string');
    // No other inline script: every <script> but the data block has a src.
    expect(html.match(/<script(?![^>]*\bsrc=)(?![^>]*application\/json)[^>]*>/g)).toBeNull();
  });

  it('forbids framing in the window form', async () => {
    const videoId = await app.register();
    const res = await fetch(pageUrl({ ...widgetValues(videoId), mode: 'window' }));
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
  });
});

describe('the session block', () => {
  it('cannot be closed or commented out by a value', () => {
    const nasty = '</script><script>alert(1)</script><!-- & \u2028';
    const json = jsonForScriptBlock({ reason: nasty });
    expect(json).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(json)).toEqual({ reason: nasty });
    const html = renderUploadPage('<head><!--VOP_SESSION--></head>', { reason: nasty } as never);
    expect(html.match(/<\/script>/g)).toHaveLength(1);
  });
});
