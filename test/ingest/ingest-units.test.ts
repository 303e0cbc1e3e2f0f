import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VopEventBus } from '../../server/core/events.js';
import { DownloadError, downloadToFile } from '../../server/ingest/httpDownload.js';
import { JobQueue, PermanentJobError } from '../../server/jobs/jobQueue.js';
import { openSqlJsStores } from '../../server/storage/sqljs/openSqlJsStores.js';
import { resolveIngestOptions } from '../../server/ingest/ingestOptions.js';
import { PullPolicy, allowEntriesThatNarrowNothing } from '../../server/ingest/pullPolicy.js';
import { LEGACY_KEY_ID, UploadCredentials, type UploadGrant } from '../../server/ingest/uploadCredential.js';
import { KeyRing } from '../../server/keys/keyRing.js';
import { tempDataDir } from '../helpers/server.js';

const fakeDns = (answers: Record<string, string[]>) => async (host: string) => {
  const list = answers[host];
  if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

/** No deadline or minimum rate to speak of, for the tests that are about something else. */
const UNHURRIED = { deadlineMs: 600_000, minBytesPerSecond: 0, minRateWindowMs: 60_000 };

describe('pull address policy', () => {
  const policy = new PullPolicy({ allow: [], deny: [] });

  it('allows private LAN and public addresses by default, and refuses loopback and link-local unless opted in', () => {
    for (const a of ['10.1.2.3', '172.16.0.9', '192.168.1.20', 'fd12:3456::1', '93.184.216.34', '2606:4700::1']) {
      expect(policy.refusal(a), a).toBeUndefined();
    }
    // Each refusal names the setting by its documented names, with a CIDR that holds the address
    // (an IPv4-mapped one judged, and allowed, as its IPv4 address).
    for (const [a, cidr] of [['127.0.0.1', '127.0.0.1/32'], ['127.9.9.9', '127.9.9.9/32'], ['::1', '::1/128'], ['::ffff:127.0.0.1', '127.0.0.1/32'], ['169.254.1.1', '169.254.1.1/32'], ['fe80::1', 'fe80::1/128']]) {
      const why = policy.refusal(a!)!;
      expect(why, a).toMatch(/\((loopback|linkLocal); to pull from it, allow a CIDR that holds it/);
      for (const name of [`--pull-allow ${cidr}`, `VOP_PULL_ALLOW=${cidr}`, 'ingest.pull.allow', "the pull allow-list in the console's Settings"]) expect(why, a).toContain(name);
      expect(new PullPolicy({ allow: [cidr!], deny: [] }).refusal(a!), `${a} with ${cidr} allowed`).toBeUndefined();
    }
    const optedIn = new PullPolicy({ allow: ['127.0.0.0/8', '::1/128', '169.254.0.0/16'], deny: [] });
    for (const a of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '169.254.1.1']) expect(optedIn.refusal(a), a).toBeUndefined();
  });

  it('refuses link-local, multicast, unspecified, broadcast and cloud metadata, in any notation', () => {
    for (const a of [
      '169.254.169.254',
      '169.254.1.1',
      'fe80::1',
      '224.0.0.1',
      'ff02::1',
      '0.0.0.0',
      '0.1.2.3',
      '::',
      '255.255.255.255',
      'fd00:ec2::254',
      '100.100.100.200',
      '::ffff:169.254.169.254',
      '::ffff:0.0.0.0',
      '64:ff9b::a9fe:a9fe',
      // IPv6 transition forms that reach IPv4 (here loopback) where a translator runs.
      '::ffff:0:127.0.0.1',
      '64:ff9b:1::7f00:1',
      '2002:7f00:1::1',
      '2001:0:1::1',
      // The old IPv4-compatible form: judged as the IPv4 address inside it.
      '::169.254.169.254',
      '::127.0.0.1',
    ]) {
      expect(policy.refusal(a), a).toMatch(/^refused address /);
    }
    expect(policy.refusal('::127.0.0.1')).toMatch(/loopback/);
    expect(policy.refusal('::169.254.169.254')).toMatch(/cloud metadata/);
  });

  it('refuses a host if any of its addresses is refused (mixed DNS answers)', async () => {
    const p = new PullPolicy({ allow: ['127.0.0.0/8', '::1/128'], deny: [] }, fakeDns({ 'mixed.test': ['93.184.216.34', '169.254.169.254'], 'ok.test': ['127.0.0.1', '::1'] }));
    await expect(p.resolve('mixed.test')).rejects.toThrow(/refused address 169\.254\.169\.254 \(cloud metadata service\) for host mixed\.test/);
    await expect(p.resolve('ok.test')).resolves.toEqual({ address: '127.0.0.1', family: 4 });
    await expect(p.resolve('metadata.google.internal.')).rejects.toThrow(/refused host metadata\.google\.internal/);
    await expect(p.resolve('[::1]')).resolves.toEqual({ address: '::1', family: 6 });
  });

  it('deny narrows everything, and no allow entry opens metadata, multicast or unspecified addresses', () => {
    const p = new PullPolicy({ allow: ['127.0.0.0/8', '169.254.0.0/16', '224.0.0.0/4', '0.0.0.0/8'], deny: ['10.9.0.0/16', '127.0.0.2/32'] });
    expect(p.refusal('10.1.1.1')).toBeUndefined();
    expect(p.refusal('10.9.1.1')).toMatch(/in ingest\.pull\.deny/);
    expect(p.refusal('127.0.0.1')).toBeUndefined();
    expect(p.refusal('127.0.0.2')).toMatch(/in ingest\.pull\.deny/);
    expect(p.refusal('::ffff:10.1.1.1')).toBeUndefined();
    expect(p.refusal('169.254.169.254')).toMatch(/cloud metadata service/);
    expect(p.refusal('169.254.170.2')).toMatch(/cloud metadata service/);
    expect(p.refusal('224.0.0.1')).toMatch(/multicast/);
    expect(p.refusal('0.0.0.0')).toMatch(/unspecified/);
  });
});

describe('allow entries saved when allow narrowed the policy', () => {
  it('are named when they hold no loopback or link-local address, so that start-up can warn', () => {
    expect(allowEntriesThatNarrowNothing(['10.0.0.0/8', '127.0.0.0/8', '::1/128', '192.168.0.0/16', '169.254.0.0/16', '0.0.0.0/0'])).toEqual(['10.0.0.0/8', '192.168.0.0/16']);
  });
});

describe('downloads are pinned to the checked address', () => {
  let server: http.Server;
  let port: number;
  const seenHosts: string[] = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seenHosts.push(req.headers.host ?? '');
      res.end('hello');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it('connects to the address the policy resolved, not to what the system resolver says', async () => {
    // "rebind.test" does not exist in DNS: only the policy's answer can make this connect.
    const policy = new PullPolicy({ allow: ['127.0.0.0/8'], deny: [] }, fakeDns({ 'rebind.test': ['127.0.0.1'] }));
    const dest = path.join(tempDataDir(), 'out');
    const result = await downloadToFile(`http://rebind.test:${port}/file.mp4`, dest, { policy, maxBytes: 100, maxRedirects: 0, connectTimeoutMs: 1000, idleTimeoutMs: 1000, ...UNHURRIED });
    expect(result.bytes).toBe(5);
    expect(fs.readFileSync(dest, 'utf8')).toBe('hello');
    expect(seenHosts.at(-1)).toBe(`rebind.test:${port}`);
  });

  it('refuses other schemes and credentials in the URL, permanently', async () => {
    const policy = new PullPolicy({ allow: ['127.0.0.0/8'], deny: [] });
    const opts = { policy, maxBytes: 100, maxRedirects: 0, connectTimeoutMs: 1000, idleTimeoutMs: 1000, ...UNHURRIED };
    for (const url of ['ftp://127.0.0.1/x.mp4', 'file:///etc/passwd', `http://user:pw@127.0.0.1:${port}/x.mp4`]) {
      const err = await downloadToFile(url, path.join(tempDataDir(), 'x'), opts).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DownloadError);
      expect((err as DownloadError).permanent).toBe(true);
    }
  });

  it('a refused connection is transient (worth a retry)', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const p = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const err = await downloadToFile(`http://127.0.0.1:${p}/x.mp4`, path.join(tempDataDir(), 'x'), {
      policy: new PullPolicy({ allow: ['127.0.0.0/8'], deny: [] }),
      maxBytes: 100,
      maxRedirects: 0,
      connectTimeoutMs: 1000,
      idleTimeoutMs: 1000,
      ...UNHURRIED,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DownloadError);
    expect((err as DownloadError).permanent).toBe(false);
  });
});

