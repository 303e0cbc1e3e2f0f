/**
 * `npm start` on a port that is taken (issue 35, the first hour): a clear message naming
 * `--port`, exit code 1, and nothing made: no data folder, no admin token.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killStrayProcesses, spawnTs, tempDataDir } from './helpers/server.js';

afterAll(() => killStrayProcesses());

describe('a port in use', () => {
  it('stops the start with a hint of --port, and makes no data folder', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const dataDir = path.join(tempDataDir('vop-port-'), 'data');
      const { output, exited } = spawnTs('server/main.ts', ['--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir]);
      expect(await exited).toBe(1);
      expect(output()).toContain(`port ${port} on 127.0.0.1 is in use`);
      expect(output()).toMatch(/npm start -- --port \d+ \(or VOP_PORT\)/);
      expect(output()).not.toContain('EADDRINUSE');
      expect(fs.existsSync(dataDir)).toBe(false);
    } finally {
      holder.close();
    }
  }, 60_000);
});
