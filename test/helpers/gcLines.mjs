// Loaded with --import into a vop under test (test/ingest/upload-gc.test.ts): a line on stderr for each
// collection V8 makes, "vop-gc major" (mark-compact) or "vop-gc minor" (scavenge). Not V8's own
// --trace-gc: it prints through C's stdio, which holds lines back while stdout is a pipe, so they
// reached the test late or in another upload's window. Node writes to a pipe at once on Linux.
import { PerformanceObserver, constants } from 'node:perf_hooks';

const NAMES = { [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor' };

new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) process.stderr.write(`vop-gc ${NAMES[entry.detail?.kind] ?? 'other'}\n`);
}).observe({ entryTypes: ['gc'] });