describe('a source that never stops, or barely sends (issue 12, item 6)', () => {
  let server: http.Server;
  let port: number;
  const timers = new Set<NodeJS.Timeout>();
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4' });
      const every = req.url === '/trickle.mp4' ? 300 : 20;
      const chunk = req.url === '/trickle.mp4' ? Buffer.from('x') : Buffer.alloc(req.url === '/flood.mp4' ? 4 * 1024 * 1024 : 64 * 1024);
      const t = setInterval(() => res.write(chunk), every);
      timers.add(t);
      res.on('close', () => (clearInterval(t), timers.delete(t)));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    for (const t of timers) clearInterval(t);
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  const base = () => ({ policy: new PullPolicy({ allow: ['127.0.0.0/8'], deny: [] }), maxBytes: 1024 ** 3, maxRedirects: 0, connectTimeoutMs: 1000, idleTimeoutMs: 5000 });

  it('gives up on a trickle slower than the minimum rate, as a failure worth a retry, and deletes nothing it was not given', async () => {
    const dest = path.join(tempDataDir(), 'trickle');
    const started = Date.now();
    const err = await downloadToFile(`http://127.0.0.1:${port}/trickle.mp4`, dest, { ...base(), deadlineMs: 60_000, minBytesPerSecond: 1000, minRateWindowMs: 1000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DownloadError);
    expect((err as Error).message).toMatch(/^the source sent .* in 1 s, slower than the minimum of .*\/s$/);
    expect((err as DownloadError).permanent).toBe(false);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('gives up on an endless body at the deadline', async () => {
    const err = await downloadToFile(`http://127.0.0.1:${port}/endless.mp4`, path.join(tempDataDir(), 'endless'), { ...base(), deadlineMs: 1000, minBytesPerSecond: 0, minRateWindowMs: 60_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DownloadError);
    expect((err as Error).message).toBe('the download took longer than 1 s');
  });

  it('checks the free space again every 64 MiB written, and stops when it is short', async () => {
    let checks = 0;
    const err = await downloadToFile(`http://127.0.0.1:${port}/flood.mp4`, path.join(tempDataDir(), 'flood'), {
      ...base(),
      ...UNHURRIED,
      checkRoom: async () => {
        checks++;
        if (checks === 2) throw new Error('no room left');
      },
    }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/no room left/);
    expect(checks).toBe(2);
  });
});

describe('ingest options', () => {
  it('fills defaults: 2 GB flash, 6 GB silverlight, 24 h expiry, 6 h credentials, 5 redirects, 2 downloads at once', () => {
    const o = resolveIngestOptions();
    expect(o.maxUploadBytes).toEqual({ flash: 2 * 1024 ** 3, silverlight: 6 * 1024 ** 3 });
    expect(o.uploadExpiryMs).toBe(24 * 3600_000);
    expect(o.credentialTtlMs).toBe(6 * 3600_000);
    expect(o.pull).toMatchObject({ maxRedirects: 5, concurrency: 2, maxBytes: 6 * 1024 ** 3, connectTimeoutMs: 10_000, idleTimeoutMs: 30_000 });
  });

  it('names the bad option', () => {
    expect(() => resolveIngestOptions({ maxUploadBytes: { flash: 0 } })).toThrow(/ingest\.maxUploadBytes\.flash/);
    expect(() => resolveIngestOptions({ pull: { deny: ['10.0.0.0'] } })).toThrow(/ingest\.pull\.deny: "10\.0\.0\.0" is not a CIDR/);
    expect(() => resolveIngestOptions({ pull: { retry: { maxRetries: -1 } } })).toThrow(/ingest\.pull\.retry/);
    expect(() => resolveIngestOptions({ pull: { maxRedirects: 50 } })).toThrow(/ingest\.pull\.maxRedirects/);
    expect(() => resolveIngestOptions({ appReservationShare: 0 })).toThrow(/ingest\.appReservationShare must be a number above 0 and at most 1/);
    expect(() => resolveIngestOptions({ addressReservationShare: 1.5 })).toThrow(/ingest\.addressReservationShare/);
    expect(() => resolveIngestOptions({ reservationIdleMs: 0 })).toThrow(/ingest\.reservationIdleMs/);
  });
});

describe('upload credentials', () => {
  /** The 'uploads' ring of an embedded database in `dir`, as the server opens it. */
  const ringIn = async (dir: string) => {
    const stores = await openSqlJsStores({ dir });
    const ring = await KeyRing.open({ store: stores.signingKeys, purpose: 'uploads', events: new VopEventBus(), log: () => {}, firstKey: () => UploadCredentials.legacyKey(dir) });
    return { ring, close: async () => (ring.close(), await stores.close()) };
  };

  it('verify what they signed, refuse tampering and expiry; the key is kept and reused', async () => {
    const dir = tempDataDir();
    const first = await ringIn(dir);
    const creds = new UploadCredentials(first.ring);
    // A minute ahead: the checks below take their time under load; expiry is checked at a given instant.
    const grant = { videoId: 'v', appId: 'a', expiresAt: Date.now() + 60_000, keepSource: true, maxBytes: 10, uploadType: 'flash' as const, secretTag: creds.secretTag('s3cret') };
    const c = creds.sign(grant);
    const keyId = first.ring.signing().id;
    expect(await creds.verify(c)).toEqual({ grant: { ...grant, keyId } });
    await first.close();
    const again = await ringIn(dir);
    expect(await new UploadCredentials(again.ring).verify(c)).toEqual({ grant: { ...grant, keyId } });
    await again.close();
    const [payload, mac] = c.split('.') as [string, string];
    const changed = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), m: 10 ** 12 })).toString('base64url');
    expect(await creds.verify(`${changed}.${mac}`)).toEqual({ refused: 'forged' });
    expect(await creds.verify('nonsense')).toEqual({ refused: 'malformed' });
    expect(await creds.verify(c, grant.expiresAt + 1)).toEqual({ refused: 'expired' });
    const other = await ringIn(tempDataDir());
    expect(await new UploadCredentials(other.ring).verify(c)).toEqual({ refused: 'forged' });
    await other.close();
    // Issued under one secret: it says so of that secret only, and reveals nothing of it.
    const verified = (await creds.verify(c)) as { grant: UploadGrant };
    expect(creds.issuedUnder(verified.grant, 's3cret')).toBe(true);
    expect(creds.issuedUnder(verified.grant, 'rotated')).toBe(false);
    expect(Buffer.from(payload, 'base64url').toString()).not.toContain('s3cret');
  });

  it('take the key kept in upload-credential.key before as their first, so open pages keep working', async () => {
    const dir = tempDataDir();
    const secret = crypto.randomBytes(32).toString('hex');
    fs.writeFileSync(path.join(dir, 'upload-credential.key'), `${secret}\n`, { mode: 0o600 });
    // A credential as the version before signed it: no key id in its payload.
    const payload = Buffer.from(JSON.stringify({ v: 'v', a: 'a', e: Date.now() + 60_000, k: false, m: 10, t: 'flash', s: 'tag' })).toString('base64url');
    const old = `${payload}.${crypto.createHmac('sha256', Buffer.from(secret, 'hex')).update(`vop-upload-v1.${payload}`).digest('base64url')}`;
    const r = await ringIn(dir);
    try {
      expect(r.ring.signing().id).toBe(LEGACY_KEY_ID);
      expect(await new UploadCredentials(r.ring).verify(old)).toMatchObject({ grant: { videoId: 'v', keyId: LEGACY_KEY_ID } });
      // Rotated with the old key revoked: refused.
      await r.ring.rotate(Date.now());
      expect(await new UploadCredentials(r.ring).verify(old)).toEqual({ refused: 'forged' });
    } finally {
      await r.close();
    }
  });
});

describe('job queue: permanent failures', () => {
  it('a handler that throws PermanentJobError gives up at once, without using its retries', async () => {
    const stores = await openSqlJsStores({ dir: tempDataDir() });
    const queue = new JobQueue<string>(stores.jobs, new VopEventBus(), () => undefined);
    const attempts: string[] = [];
    const gaveUp: string[] = [];
    for (const [type, err] of [['never', new PermanentJobError('404')], ['later', new Error('503')]] as const) {
      queue.register(type, {
        concurrency: 1,
        retry: { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 1, jitter: false },
        async handle() {
          attempts.push(type);
          throw err;
        },
        async onGiveUp(_job, reason) {
          gaveUp.push(`${type}: ${reason}`);
        },
      });
      await queue.enqueue(type, {});
    }
    await queue.start();
    await queue.idle();
    await queue.stop();
    await stores.close();
    expect(attempts.filter((t) => t === 'never')).toHaveLength(1);
    expect(attempts.filter((t) => t === 'later')).toHaveLength(4);
    expect(gaveUp.sort()).toEqual(['later: 503', 'never: 404']);
  });
});
