/** A data directory other users can read or enter is warned about at start (issue 12, "Small"). */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { looseDataDir } from '../../server/composition/dataDir.js';
import { warningLine } from '../../server/core/logLines.js';
import { startServer, tempDataDir } from '../helpers/server.js';

describe('the data directory’s permissions', () => {
  it('warns at start when others can read or enter it, naming the mode and the fix', async () => {
    const dir = tempDataDir();
    fs.chmodSync(dir, 0o755);
    const t = await startServer({ dataDir: dir });
    try {
      // Said as a warning, naming the mode and the command that mends it.
      const loose = looseDataDir(dir);
      expect(loose).toContain('755');
      expect(loose).toContain('chmod 700');
      expect(t.logs).toContain(warningLine(loose!));
    } finally {
      await t.close();
    }
  });

  it('says nothing of one only its owner can use, as vop makes it', async () => {
    const dir = tempDataDir();
    fs.chmodSync(dir, 0o700);
    expect(looseDataDir(dir)).toBeUndefined();
    fs.chmodSync(dir, 0o750);
    expect(looseDataDir(dir)).toContain('750');
  });
});
