/**
 * A reload of the upload page after the spec's timestamp went stale: the page reopens from the
 * scoped credential it put in its own address, and from nothing else.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpecClient } from '../helpers/client.js';
import { specToken } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';

let vop: TestServer;
let app: SpecClient;
beforeAll(async () => {
  vop = await startServer();
  app = await vop.newApp('reopen');
});
afterAll(() => vop?.close());

function pageUrl(params: Record<string, string>): string {
  return `${vop.baseUrl}/widget/upload?${new URLSearchParams({ mode: 'window', ...params })}`;
}

async function credentialOf(html: string): Promise<string> {
  const json = /<script[^>]*id="vop-session"[^>]*>([\s\S]*?)<\/script>/.exec(html)?.[1];
  if (!json) throw new Error('no session block in the page');
  return JSON.parse(json).credential as string;
}

describe('upload page reopened from its credential', () => {
  it('opens past a stale timestamp with the credential, and refuses the stale timestamp itself', async () => {
    const videoId = await app.register({ VideoTitle: 'reopen me' });
    const ts = String(Math.floor(Date.now() / 1000));
    const first = await fetch(pageUrl({ appId: app.appId, timestamp: ts, token: specToken(ts, app.secret), videoId }));
    expect(first.status).toBe(200);
    const credential = await credentialOf(await first.text());

    const staleTs = String(Math.floor(Date.now() / 1000) - 3600);
    const stale = await fetch(pageUrl({ appId: app.appId, timestamp: staleTs, token: specToken(staleTs, app.secret), videoId }));
    expect(await stale.text()).toMatch(/^ErrorCode : 105, ErrorMessage : Timestamp Expired/);

    const again = await fetch(pageUrl({ session: credential }));
    expect(again.status).toBe(200);
    expect(await credentialOf(await again.text())).toBe(credential);
  });

  it('refuses a forged credential, and one whose video already has its file', async () => {
    const videoId = await app.register({ VideoTitle: 'forged' });
    const ts = String(Math.floor(Date.now() / 1000));
    const credential = await credentialOf(await (await fetch(pageUrl({ appId: app.appId, timestamp: ts, token: specToken(ts, app.secret), videoId }))).text());
    const [payload, mac] = credential.split('.') as [string, string];
    const forged = await fetch(pageUrl({ session: `${payload}.${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}` }));
    expect(await forged.text()).toMatch(/^ErrorCode : 107, ErrorMessage : Upload Credential Invalid/);

    await vop.vop.services.lifecycle.move(videoId, 5, { from: [8] });
    const done = await fetch(pageUrl({ session: credential }));
    expect(await done.text()).toMatch(/^ErrorCode : 303, /);
  });
});
