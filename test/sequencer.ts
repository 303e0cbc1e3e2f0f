/**
 * The order test files start in: vitest's own (full tier before quick; by the durations cached from
 * the last run, else largest file first), except that test/tiers.ts's START_FIRST files go first,
 * longest first. A fresh clone has no cached durations, and size says little about how long a file
 * takes; a long file started last leaves the other workers idle while it ends the run.
 */
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { FULL_TIER, START_FIRST } from './tiers.js';

const unknown = START_FIRST.filter((name) => !(name in FULL_TIER));
if (unknown.length) throw new Error(`test/tiers.ts's START_FIRST names ${unknown.join(', ')}, which are not full-tier files: remove or rename them there.`);

/** The file's name as test/tiers.ts writes it: under test/, without `.test.ts`. */
function tierName(spec: TestSpecification): string {
  return path.relative(path.join(spec.project.config.root, 'test'), spec.moduleId).split(path.sep).join('/').replace(/\.test\.ts$/, '');
}

export class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const i = START_FIRST.indexOf(tierName(spec));
      return i < 0 ? START_FIRST.length : i;
    };
    // Array.prototype.sort is stable: the rest keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
