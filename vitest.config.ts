import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { tierOf } from './test/tiers.js';

/**
 * vitest's own order (a file that failed last time first, then the longest by the last run's
 * times, or the largest where there are none, as in a fresh clone), with the quick tier's files
 * after the full tier's. The last full files a fresh clone starts are small ones that play video
 * in real time (the HLS players, about 35 s each): the quick files, short and many, run in the
 * third worker beside them. Mixed in by size, they were done before the players started, and the
 * run ended with a core idle for half a minute (394 s against 371 s).
 */
class FullTierFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return [...sorted.filter((f) => tierOf(f.moduleId) === 'full'), ...sorted.filter((f) => tierOf(f.moduleId) === 'quick')];
  }
}

export default defineConfig({
  test: {
    // Both tiers (test/tiers.ts says which file is where, and why) in one project, so that their
    // files share three workers: the quick tier as a project of its own started three more at the
    // run's end, each loading the server's modules again. `npm run test:quick` runs the quick
    // tier alone (vitest.quick.config.ts).
    include: ['test/**/*.test.ts'],
    // Files share their worker's loaded modules instead of loading the server anew each (two
    // thirds of the quick tier's time; in the full tier a worker process and the server's module
    // graph a file): a test leaves no global state behind.
    isolate: false,
    // A spy a test leaves on a shared module (a failed assertion before its mockRestore) would
    // reach the worker's later files: every test's spies are restored after it.
    restoreMocks: true,
    // Servers, ffmpeg and Chromium are real: give them room.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // A page polled for what it shows (expect.poll) may take more than vitest's default second
    // to render on two loaded cores (a console page did, in a CI-like run).
    expect: { poll: { timeout: 10_000 } },
    sequence: { sequencer: FullTierFirst },
    // The run's temporary folder, clip cache and service broker (PostgreSQL, Ceph and Chromium
    // started once per run, when a file first asks for one).
    globalSetup: ['./test/globalSetup.ts'],
    // Three files at once on two cores: much of a file's time is spent waiting (a lease to lapse,
    // a browser to play a video to its end, a server to start), which a third file fills; the
    // whole run took 647 s against 853 s with two (one run each, the same machine, other work beside).
    pool: 'forks',
    maxWorkers: 3,
    // The closing "N passed, N failed" line is what CI reads; vitest's own summary is for people.
    // Just before that line, the slowest files are listed and each over its tier's budget named.
    reporters: ['default', './test/reporters/fileBudgets.ts', './test/reporters/summary.ts'],
  },
});
