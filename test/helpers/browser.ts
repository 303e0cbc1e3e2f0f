/**
 * Real Chromium for the browser tests (playwright-core drives the system's Chromium: no browser
 * download), and a tiny web server on another origin to play the application's host page.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_EXECUTABLE } from './chromium.js';
import { ROOT } from './server.js';

export { CHROMIUM_ARGS, CHROMIUM_EXECUTABLE };

/**
 * A Chromium for the calling test file; `close()` it in afterAll. In a vitest worker: a
 * connection to the run's one Chromium (started by test/helpers/serviceBroker.ts when a file first
 * asks; launching one per file cost seconds a file), on which `close()` closes the contexts this
 * file made and disconnects. Anywhere else: a Chromium of its own.
 */
export async function launchBrowser(): Promise<Browser> {
  if (process.env.VITEST_WORKER_ID) return (await import('./sharedServices.js')).sharedBrowser();
  return chromium.launch({ executablePath: CHROMIUM_EXECUTABLE, args: CHROMIUM_ARGS });
}

/** An application's web server, as far as a browser test needs one: pages it serves by path. */
export interface HostServer {
  /** `http://localhost:<port>`: another origin than vop's `http://127.0.0.1:<port>`. */
  origin: string;
  /** Serves `html` at `path` (text/html) from now on. */
  page(path: string, html: string): void;
  close(): Promise<void>;
}

/**
 * Starts the host page server on loopback. Its origin uses the name `localhost`, so it differs
 * from vop's (127.0.0.1) by host as well as by port: a different site, as in real deployments.
 */
export async function startHostServer(): Promise<HostServer> {
  const pages = new Map<string, string>();
  const server = http.createServer((req, res) => {
    const html = pages.get(new URL(req.url ?? '/', 'http://x').pathname);
    if (html === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://localhost:${port}`,
    page: (path, html) => pages.set(path, html),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Text safe inside HTML (attributes and text). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** What a screenshot is taken of: a Playwright page or locator. */
interface Shootable {
  screenshot(options: { path: string; fullPage?: boolean; animations?: 'disabled' }): Promise<unknown>;
}

/**
 * Saves a screenshot of `target` as docs/screenshots/`name` (shown in the README and the docs)
 * when the run was asked to update them (`npm run screenshots`), and takes none otherwise: an
 * ordinary run has no use for the picture, and a full-page one costs the browser a capture and
 * a PNG encoding (console-layout's 48 took 4.7 of its 24.9 CPU-seconds).
 */
export async function screenshot(target: Shootable, name: string, options: { fullPage?: boolean; animations?: 'disabled' } = {}): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS !== '1') return;
  const dir = path.join(ROOT, 'docs/screenshots');
  fs.mkdirSync(dir, { recursive: true });
  await target.screenshot({ path: path.join(dir, name), ...options });
}
