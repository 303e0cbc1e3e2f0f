/**
 * The data-dir lock dies with its owner (issue 10, item 3): a zombie, a pid reused by another
 * process, and a lock from another boot are stale; a live owner holds. npm start under a
 * supervisor (kill -9 of the group, restart at once) is tested in supervisor.test.ts.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readProcStat } from '../../server/core/procStat.js';
import { DataDirLock, isLockOwnerAlive, processIdentity } from '../../server/storage/dataDirLock.js';
import { tempDataDir } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';

const hasProc = fs.existsSync('/proc/self/stat');
const started: ChildProcess[] = [];

afterEach(() => {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A process that sleeps until killed. */
function sleeper(): ChildProcess & { pid: number } {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  started.push(child);
  return child as ChildProcess & { pid: number };
}

function lockNaming(owner: object): string {
  const dir = tempDataDir('vop-lock-unit-');
  fs.writeFileSync(path.join(dir, 'vop.lock'), JSON.stringify({ ...owner, since: new Date().toISOString() }));
  return dir;
}

describe.skipIf(!hasProc)('who holds the lock, judged from /proc', () => {
  it('reads the state and start time after the last ")", whatever the command name holds', () => {
    const proc = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-fake-proc-'));
    fs.mkdirSync(path.join(proc, '4242'));
    // Fields 3 to 52; field 22, the start time, is 777.
    const rest = ['S', ...Array.from({ length: 49 }, (_, i) => String(i + 4))];
    rest[19] = '777';
    fs.writeFileSync(path.join(proc, '4242', 'stat'), `4242 (a) Z 1 (b c) ${rest.join(' ')}\n`);
    expect(readProcStat(4242, proc)).toEqual({ state: 'S', startTime: '777' });
    expect(readProcStat(4243, proc)).toBeUndefined();

    const self = readProcStat(process.pid)!;
    expect(self.state).toMatch(/^[RS]$/);
    expect(self.startTime).toMatch(/^\d+$/);
    expect(processIdentity(process.pid)).toMatchObject({ pid: process.pid, host: os.hostname(), startTime: self.startTime });
    expect(processIdentity(process.pid).bootId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('counts a zombie as dead, though kill(pid, 0) still reaches it, and takes its lock over', async () => {
    // sh starts a short sleep in the background and becomes (exec) a long one, which never waits
    // for the short one: once that ends it stays a zombie, as a killed server does under an init
    // that never reaps. (Node reaps its own children, so the zombie must be a grandchild.)
    const parent = spawn('sh', ['-c', 'sleep 0.2 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    started.push(parent);
    let out = '';
    parent.stdout!.on('data', (d) => (out += d));
    await waitUntil('the child to print its pid', () => (/^\d+\n/.test(out) ? true : notYet(out)), { timeoutMs: 5_000, pollMs: 10 });
    const pid = Number(out.trim());
    const alive = processIdentity(pid);
    expect(isLockOwnerAlive(alive)).toBe(true);

    await waitUntil(`${pid} to be a zombie`, () => (readProcStat(pid)?.state === 'Z' ? true : notYet(readProcStat(pid)?.state)), { timeoutMs: 5_000, pollMs: 10 });
    expect(() => process.kill(pid, 0)).not.toThrow(); // what the old check relied on
    expect(isLockOwnerAlive(alive)).toBe(false);
    expect(isLockOwnerAlive({ pid, host: os.hostname() })).toBe(false); // a lock file of the old format

    const dir = lockNaming(alive);
    const lock = DataDirLock.acquire(dir);
    try {
      expect(JSON.parse(fs.readFileSync(path.join(dir, 'vop.lock'), 'utf8')).pid).toBe(process.pid);
    } finally {
      lock.release();
    }
    expect(fs.existsSync(path.join(dir, 'vop.lock'))).toBe(false);
  });

  it('counts a pid now held by another process (another start time, another boot) as dead, and the owner itself as alive', () => {
    const live = sleeper();
    const owner = processIdentity(live.pid);
    expect(owner.startTime).toMatch(/^\d+$/);
    expect(isLockOwnerAlive(owner)).toBe(true);
    expect(isLockOwnerAlive({ ...owner, startTime: String(Number(owner.startTime) - 1) })).toBe(false);
    expect(isLockOwnerAlive({ ...owner, bootId: '00000000-0000-0000-0000-000000000000' })).toBe(false);

    // The lock of a live owner holds; the same pid with another start time is taken over.
    const held = lockNaming(owner);
    expect(() => DataDirLock.acquire(held)).toThrow(`is in use by another vop process (pid ${live.pid})`);
    expect(JSON.parse(fs.readFileSync(path.join(held, 'vop.lock'), 'utf8'))).toMatchObject(owner);
    const reused = lockNaming({ ...owner, startTime: '1' });
    DataDirLock.acquire(reused).release();
  });

  it('counts a pid that no longer exists as dead', () => {
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    expect(readProcStat(gone)).toBeUndefined();
    expect(isLockOwnerAlive({ pid: gone, host: os.hostname() })).toBe(false);
  });
});

describe('who holds the lock, where there is no /proc (macOS, Windows)', () => {
  it('falls back on kill(pid, 0)', () => {
    const noProc = path.join(os.tmpdir(), 'vop-no-proc-here');
    const live = sleeper();
    expect(isLockOwnerAlive({ pid: live.pid, startTime: '1', bootId: 'another boot' }, noProc)).toBe(true);
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    expect(isLockOwnerAlive({ pid: gone }, noProc)).toBe(false);
  });
});
