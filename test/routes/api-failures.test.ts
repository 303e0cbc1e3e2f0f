/**
 * Failures (issue 2, item 8): the envelope everywhere, HTTP 200 for application-level failures,
 * 4xx/5xx only for transport-level ones, size limits, and never a stack trace.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SpecClient, SpecResponse } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { isUnexpectedErrorLine } from '../../server/core/logLines.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** A transport-level failure: its HTTP status and the envelope with only AuthMsg. */
function expectEnvelope(r: SpecResponse, status: number, resultCode: string, message?: string | RegExp) {
  expect(r.status, r.text).toBe(status);
  expect(r.contentType).toBe(JSON_TYPE);
  expect(Object.keys(r.body)).toEqual(['AuthMsg']);
  expect(r.body.AuthMsg.ResultCode).toBe(resultCode);
  if (typeof message === 'string') expect(r.body.AuthMsg.ResultMessage).toBe(message);
  else if (message) expect(r.body.AuthMsg.ResultMessage).toMatch(message);
}

describe('failures', () => {
  let s: TestServer;
  let c: SpecClient;
  beforeAll(async () => {
    s = await startServer();
    c = await s.newApp();
  });
  afterAll(() => s.close());
  afterEach(() => vi.restoreAllMocks());

  it('answers application-level failures with HTTP 200 and the envelope alone', async () => {
    const r = await c.get('/Api/Video/Get', { Id: crypto.randomUUID() });
    expectEnvelope(r, 200, '301', 'Video Not Found');
  });

  describe('bodies', () => {
    it('refuses a form body over the size limit with 413', async () => {
      const r = await c.post('/Api/Video/Post', { VideoTitle: 't', SourceFileGetType: 1, Description: 'x'.repeat(70 * 1024) });
      expectEnvelope(r, 413, '401', 'Request Body Too Large');
    });

    it('refuses a multipart body over the size limit with 413', async () => {
      const r = await c.postMultipart('/Api/Video/Post', { VideoTitle: 't', SourceFileGetType: 1, Description: 'x'.repeat(70 * 1024) });
      expectEnvelope(r, 413, '401', 'Request Body Too Large');
    });

    it('refuses a form with too many fields with 413, not a server error', async () => {
      const fields: Record<string, string> = { VideoTitle: 't', SourceFileGetType: '1' };
      for (let i = 0; i < 150; i++) fields[`f${i}`] = 'v';
      expectEnvelope(await c.post('/Api/Video/Post', fields), 413, '401');
      expectEnvelope(await c.postMultipart('/Api/Video/Post', fields), 413, '401');
    });

    it('refuses a multipart body without a boundary with 400', async () => {
      const r = await c.raw('POST', '/Api/Video/Post', { headers: { 'content-type': 'multipart/form-data' }, body: 'VideoTitle=x' });
      expectEnvelope(r, 400, '402', /^Malformed Request/);
    });

    it('refuses a broken multipart body with 400', async () => {
      const r = await c.raw('POST', '/Api/Video/Post', {
        headers: { 'content-type': 'multipart/form-data; boundary=XyZ' },
        body: '--XyZ\r\nContent-Disposition: form-data; name="VideoTitle"\r\n\r\nunfinished',
      });
      expectEnvelope(r, 400, '402', /^Malformed Request/);
    });

    it('refuses a multipart registration carrying a file with 415', async () => {
      const form = new FormData();
      for (const [k, v] of Object.entries({ ...c.auth(), VideoTitle: 't', SourceFileGetType: '1' })) form.append(k, v);
      form.append('file', new Blob([Buffer.alloc(10)]), 'clip.mp4');
      const res = await fetch(`${s.baseUrl}/Api/Video/Post`, { method: 'POST', body: form });
      expect(res.status).toBe(415);
      expect((await res.json()).AuthMsg.ResultCode).toBe('403');
    });

    it.each([
      ['JSON', { 'content-type': 'application/json' }, '{"VideoTitle":"t"}'],
      ['plain text', { 'content-type': 'text/plain' }, 'VideoTitle=t'],
      ['no content type', {}, new Blob(['VideoTitle=t'])],
      ['a charset other than UTF-8', { 'content-type': 'application/x-www-form-urlencoded; charset=latin1' }, 'VideoTitle=t'],
      ['an unknown content encoding', { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'compress' }, 'VideoTitle=t'],
    ])('refuses a body sent as %s with 415', async (_what, headers, body) => {
      const r = await c.raw('POST', `/Api/Video/Post?${c.query()}`, { headers: headers as Record<string, string>, body });
      expectEnvelope(r, 415, '403', /^Unsupported Media Type/);
    });
  });

  describe('paths and methods', () => {
    it.each(['/Api/Video/Delete', '/Api/Nothing', '/api/video/get/extra', '/nothing-here'])('answers the unknown path %s with 404 and the envelope', async (path) => {
      expectEnvelope(await c.get(path), 404, '404', /^Not Found/);
    });

    it.each([
      ['POST', '/Api/Video/Get', 'GET, HEAD'],
      ['PUT', '/Api/Video', 'GET, HEAD'],
      ['DELETE', '/Api/Video/GetList', 'GET, HEAD'],
      ['PATCH', '/Api/Video/GetUserVideoListByAId', 'GET, HEAD'],
      ['GET', '/Api/Video/Post', 'POST'],
      ['DELETE', '/api/video/post', 'POST'],
    ])('answers %s %s with 405, naming the allowed method', async (method, path, allowed) => {
      const r = await c.raw(method, `${path}?${c.query()}`);
      expectEnvelope(r, 405, '405', 'Method Not Allowed');
      expect(r.headers.get('allow')).toBe(allowed);
    });

    it('answers a path with broken percent-encoding with a 4xx envelope, not a 500', async () => {
      const r = await c.raw('GET', '/Api/Video/%E0%A4%A');
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.body.AuthMsg.ResultCode).toMatch(/^40\d$/);
    });
  });

  describe('server errors', () => {
    const SECRET_DETAIL = 'database exploded at /srv/vop/secret-path.db';

    it('answers an unexpected failure with 500 and the catalogue message only; the stack goes to the log', async () => {
      const id = await c.register();
      vi.spyOn(s.vop.stores.videos, 'get').mockRejectedValue(new Error(SECRET_DETAIL));
      const r = await c.get('/Api/Video/Get', { Id: id });
      expect(r.status).toBe(500);
      expect(JSON.parse(r.text)).toEqual({ AuthMsg: { ResultCode: '500', ResultMessage: 'Server Error' } });
      expect(r.text).not.toContain('exploded');
      expect(r.text).not.toMatch(/\bat\s|\.ts\b|node_modules/);
      expect(s.logs.filter(isUnexpectedErrorLine).some((l) => l.includes(SECRET_DETAIL))).toBe(true);
    });

    it('answers a failed registration write, and a thrown non-Error, the same way', async () => {
      vi.spyOn(s.vop.stores.videos, 'insert').mockImplementation(() => {
        throw 'raw string failure with /etc/passwd';
      });
      const r = await c.post('/Api/Video/Post', { VideoTitle: 't', SourceFileGetType: 1 });
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ AuthMsg: { ResultCode: '500', ResultMessage: 'Server Error' } });
      expect(r.text).not.toContain('passwd');
    });

    it('fails inside authentication the same way', async () => {
      vi.spyOn(s.vop.stores.apps, 'get').mockRejectedValue(new TypeError(SECRET_DETAIL));
      const r = await c.get('/Api/Video/GetList');
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ AuthMsg: { ResultCode: '500', ResultMessage: 'Server Error' } });
    });

    it('answers an admin API failure with 500 and {error} without detail', async () => {
      vi.spyOn(s.vop.stores.apps, 'list').mockRejectedValue(new Error(SECRET_DETAIL));
      const r = await s.admin.request('GET', '/apps');
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ error: { code: '500', message: 'Server Error' } });
    });
  });
});
