/**
 * DNS rebinding (issue 12, item 4): the admin API and the console answer only to this server's
 * own names; the spec API, which applications may reach by any name, is not affected.
 */
import http from 'node:http';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startServer({ publicUrl: 'http://videos.lan:8080' });
});
afterAll(async () => {
  await t?.close();
});

/** A GET with the Host header a browser would send for `host` (fetch does not let a page set it). */
function getAs(host: string, path: string): Promise<{ status: number; body: string }> {
  const { port } = new URL(t.baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers: { host, authorization: `Bearer ${ADMIN_TOKEN}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the Host of admin and console requests', () => {
  it('refuses a name the server is not known by, saying what to use', async () => {
    const admin = await getAs('rebind.attacker.example', '/admin/api/apps');
    expect(admin.status).toBe(403);
    expect(JSON.parse(admin.body).error).toMatchObject({ code: '411' });
    expect(JSON.parse(admin.body).error.message).toMatch(/does not answer the admin API or the console to the name "rebind\.attacker\.example"/);
    expect((await getAs('rebind.attacker.example:8080', '/console/')).status).toBe(403);
    expect((await getAs('rebind.attacker.example', '/admin/api/session')).status).toBe(403);
  });

  it('answers to its addresses, localhost, its host name and the public URL', async () => {
    const { port } = new URL(t.baseUrl);
    for (const host of [`127.0.0.1:${port}`, `[::1]:${port}`, '192.168.1.20:8080', `localhost:${port}`, os.hostname(), `${os.hostname()}.local`, 'videos.lan:8080']) {
      expect((await getAs(host, '/admin/api/apps')).status, host).toBe(200);
    }
  });

  it('leaves the spec API and the widgets to any name', async () => {
    expect((await getAs('cdn.example', '/widget/initUploadWidget.js')).status).toBe(200);
    expect((await getAs('cdn.example', '/healthz')).status).toBe(200);
  });
});
