/**
 * The failure limits stay bounded whatever callers send (issue 12, item 5): expired windows are
 * swept, the number of keys is capped, and an AppId that names no application adds no key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressLimitKey } from '../../server/core/addressLimitKey.js';
import { failureKey } from '../../server/auth/authService.js';
import { MemoryWindowCounters } from '../../server/storage/memory/memoryWindowCounters.js';
import { getFrom } from '../helpers/client.js';
import { startServer, type TestServer } from '../helpers/server.js';

describe('the embedded mode\'s counters (MemoryWindowCounters)', () => {
  it('keeps at most maxKeys windows, dropping the oldest', async () => {
    const l = new MemoryWindowCounters(3);
    for (const k of ['a', 'b', 'c', 'd']) await l.hit(k, 60_000, 1000);
    expect(l.size).toBe(3);
    await l.hit('b', 60_000, 1000);
    await l.hit('b', 60_000, 1000);
    // A limit of 2 failures: 'b' is past it.
    expect(await l.count('b', 60_000, 1000)).toBeGreaterThanOrEqual(2);
    expect(await l.count('a', 60_000, 1000)).toBe(0); // the oldest went first
  });

  it('sweeps expired windows once per window length, without being asked about them', async () => {
    const l = new MemoryWindowCounters();
    for (let i = 0; i < 500; i++) await l.hit(`10.0.${i >> 8}.${i & 255}`, 1000, 0);
    expect(l.size).toBe(500);
    await l.hit('10.9.9.9', 1000, 1001);
    expect(l.size).toBe(1);
  });

  it('refuses a maxKeys that is not a whole number above 0', () => {
    expect(() => new MemoryWindowCounters(0)).toThrow(/maxKeys/);
  });
});

/** Keys the failure limits of `t`'s embedded counters hold now (addresses, AppIds): bounded whatever callers send. */
const limiterKeys = (t: TestServer) => {
  const counters = t.vop.stores.counters as MemoryWindowCounters;
  return { addresses: counters.keysStartingWith(failureKey('address', '')), apps: counters.keysStartingWith(failureKey('app', '')) };
};

describe('the key a client is counted under', () => {
  it('is an IPv4 address itself, and an IPv6 address its /64 (one subscriber holds a whole /64)', () => {
    expect(addressLimitKey('192.0.2.7')).toBe('192.0.2.7');
    expect(addressLimitKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(addressLimitKey('2001:db8:1:2::a')).toBe('2001:db8:1:2::/64');
    expect(addressLimitKey('[2001:db8:1:2:ffff:ffff:ffff:ffff]')).toBe('2001:db8:1:2::/64');
    expect(addressLimitKey('2001:db8:1:3::a')).toBe('2001:db8:1:3::/64');
    expect(addressLimitKey('::1')).toBe('::/64');
    expect(addressLimitKey('unknown')).toBe('unknown');
  });
});

describe('through the spec API', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startServer();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('adds no key for 100 failing calls with unique 60 KB AppIds, and keeps one for the address', async () => {
    const big = 'x'.repeat(60_000);
    for (let i = 0; i < 100; i++) {
      const body = new URLSearchParams({ AppId: `${big}${i}`, Timestamp: String(Math.floor(Date.now() / 1000)), Token: '0'.repeat(32), VideoTitle: 't', SourceFileGetType: '1' });
      const res = await fetch(`${t.baseUrl}/Api/Video/Post`, { method: 'POST', body });
      const code = ((await res.json()) as { AuthMsg: { ResultCode: string } }).AuthMsg.ResultCode;
      // 101 (no such app) until the address is past its limit, then 106.
      expect(['101', '106']).toContain(code);
    }
    // 100 × 60 KB = 6 MB of AppIds went through; none of them is kept.
    expect(limiterKeys(t)).toEqual({ addresses: 1, apps: 0 });
  });

  it('keys the per-app limit on an AppId that exists', async () => {
    const c = await t.newApp();
    // From another address than the one the test above put past its limit.
    const res = await getFrom('127.0.0.5', `${t.baseUrl}/Api/Video/GetList?${c.query({}, c.auth({ Token: '0'.repeat(32) }))}`);
    expect(res.body.AuthMsg.ResultCode).toBe('104');
    expect(limiterKeys(t).apps).toBe(1);
  });
});

describe('per-address limits over IPv6', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startServer();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('counts the failures of every address of one IPv6 /64 together, and another /64 apart', async () => {
    const c = await t.newApp();
    const bad = { appId: c.appId, timestamp: String(Math.floor(Date.now() / 1000)), token: '0'.repeat(32) };
    const auth = t.vop.services.auth;
    // A different address of the same /64 for each try, as a client holding the /64 would do.
    const codes: string[] = [];
    for (let i = 1; i <= 40; i++) {
      codes.push(await auth.authenticate(bad, `2001:db8:1:2::${i.toString(16)}`).then(() => 'ok', (e: { code: string }) => e.code));
    }
    expect(codes.at(-1)).toBe('106');
    expect(await auth.authenticate(bad, '2001:db8:1:2:abcd::1').catch((e: { code: string }) => e.code)).toBe('106');
    // Another /64 is another client: its first failure is an ordinary one.
    expect(await auth.authenticate(bad, '2001:db8:1:3::1').catch((e: { code: string }) => e.code)).not.toBe('106');
  });
});
