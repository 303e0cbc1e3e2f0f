import type { Reporter, TestModule } from 'vitest/node';
import { QUICK_FILE_BUDGET_SECONDS } from '../tiers.js';

/**
 * Names the quick-tier files that took longer than the budget (test/tiers.ts), so that a slow
 * file shows instead of quietly slowing the tier down for everyone. A name here is a hint, not a
 * failure: a loaded machine slows every file.
 */
export default class QuickBudgetReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    for (const mod of testModules) {
      if (mod.project.name !== 'quick') continue;
      const seconds = mod.diagnostic().duration / 1000;
      if (seconds > QUICK_FILE_BUDGET_SECONDS) {
        process.stdout.write(
          `${mod.relativeModuleId} took ${seconds.toFixed(1)} s, over the quick tier's ${QUICK_FILE_BUDGET_SECONDS} s a file: if it does so on a quiet machine, list it in test/tiers.ts (full tier).\n`,
        );
      }
    }
  }
}
