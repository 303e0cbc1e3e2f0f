/**
 * How many view reports one address may send (server/services/viewCounter.ts): 600 in the minute
 * that starts at its first report, on a clock the test moves. The limit is checked before anything
 * is read, so a report for a malformed id (404) still counts and no store is reached.
 */
import { describe, expect, it } from 'vitest';
import { BEACONS_PER_MINUTE, ViewCounter, type ViewCounterDeps } from '../../server/services/viewCounter.js';
import { ApiError } from '../../server/core/errors.js';

function counter(clock: { t: number }): ViewCounter {
  const unreachable = new Proxy({}, { get: () => { throw new Error('a refused or malformed report reached a store'); } });
  const deps = { store: unreachable, videos: unreachable, apps: unreachable, tokens: unreachable, events: unreachable, log: () => {}, now: () => clock.t } as unknown as ViewCounterDeps;
  return new ViewCounter(deps);
}

async function codeOf(c: ViewCounter, address: string): Promise<string> {
  try {
    await c.report('not-a-video', { session: 'abcdefgh', watched: 1 }, { address, userAgent: 'test' }, undefined);
    return 'none';
  } catch (err) {
    return err instanceof ApiError ? err.def.code : String(err);
  }
}

describe('view reports from one address', () => {
  it('are refused past 600 in the minute from the first, even across the clock minute', async () => {
    // The first report 100 ms before a clock minute ends: a clock-aligned window would start again.
    const clock = { t: 60_000 * 1000 - 100 };
    const c = counter(clock);
    const codes: string[] = [];
    for (let i = 0; i < BEACONS_PER_MINUTE + 1; i++) {
      codes.push(await codeOf(c, '192.0.2.1'));
      clock.t += 1;
    }
    expect(codes.slice(0, BEACONS_PER_MINUTE).every((code) => code === '404')).toBe(true);
    expect(codes[BEACONS_PER_MINUTE]).toBe('421');
    // Another address has its own minute.
    expect(await codeOf(c, '192.0.2.2')).toBe('404');
    // A minute after the first report, the address may report again.
    clock.t = 60_000 * 1000 - 100 + 60_000;
    expect(await codeOf(c, '192.0.2.1')).toBe('404');
    await c.close();
  });
});
