/**
 * Routes reach services, never stores (issue 11, item 7; ../shared/STYLE.md). What a route may
 * import from the storage layer is the shape of a record (`VideoRecord`, `VideoSearch`), as a
 * type; no store interface or implementation (`VideoStore`, `Stores`, `MediaStore`,
 * `LocalMediaStore`…), from anywhere. The services are composed from the stores outside
 * `server/routes/` (app.ts, services/consoleServices.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROUTES = path.join(import.meta.dirname, '..', 'server', 'routes');

/** Every import of a module: whether type-only, the names, and where from. */
function importsOf(source: string): Array<{ typeOnly: boolean; names: string[]; from: string; text: string }> {
  const found = [];
  for (const m of source.matchAll(/^import\s+(type\s+)?([\s\S]*?)\s+from\s+'([^']+)';/gm)) {
    const clause = m[2]!;
    // `X`, `{ a, type b, c as d }`, `X, { … }`, `* as X`: the names as the module exports them.
    const names = [
      ...[...clause.matchAll(/\{([^}]*)\}/g)].flatMap((b) => b[1]!.split(',').map((n) => n.trim().replace(/^type\s+/, '').split(/\s+as\s+/)[0]!.trim())),
      ...clause.replace(/\{[^}]*\}/g, '').split(',').map((n) => n.trim().replace(/^\*\s+as\s+/, '')),
    ].filter(Boolean);
    const allTypes = m[1] !== undefined || (/^\{[^}]*\}$/.test(clause.trim()) && clause.replace(/[{}]/g, '').split(',').every((n) => n.trim() === '' || /^type\s/.test(n.trim())));
    found.push({ typeOnly: allTypes, names, from: m[3]!, text: m[0] });
  }
  return found;
}

/** The shapes of stored things a route may name: records, search filters, pages, status changes. */
const RECORD_TYPE = /(Record|Search|Change)$|^Page$/;

/** What breaks the rule in one route module, as lines to show. */
export function layeringProblems(source: string): string[] {
  const problems: string[] = [];
  for (const imp of importsOf(source)) {
    const stores = imp.names.filter((n) => /Stores?$/.test(n));
    if (stores.length > 0) problems.push(`imports ${stores.join(', ')} (a store): ${imp.text}`);
    else if (/\/storage\//.test(imp.from)) {
      if (!imp.typeOnly) problems.push(`imports code from the storage layer: ${imp.text}`);
      const notRecords = imp.names.filter((n) => !RECORD_TYPE.test(n));
      if (notRecords.length > 0) problems.push(`imports ${notRecords.join(', ')} from the storage layer, which is no record's shape: ${imp.text}`);
    }
  }
  return problems;
}

describe('layering: routes reach services, never stores', () => {
  it('holds for every module in server/routes', () => {
    const files = fs.readdirSync(ROUTES).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(10);
    const problems = files.flatMap((f) => layeringProblems(fs.readFileSync(path.join(ROUTES, f), 'utf8')).map((p) => `${f}: ${p}`));
    expect(problems).toEqual([]);
  });

  it('the check itself sees a store, however it is imported', () => {
    expect(layeringProblems("import type { VideoRecord, VideoStore } from '../storage/types.js';")).toHaveLength(1);
    expect(layeringProblems("import type { JobRecord, JobStore } from '../jobs/types.js';")).toHaveLength(1);
    expect(layeringProblems("import { type Stores } from '../storage/types.js';")).toHaveLength(1);
    expect(layeringProblems("import { openStores } from '../storage/openStores.js';")).toHaveLength(1);
    expect(layeringProblems("import type {\n  AppRecord,\n  LocalMediaStore as Disk,\n} from '../storage/mediaStore.js';")).toHaveLength(1);
    expect(layeringProblems("import type { VideoRecord, VideoSearch } from '../storage/types.js';")).toEqual([]);
    expect(layeringProblems("import { type VideoRecord } from '../storage/types.js';")).toEqual([]);
    expect(layeringProblems("import type { VideoAdmin } from '../services/videoAdmin.js';")).toEqual([]);
    expect(layeringProblems("import type { VideoMedia } from '../storage/media/videoMedia.js';")).toHaveLength(1);
  });
});
