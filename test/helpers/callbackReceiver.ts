import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { notYet, waitUntil, type WaitOptions } from './wait.js';

/** A callback endpoint started by {@link startCallbackReceiver}. */
export interface CallbackReceiver {
  /** Each body's form fields, in arrival order. */
  received: Array<Record<string, string>>;
  /** Each one's `webhook-id` header (what a receiver de-duplicates on), in the same order. */
  webhookIds: string[];
  url: string;
  close: () => Promise<void>;
}

/**
 * An application's callback endpoint on loopback that answers 200 to everything and keeps what
 * each delivery carried. `close` ends it; tests call it after each case.
 */
export async function startCallbackReceiver(): Promise<CallbackReceiver> {
  const received: Array<Record<string, string>> = [];
  const webhookIds: string[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c));
    req.on('end', () => {
      received.push(Object.fromEntries(new URLSearchParams(raw)));
      webhookIds.push(String(req.headers['webhook-id'] ?? ''));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return { received, webhookIds, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`, close };
}

/** A delivery as the admin API lists it (server/callbacks/deliveryView.ts), the fields tests read. */
export interface ListedDelivery {
  id: string;
  videoId: string;
  videoStatus: number;
  state: 'pending' | 'delivered' | 'failed' | 'skipped';
  attempts: Array<{ series: number; attempt: number; ok: boolean }>;
}

/**
 * Resolves with an application's status deliveries (admin API) once none is pending: each is then
 * in its final state with its attempts recorded, and an attempt is recorded only after its request
 * was answered. So a callback that has not reached the receiver by then never will: what a test
 * asserts about the callbacks received ("one, never a second") holds from here on.
 */
export async function settledDeliveries(
  admin: { request(method: string, path: string): Promise<{ status: number; body: any }> },
  appId: string,
  o: WaitOptions & { /** Only this video's deliveries (the latest 200 of the app are read). */ videoId?: string } = {},
): Promise<ListedDelivery[]> {
  return waitUntil(`every delivery of app ${appId}${o.videoId ? ` for video ${o.videoId}` : ''} in a final state`, async () => {
    const r = await admin.request('GET', `/apps/${appId}/deliveries?limit=200`);
    if (r.status !== 200) return notYet({ status: r.status });
    const ds = (r.body as { deliveries: ListedDelivery[] }).deliveries.filter((d) => o.videoId === undefined || d.videoId === o.videoId);
    return ds.some((d) => d.state === 'pending') ? notYet(ds.map((d) => [d.videoStatus, d.state])) : ds;
  }, { timeoutMs: o.timeoutMs ?? 30_000, pollMs: o.pollMs ?? 100 });
}
