/**
 * A start that fails part-way lets go of what it had opened (issue 11 leftover). The desktop shell
 * builds the server in its own process and may build it again after a failure (the user fixes the
 * folder and retries): before, the data directory's lock, the database and the sweeps opened
 * before the failure stayed held, and the retry was refused as "already open in this process".
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createServer } from '../../server/app.js';
import { ADMIN_TOKEN, tempDataDir } from '../helpers/server.js';

describe('a start that fails after the database is open', () => {
  it('closes what it opened, so that the same process can start again on the same folder', async () => {
    const dataDir = tempDataDir();
    // Uploads' folder blocked by a file: intake's start fails, after the database and the queue are open.
    fs.mkdirSync(path.join(dataDir, 'media'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'media', 'incoming'), 'not a folder');
    const logs: string[] = [];
    await expect(createServer({ dataDir, adminToken: ADMIN_TOKEN, log: (l) => logs.push(l) })).rejects.toThrow(/incoming/);
    expect(fs.existsSync(path.join(dataDir, 'vop.lock'))).toBe(false);

    fs.rmSync(path.join(dataDir, 'media', 'incoming'));
    const vop = await createServer({ dataDir, adminToken: ADMIN_TOKEN, log: (l) => logs.push(l) });
    try {
      const { port } = await vop.listen(0, '127.0.0.1');
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    } finally {
      await vop.close();
    }
  });
});
