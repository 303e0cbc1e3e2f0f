import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Every temporary file of a run in one folder, removed at its end.
    globalSetup: ['./test/globalSetup.ts'],
    // Servers, ffmpeg and Chromium are real: give them room, and keep two cores from thrashing.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    // The closing "N passed, N failed" line is what CI reads; vitest's own summary is for people.
    reporters: ['default', './test/reporters/summary.ts'],
  },
});
