/**
 * One temporary folder per test run, removed when the run ends. The tests' data dirs, generated
 * clips and the files of the servers and browsers they start all go under os.tmpdir(), which
 * reads TMPDIR, as the child processes do: a run used to leave some 100 MB behind in /tmp.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export default function setup(): () => void {
  const before = process.env.TMPDIR;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'vop-test-run-'));
  // As open as /tmp itself (sticky): one test runs a script as another user.
  fs.chmodSync(root, 0o1777);
  process.env.TMPDIR = root;
  return () => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    fs.rmSync(root, { recursive: true, force: true });
  };
}
