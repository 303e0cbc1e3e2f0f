/**
 * A test file's side of the run's shared services (test/helpers/serviceBroker.ts): asks the broker
 * for a service, which starts it on the first ask, and hands the file a handle of its own. Reached
 * through startPostgres, startCeph and launchBrowser, which the benches also call outside vitest.
 *
 * The quick tier has no services: a file of it that asks fails at once with a message that says
 * so, instead of making the tier wait for PostgreSQL, Ceph or Chromium.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { chromium, type Browser } from 'playwright-core';
import { inject } from 'vitest';
import type { TestCeph } from './ceph.js';
import type { TestPostgres } from './postgres.js';
import type { ServiceName, SharedServices } from './serviceBroker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The project (tier) the file runs in, from vitest.config.ts. */
    vopTier: 'quick' | 'full';
    /** The service broker's address, from test/globalSetup.ts. */
    vopServiceBroker: string;
  }
}

const SERVICE_TITLES: Record<ServiceName, string> = { postgres: 'PostgreSQL', ceph: 'Ceph (S3)', chromium: 'Chromium' };

/** Asks the broker for `name`, starting it if no file has yet. */
async function sharedService<K extends ServiceName>(name: K): Promise<SharedServices[K]> {
  if (inject('vopTier') !== 'full') {
    throw new Error(
      `This test needs ${SERVICE_TITLES[name]}: it belongs in the full tier. List its file in test/tiers.ts (see docs/testing.md); the quick tier starts no services.`,
    );
  }
  const res = await fetch(`${inject('vopServiceBroker')}/${name}`, { method: 'POST' });
  const body = await res.text();
  if (!res.ok) throw new Error(`The run's ${SERVICE_TITLES[name]} did not start:\n${body}`);
  return JSON.parse(body) as SharedServices[K];
}

/** The run's PostgreSQL, as a handle whose `stop()` drops the databases made through it. */
export async function sharedPostgres(): Promise<TestPostgres> {
  const waited = performance.now();
  const { host, port, startMs } = await sharedService('postgres');
  const url = (name: string) => `postgres://postgres@${host}:${port}/${name}`;
  const made: string[] = [];
  const admin = async <T>(sql: string): Promise<T> => {
    const client = new pg.Client({ connectionString: url('postgres'), connectionTimeoutMillis: 10_000 });
    await client.connect();
    try {
      return (await client.query(sql)) as T;
    } finally {
      await client.end();
    }
  };
  return {
    host,
    port,
    url,
    // What this file waited for: the whole start for the file that started it, little for the others.
    startMs: Math.min(startMs, Math.round(performance.now() - waited)),
    async createDatabase(name = `vop_${process.pid}_${crypto.randomBytes(4).toString('hex')}`) {
      await admin(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      made.push(name);
      return url(name);
    },
    // Never rejects: some files call it without awaiting it. FORCE ends the file's connections
    // still open (a node killed mid-test leaves some).
    async stop() {
      for (const name of made.splice(0)) await admin(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`).catch(() => undefined);
    },
  };
}

/** The run's Ceph RGW; `stop()` does nothing (each file's buckets have names of their own, and the cluster ends with the run). */
export async function sharedCeph(): Promise<TestCeph> {
  const waited = performance.now();
  const info = await sharedService('ceph');
  return { ...info, startMs: Math.min(info.startMs, Math.round(performance.now() - waited)), stop: async () => undefined };
}

/** A connection to the run's Chromium: `close()` closes the contexts made through it and disconnects. */
export async function sharedBrowser(): Promise<Browser> {
  const { wsEndpoint } = await sharedService('chromium');
  return chromium.connect(wsEndpoint);
}
