/** The server's root leads a browser (and any other client) to the console, not to a JSON 404. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startServer();
});
afterAll(async () => {
  await t?.close();
});

describe('GET /', () => {
  it('redirects a browser to the console', async () => {
    const res = await fetch(`${t.baseUrl}/`, { redirect: 'manual', headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect([302, 303]).toContain(res.status);
    expect(new URL(res.headers.get('location')!, `${t.baseUrl}/`).href).toBe(`${t.baseUrl}/console/`);
    // Followed, it lands on the console's address (its page, or the 503 that says to build it).
    const followed = await fetch(`${t.baseUrl}/`, { headers: { accept: 'text/html' } });
    expect(new URL(followed.url).pathname).toBe('/console/');
  });

  it('redirects HEAD and clients that do not ask for HTML the same way', async () => {
    for (const init of [{ method: 'HEAD' }, { headers: { accept: 'application/json' } }, {}]) {
      const res = await fetch(`${t.baseUrl}/`, { ...init, redirect: 'manual' });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe('console/');
    }
  });

  it('leaves other methods on / to the 404 of unknown paths', async () => {
    const res = await fetch(`${t.baseUrl}/`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { AuthMsg: { ResultCode: string } }).AuthMsg.ResultCode).toBe('404');
  });
});
