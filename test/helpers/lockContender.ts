/**
 * One starter in test/composition/data-dir-lock-race.test.ts: says it is loaded (a file `ready-<pid>` beside
 * the data directory), waits for the round's start signal (a file named `go` there), takes the data directory's lock, prints WON or LOST, and
 * holds a won lock for a while, so that the others try while it is held.
 *
 * Test only: every fs.rmSync waits `rmDelayMs` first. That widens the window between judging a
 * lock stale and removing it, where the race lived, so that a round shows it every time rather
 * than once in many thousands of starts. The lock module calls fs.rmSync through the same object.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DataDirLock } from '../../server/storage/dataDirLock.js';

const [dir, rmDelayMs, holdMs] = process.argv.slice(2) as [string, string, string];
const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const rmSync = fs.rmSync;
fs.rmSync = ((...args: Parameters<typeof fs.rmSync>) => {
  pause(Number(rmDelayMs));
  return rmSync(...args);
}) as typeof fs.rmSync;

const go = path.join(path.dirname(dir), 'go');
// Loaded: the test gives the signal once every starter has said so.
fs.writeFileSync(path.join(path.dirname(dir), `ready-${process.pid}`), '');
for (let i = 0; i < 5000 && !fs.existsSync(go); i++) pause(2);
try {
  DataDirLock.acquire(dir);
  process.stdout.write('WON\n');
  pause(Number(holdMs));
} catch (err) {
  process.stdout.write(`LOST ${(err as Error).message}\n`);
}
