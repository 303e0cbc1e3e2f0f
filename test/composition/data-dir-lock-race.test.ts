/**
 * Starters racing over one stale data-directory lock (issue 12, "the data-dir lock take-over
 * race"): a supervisor restarts a killed server at once, and a second start (a user, another
 * supervisor) may come at the same moment. Of the starters that find the same stale lock, exactly
 * one may win: before, each removed "the stale lock", the later one removing the lock the first
 * had just written, and two servers ran on one database. Real processes, started together.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildEntry, killStrayProcesses, spawnTs, tempDataDir } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';

afterEach(() => killStrayProcesses());

/** The starter, built once (buildEntry): 24 starts through tsx cost some 5 CPU-seconds. */
let contender: Awaited<ReturnType<typeof buildEntry>>;
beforeAll(async () => {
  contender = await buildEntry('lockContender');
});
afterAll(() => contender?.remove());

/** A pid that no longer runs: a process started, ended and reaped. */
function deadPid(): number {
  const r = spawnSync('sh', ['-c', 'echo $$']);
  return Number(String(r.stdout).trim());
}

const STARTERS = 8;
const ROUNDS = 3;

describe.runIf(process.platform === 'linux')('starters racing over a stale data-directory lock', () => {
  it('let exactly one of them win, round after round', { timeout: 120_000 }, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const root = tempDataDir('vop-lock-race-');
      const dir = path.join(root, 'data');
      fs.mkdirSync(dir);
      // The lock a server killed with -9 left behind.
      fs.writeFileSync(path.join(dir, 'vop.lock'), JSON.stringify({ pid: deadPid(), host: os.hostname(), since: new Date().toISOString() }));
      const starters = Array.from({ length: STARTERS }, () => spawnTs(contender.file, [dir, '40', '1500']));
      // Every starter loaded and waiting before the signal.
      await waitUntil('every starter loaded', () => {
        const ready = fs.readdirSync(root).filter((f) => f.startsWith('ready-')).length;
        return ready === STARTERS ? true : notYet(`${ready} of ${STARTERS}`);
      }, { timeoutMs: 30_000, pollMs: 20 });
      fs.writeFileSync(path.join(root, 'go'), '');
      await Promise.all(starters.map((s) => s.exited));
      const outcomes = starters.map((s) => s.output().trim());
      const won = outcomes.filter((o) => o === 'WON');
      expect(won, `round ${round}: ${outcomes.join(' | ')}`).toHaveLength(1);
      // The others were told why.
      for (const o of outcomes.filter((x) => x !== 'WON')) expect(o).toMatch(/^LOST The data directory .* is in use by another vop process|^LOST Could not lock/);
    }
  });
});
