/**
 * `npm run bench [-- <section>...]`: prints figures, not pass/fail of a test suite. Each section is
 * a function in its own file; with no names, every section runs in turn.
 */
import { apiSection } from './apiBench.js';
import { backupSection } from './backupBench.js';
import { clusterSection } from './clusterBench.js';
import { consoleSection } from './consoleBench.js';
import { deliverySection } from './deliveryBench.js';
import { metricsSection } from './metricsBench.js';
import { playableSection } from './playableBench.js';
import { transcodeSection } from './transcodeBench.js';
import { uploadSection } from './uploadBench.js';
import { buildServer } from '../scripts/build-server.mjs';
import { verdict, type BenchSection, type Target } from './lib.js';

/** The sections, in the order a full run takes them. */
const SECTIONS: BenchSection[] = [apiSection, metricsSection, uploadSection, transcodeSection, playableSection, deliverySection, clusterSection, consoleSection, backupSection];

async function main(): Promise<void> {
  const names = process.argv.slice(2);
  if (names.includes('--help') || names.includes('-h')) {
    console.log('Usage: npm run bench [-- <section>...]\nSections:');
    for (const s of SECTIONS) console.log(`  ${s.name.padEnd(10)} ${s.about}`);
    return;
  }
  const unknown = names.filter((n) => !SECTIONS.some((s) => s.name === n));
  if (unknown.length > 0) {
    console.error(`No bench section ${unknown.join(', ')}. Sections: ${SECTIONS.map((s) => s.name).join(', ')}.`);
    process.exitCode = 2;
    return;
  }
  const chosen = names.length > 0 ? SECTIONS.filter((s) => names.includes(s.name)) : SECTIONS;
  await buildServer(); // vop runs as `npm start` runs it (bench/lib.ts VOP_SERVER)
  const results: Array<{ section: string; target: Target }> = [];
  for (const section of chosen) {
    const started = performance.now();
    for (const target of await section.run()) results.push({ section: section.name, target });
    console.log(`(${section.name} took ${Math.round((performance.now() - started) / 1000)} s)\n`);
  }
  const met = results.filter((r) => r.target.met).length;
  console.log(`targets: ${met} of ${results.length} met`);
  for (const { section, target } of results) console.log(`  ${verdict(target.met)}  ${section}: ${target.what} ${target.text}`);
}

main().catch((err) => {
  console.error(`bench failed: ${(err as Error).stack ?? String(err)}`);
  process.exitCode = 1;
});
