import { defineConfig } from 'vitest/config';
import { fullTierFiles } from './test/tiers.js';

const ALL_TESTS = 'test/**/*.test.ts';

export default defineConfig({
  test: {
    // Two tiers, one project each (test/tiers.ts says which file is where, and why):
    // `npm run test:quick` runs the quick one alone, `npm test` both.
    projects: [
      {
        test: {
          name: 'quick',
          include: [ALL_TESTS],
          exclude: fullTierFiles(),
          // Files share their worker's loaded modules instead of loading the server anew each
          // (two thirds of the tier's time): a quick test leaves no global state behind.
          isolate: false,
          // A spy a test leaves on a shared module (a failed assertion before its mockRestore)
          // would reach the worker's later files: every test's spies are restored after it.
          restoreMocks: true,
          // Read by test/helpers/sharedServices.ts: the quick tier is given no services.
          provide: { vopTier: 'quick' },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'full',
          include: fullTierFiles(),
          provide: { vopTier: 'full' },
          isolate: false,
          restoreMocks: true,
          // Servers, ffmpeg and Chromium are real: give them room.
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // A page polled for what it shows (expect.poll) may take more than vitest's default
          // second to render on two loaded cores (a console page did, in a CI-like run).
          expect: { poll: { timeout: 10_000 } },
        },
      },
    ],
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
