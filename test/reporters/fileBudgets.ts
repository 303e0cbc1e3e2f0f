import type { Reporter, TestModule } from 'vitest/node';
import { FULL_FILE_BUDGET_SECONDS, QUICK_FILE_BUDGET_SECONDS } from '../tiers.js';

/** How many of the slowest files are listed after a run. */
const LISTED = 8;

/**
 * Lists the run's slowest files, and names each one over its tier's budget (test/tiers.ts): a
 * quick file over 10 s belongs in the full tier, a full file over 60 s holds the whole run back
 * (three files run at once) and wants making cheaper or splitting. A name here is a hint, not a
 * failure: a loaded machine slows every file.
 */
export default class FileBudgetsReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const timed = testModules.map((mod) => ({ mod, seconds: mod.diagnostic().duration / 1000 })).sort((a, b) => b.seconds - a.seconds);
    if (timed.length > 1) {
      const lines = timed.slice(0, LISTED).map(({ mod, seconds }) => `  ${seconds.toFixed(1).padStart(6)} s  ${mod.relativeModuleId} (${mod.project.name})`);
      process.stdout.write(`\nThe slowest files:\n${lines.join('\n')}\n`);
    }
    for (const { mod, seconds } of timed) {
      if (mod.project.name === 'quick' && seconds > QUICK_FILE_BUDGET_SECONDS) {
        process.stdout.write(
          `${mod.relativeModuleId} took ${seconds.toFixed(1)} s, over the quick tier's ${QUICK_FILE_BUDGET_SECONDS} s a file: if it does so on a quiet machine, list it in test/tiers.ts (full tier).\n`,
        );
      } else if (mod.project.name === 'full' && seconds > FULL_FILE_BUDGET_SECONDS) {
        process.stdout.write(`${mod.relativeModuleId} took ${seconds.toFixed(1)} s, over the full tier's ${FULL_FILE_BUDGET_SECONDS} s a file: make it cheaper, or split it.\n`);
      }
    }
  }
}
