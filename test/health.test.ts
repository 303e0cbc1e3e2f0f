/** `GET /healthz` tells anyone that the server is up, and only the admin what it runs on (issue 12, "Small"). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startServer, type TestServer } from './helpers/server.js';

let t: TestServer;
beforeAll(async () => {
  t = await startServer();
});
afterAll(async () => {
  await t?.close();
});

const health = async (headers: Record<string, string> = {}) => {
  const res = await fetch(`${t.baseUrl}/healthz`, { headers });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
};

describe('/healthz', () => {
  it('answers only {status} without the admin token, or with a wrong one', async () => {
    expect(await health()).toEqual({ status: 'ok' });
    expect(await health({ authorization: 'Bearer not-the-token' })).toEqual({ status: 'ok' });
  });

  it('adds the version, counts, warnings and binaries for the admin token', async () => {
    const body = await health({ authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(body).toMatchObject({ status: 'ok', videosByStatus: expect.any(Object), warnings: [] });
    expect(Object.keys(body)).toEqual(expect.arrayContaining(['version', 'uptimeSeconds', 'ffmpeg']));
  });
});
