/**
 * Helpers of the console tests: the console built once (scripts/build-console.mjs, skipped while
 * renderer/dist is newer than renderer/src), and a cookie session like a browser's.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { ADMIN_TOKEN, ROOT, type TestServer } from './server.js';
import { notYet, waitUntil } from './wait.js';

/**
 * Builds the console unless renderer/dist is up to date. Test files starting at once may each
 * build it: build-console.mjs builds into a temporary folder and renames it into place, so the
 * last rename wins and no reader sees half a build (and npm test has built it before vitest).
 */
export async function ensureConsoleBuilt(): Promise<void> {
  const child = spawn(process.execPath, [path.join(ROOT, 'scripts/build-console.mjs'), '--if-stale'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`building the console failed (exit ${code}):\n${out}`);
}

/** Logs `page` into the console at `baseUrl` with the test admin token, as a person does, and waits for the overview. */
export async function logIntoConsole(page: Page, baseUrl: string): Promise<void> {
  await page.goto(`${baseUrl}/console`);
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

/**
 * Waits until every job of the video is over, its storyboard among them (it is queued once the
 * ladder lands). Each job that ends reloads the player of a video's open page, with a newly signed
 * address for a signed video: a test that counts the page's requests or sets the player up opens
 * the page after this.
 */
export async function videoJobsOver(s: TestServer, videoId: string): Promise<void> {
  await waitUntil(`the jobs of ${videoId} over, its storyboard among them`, async () => {
    const jobs: Array<{ type: string; state: string }> = (await s.admin.request('GET', `/videos/${videoId}`)).body.jobs;
    const over = jobs.some((j) => j.type === 'storyboard') && jobs.every((j) => j.state === 'succeeded' || j.state === 'failed');
    return over ? true : notYet(jobs.map((j) => `${j.type} ${j.state}`));
  }, { timeoutMs: 60_000, pollMs: 100 });
}

/**
 * The admin API as the console calls it: a session cookie, and the session's secret (the login's
 * `consoleSecret`) in the X-Vop-Console header.
 */
export class CookieClient {
  cookie = '';
  /** The session's secret, from the login's answer. */
  secret = '';

  constructor(readonly baseUrl: string) {}

  async login(token: string): Promise<Response> {
    const res = await this.raw('POST', '/admin/api/session', { token });
    const set = res.headers.get('set-cookie');
    if (set) this.cookie = set.split(';')[0]!;
    if (res.ok) this.secret = (await res.clone().json()).consoleSecret;
    return res;
  }

  /** A request with the cookie; `consoleHeader: false` leaves out X-Vop-Console (else the secret, or `1` before a login). */
  async raw(method: string, p: string, body?: unknown, opts: { consoleHeader?: boolean } = {}): Promise<Response> {
    return fetch(`${this.baseUrl}${p}`, {
      method,
      headers: {
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...(opts.consoleHeader === false ? {} : { 'x-vop-console': this.secret || '1' }),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  async json(method: string, p: string, body?: unknown, opts: { consoleHeader?: boolean } = {}): Promise<{ status: number; body: any }> {
    const res = await this.raw(method, `/admin/api${p}`, body, opts);
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  /** Opens the event stream as the console does: a ticket asked for with the secret, then the stream with the cookie. */
  async openEvents(signal: AbortSignal): Promise<Response> {
    const { status, body } = await this.json('POST', '/events/ticket');
    if (status !== 200) throw new Error(`no events ticket: ${status} ${JSON.stringify(body)}`);
    return fetch(`${this.baseUrl}/admin/api/events?ticket=${encodeURIComponent(body.ticket)}`, { headers: { cookie: this.cookie }, signal });
  }
}

/** Reads the server-sent events of `res` (the console's `/admin/api/events`) into `out` until the stream is aborted. */
export function collectEvents(res: Response, out: Array<{ event: string; data: any }>): void {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += decoder.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) !== -1) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const event = /^event: (.+)$/m.exec(frame)?.[1];
          const data = /^data: (.+)$/m.exec(frame)?.[1];
          if (event && data) out.push({ event, data: JSON.parse(data) });
        }
      }
    } catch {
      // aborted
    }
  })();
}
