/** A backup's share of the serving thread (server/backup/pacer.ts). */
import { describe, expect, it } from 'vitest';
import { Pacer } from '../../server/backup/pacer.js';

/** Busy work of about `ms` milliseconds. */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('Pacer', () => {
  it('rests three times as long as the work it timed, at a share of a quarter', async () => {
    const pacer = new Pacer(0.25);
    // Timed inside the work: the pacer's own span holds it, so the rest owed is at least three
    // times this whatever the machine does between the calls (timed around the call, a loaded
    // machine's pause outside the pacer's span made the expectation larger than the rest owed).
    let worked = 0;
    pacer.time(() => {
      const t0 = performance.now();
      spin(20);
      worked = performance.now() - t0;
    });
    const t1 = performance.now();
    await pacer.rest();
    // Timers never fire early (a millisecond of rounding aside); late is the machine's business.
    expect(performance.now() - t1).toBeGreaterThanOrEqual(3 * worked - 1);
    // What was owed is paid: the next rest, with no work since, is at once.
    const t2 = performance.now();
    await pacer.rest();
    expect(performance.now() - t2).toBeLessThan(worked);
  });

  it('does not rest without a share, and refuses a share out of range', async () => {
    const pacer = new Pacer();
    pacer.time(() => spin(5));
    const t = performance.now();
    await pacer.rest();
    expect(performance.now() - t).toBeLessThan(2);
    expect(() => new Pacer(0)).toThrow(RangeError);
    expect(() => new Pacer(1.5)).toThrow(RangeError);
  });
});
