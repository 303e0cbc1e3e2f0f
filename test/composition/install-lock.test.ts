/**
 * What `npm install` on a fresh clone does with the lock: nothing. Every optional dependency of a
 * locked package has its own entry (npm adds a missing platform's entry on install, which left the
 * clone dirty and made `npm ci` refuse the lock), and no locked package wants a Node newer than
 * the lowest the project names (npm warns EBADENGINE for each).
 */
import fs from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/server.js';

interface Locked {
  version?: string;
  optionalDependencies?: Record<string, string>;
  engines?: { node?: string } | string[];
}

const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, Locked> };
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };

/** Where npm would look for `name` from the package at `at` (its own node_modules, then each one above). */
function resolves(at: string, name: string): boolean {
  let dir = at;
  for (;;) {
    if (lock.packages[`${dir === '' ? '' : `${dir}/`}node_modules/${name}`]) return true;
    if (dir === '') return false;
    const up = dir.lastIndexOf('/node_modules/');
    dir = up < 0 ? '' : dir.slice(0, up);
  }
}

describe('the lock', () => {
  it("holds an entry for every locked package's optional dependencies, every platform's", () => {
    const missing: string[] = [];
    for (const [at, p] of Object.entries(lock.packages)) {
      for (const name of Object.keys(p.optionalDependencies ?? {})) if (!resolves(at, name)) missing.push(`${at || 'the project'} → ${name}`);
    }
    expect(missing).toEqual([]);
  });

  it('asks for no Node newer than the lowest the project names', () => {
    const lowest = semver.minVersion(pkg.engines.node)!.version;
    const wanting: string[] = [];
    for (const [at, p] of Object.entries(lock.packages)) {
      const range = p.engines && !Array.isArray(p.engines) ? p.engines.node : undefined;
      if (range && !semver.satisfies(lowest, range, { includePrerelease: true })) wanting.push(`${at}@${p.version}: node ${range}`);
    }
    expect(wanting).toEqual([]);
  });
});
