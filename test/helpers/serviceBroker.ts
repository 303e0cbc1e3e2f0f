/**
 * The services a test run shares (PostgreSQL, Ceph RGW, Chromium), started at most once per run
 * and only when a test file first asks for one (or a whole run's setup does, test/globalSetup.ts),
 * so that a run of files that need none (the quick tier) starts none. It lives in vitest's main process (test/globalSetup.ts starts it); test files
 * run in worker processes and ask it over loopback HTTP (test/helpers/sharedServices.ts), because
 * globalSetup's `provide` hands workers values fixed before the first test, not services started
 * later on demand. Each file then makes its own database or bucket on the shared server.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type BrowserServer } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_EXECUTABLE } from './chromium.js';
import { startOwnCeph, type TestCeph } from './ceph.js';
import { startOwnPostgres, type TestPostgres } from './postgres.js';

/** What a worker learns about each service: enough to reach it, nothing to stop it with. */
export interface SharedServices {
  postgres: { host: string; port: number; startMs: number };
  ceph: { endpoint: string; accessKeyId: string; secretAccessKey: string; dir: string; startMs: number };
  chromium: { wsEndpoint: string };
}

export type ServiceName = keyof SharedServices;

/**
 * Sizes for a server that every test file of a run uses, two at a time: the cluster tests run
 * four nodes with a pool each, and Ceph keeps every file's objects in memory until the run ends.
 */
const SHARED_POSTGRES_MAX_CONNECTIONS = 400;
const SHARED_CEPH_MEMSTORE_BYTES = 4 * 1024 ** 3;

export interface ServiceBroker {
  /** `http://127.0.0.1:<port>`, for the workers. */
  address: string;
  /** Stops every service it started, then itself. */
  close(): Promise<void>;
  /** Kills every service it started at once, for a process that exits without `close()` (an interrupted run). */
  killNow(): void;
}

/** Starts the broker on loopback; nothing else starts until a worker asks. */
export async function startServiceBroker(): Promise<ServiceBroker> {
  let postgres: Promise<TestPostgres> | undefined;
  let ceph: Promise<TestCeph> | undefined;
  let browser: Promise<BrowserServer> | undefined;
  // The same once started, for killNow, which cannot wait for a promise.
  const started: { postgres?: TestPostgres; ceph?: TestCeph; browser?: BrowserServer } = {};

  const starters: { [K in ServiceName]: () => Promise<SharedServices[K]> } = {
    async postgres() {
      postgres ??= startOwnPostgres({ maxConnections: SHARED_POSTGRES_MAX_CONNECTIONS }).then((p) => (started.postgres = p));
      const pg = await postgres;
      return { host: pg.host, port: pg.port, startMs: pg.startMs };
    },
    async ceph() {
      ceph ??= startOwnCeph({ memstoreBytes: SHARED_CEPH_MEMSTORE_BYTES }).then((c) => (started.ceph = c));
      const c = await ceph;
      return { endpoint: c.endpoint, accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey, dir: c.dir, startMs: c.startMs };
    },
    async chromium() {
      browser ??= chromium.launchServer({ executablePath: CHROMIUM_EXECUTABLE, args: CHROMIUM_ARGS, host: '127.0.0.1' }).then((b) => (started.browser = b));
      return { wsEndpoint: (await browser).wsEndpoint() };
    },
  };

  const server = http.createServer((req, res) => {
    const name = (req.url ?? '').slice(1);
    if (req.method !== 'POST' || !Object.hasOwn(starters, name)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`no service ${JSON.stringify(name)}`);
      return;
    }
    // A start that failed fails every file that asks, with the same message (the logs of Ceph's
    // daemons included), rather than starting again for each.
    starters[name as ServiceName]().then(
      (info) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(info)),
      (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(err.stack ?? String(err)),
    );
  });
  // Starting Ceph under load can take a minute; the workers' hooks bound the wait, not Node.
  server.requestTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    address: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      // Each is stopped even if another fails to; a service that never started is skipped.
      await Promise.allSettled([
        browser?.then((b) => b.close()),
        ceph?.then((c) => c.stop()),
        postgres?.then((p) => p.stop()),
      ]);
    },
    killNow() {
      started.browser?.process().kill('SIGKILL');
      // Both signal their daemons before their first await: what remains of them may never run.
      void started.ceph?.stop();
      started.postgres?.stop();
    },
  };
}
