import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, spawnTs, tempDataDir } from '../helpers/server.js';
import { waitUntil } from '../helpers/wait.js';

describe('a signal while the server starts', () => {
  it('shuts down cleanly (exit 0, lock released) when SIGTERM arrives before it says it is listening', async () => {
    const dir = tempDataDir('vop-early-signal-');
    const { child, exited } = spawnTs('server/main.ts', ['--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--admin-token', ADMIN_TOKEN]);
    // The lock is taken inside createServer, after the signal handlers are in place and before
    // the server listens: the window in which a signal used to kill it by default.
    const lock = path.join(dir, 'vop.lock');
    await waitUntil('the lock file', () => fs.existsSync(lock) || undefined, { timeoutMs: 30_000, pollMs: 5 });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(fs.existsSync(lock)).toBe(false);
  }, 60_000);
});
