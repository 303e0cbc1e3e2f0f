import fs from 'node:fs';
import path from 'node:path';

/**
 * The first executable file called `name` in the directories of `searchPath` (a PATH value),
 * then in `extraDirs`; undefined if there is none. On Windows the name gets `.exe`. One lookup for
 * the ffmpeg candidates, the confinement wrappers (setpriv, prlimit) and the benchmarks' tools.
 */
export function findExecutable(name: string, searchPath: string = process.env.PATH ?? '', extraDirs: readonly string[] = []): string | undefined {
  const fileName = process.platform === 'win32' ? `${name}.exe` : name;
  for (const dir of [...searchPath.split(path.delimiter), ...extraDirs]) {
    if (!dir) continue;
    const file = path.join(dir, fileName);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      if (fs.statSync(file).isFile()) return file;
    } catch {
      // not here; keep looking
    }
  }
  return undefined;
}
