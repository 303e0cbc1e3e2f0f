/**
 * What `npm test` prints after a run about its files' times (test/reporters/fileBudgets.ts,
 * docs/testing.md): the slowest files, slowest first, and each file over its tier's budget named
 * once more. Told by how often each file's name appears, not by the sentences around it.
 */
import { describe, expect, it, vi } from 'vitest';
import FileBudgetsReporter from '../reporters/fileBudgets.js';
import { FULL_FILE_BUDGET_SECONDS, QUICK_FILE_BUDGET_SECONDS } from '../tiers.js';

/** A finished test file as the reporter is handed it: its tier, its name, its time. */
const file = (tier: 'quick' | 'full', name: string, seconds: number) => ({ project: { name: tier }, relativeModuleId: name, diagnostic: () => ({ duration: seconds * 1000 }) });

function printed(files: ReturnType<typeof file>[]): string {
  const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  new FileBudgetsReporter().onTestRunEnd(files as never);
  const out = write.mock.calls.map((c) => String(c[0])).join('');
  write.mockRestore();
  return out;
}

const times = (out: string, name: string) => out.split(name).length - 1;

describe("the run's file times", () => {
  it('lists the eight slowest, slowest first, and names again each file over its tier’s budget', () => {
    const files = [
      file('quick', 'q-slow.test.ts', QUICK_FILE_BUDGET_SECONDS + 1),
      file('full', 'f-slow.test.ts', FULL_FILE_BUDGET_SECONDS + 1),
      // Under the full tier's budget, though over the quick one's: not named again.
      file('full', 'f-ok.test.ts', FULL_FILE_BUDGET_SECONDS - 1),
      ...Array.from({ length: 8 }, (_, i) => file('quick', `q-${i}.test.ts`, i / 10)),
    ];
    const out = printed(files);
    expect(times(out, 'f-slow.test.ts')).toBe(2);
    expect(times(out, 'q-slow.test.ts')).toBe(2);
    expect(times(out, 'f-ok.test.ts')).toBe(1);
    const listed = files.map((f) => f.relativeModuleId).filter((n) => times(out, n) > 0);
    expect(listed).toHaveLength(8);
    // Slowest first: f-slow (61 s), f-ok (59 s), q-slow (11 s), then the quick ones from 0.7 s down.
    const order = listed.sort((a, b) => out.indexOf(a) - out.indexOf(b));
    expect(order).toEqual(['f-slow.test.ts', 'f-ok.test.ts', 'q-slow.test.ts', 'q-7.test.ts', 'q-6.test.ts', 'q-5.test.ts', 'q-4.test.ts', 'q-3.test.ts']);
  });

  it('prints no list for a run of one file', () => {
    expect(printed([file('quick', 'alone.test.ts', 1)])).toBe('');
  });
});
