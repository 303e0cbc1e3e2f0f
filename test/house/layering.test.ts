/**
 * The floors of the house (../shared/STYLE.md, "Floors"): every import points down.
 *
 * - `server/` is laid out in floors, lowest first (FLOORS below). A file may import files of its
 *   own folder and of folders on lower floors, never of its own floor's other folders nor of a
 *   higher floor: an import that runs back up is a file filed on the wrong floor. A new folder or
 *   root file of `server/` must be given a floor here.
 * - Above the server stand the shell (`main/`), the console (`renderer/`) and the benches
 *   (`bench/`); the server imports none of them, nor `test/`.
 * - No circle of imports anywhere in the tree, inside a folder included.
 * - Routes reach services, never stores: what a route may import from the storage layer is the
 *   shape of a record (`VideoRecord`, `VideoSearch`), as a type; no store interface or
 *   implementation (`VideoStore`, `Stores`, `MediaStore`, `LocalMediaRoot`…), from anywhere.
 *   The services are composed from the stores outside `server/routes/` (composition/,
 *   console/consoleServices.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(import.meta.dirname, '../..');
const ROUTES = path.join(ROOT, 'server', 'routes');

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

/** The shapes of stored things a route may name: records, their states, search filters, pages, status changes. */
const RECORD_TYPE = /(Record|State|Search|Change)$|^Page$/;

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
    expect(layeringProblems("import type {\n  AppRecord,\n  LocalMediaRoot as Disk,\n} from '../storage/mediaStore.js';")).toHaveLength(1);
    expect(layeringProblems("import type { VideoRecord, VideoSearch } from '../storage/types.js';")).toEqual([]);
    expect(layeringProblems("import { type VideoRecord } from '../storage/types.js';")).toEqual([]);
    expect(layeringProblems("import type { VideoAdmin } from '../services/videoAdmin.js';")).toEqual([]);
    expect(layeringProblems("import type { VideoMedia } from '../storage/media/videoMedia.js';")).toHaveLength(1);
  });
});

/**
 * The floors of `server/`, lowest first. An entry ending in `/` is a folder (with its subfolders),
 * any other a file; both are named from `server/`.
 */
export const FLOORS: readonly (readonly string[])[] = [
  // Vocabulary: statuses, ids, errors and result codes, events, tokens. Imports nothing of ours.
  ['core/'],
  // The operator's log: its format, and the lines it makes of the events and requests.
  ['logging/'],
  // The stores (metadata, media objects, records) and the ffmpeg layer, which know nothing of each other.
  ['storage/', 'media/'],
  // The HTTP toolkit: client addresses, parameters, file answers, error envelopes, hot paths.
  ['http/'],
  // What the features share: the job queue, application authentication, a video's lifecycle and
  // view, the upload page, the signing keys.
  ['jobs/', 'auth/', 'videos/', 'widget/', 'keys/'],
  // The features (backups among them: the database, the settings files and the media, copied and put back).
  ['callbacks/', 'ingest/', 'processing/', 'backup/'],
  ['services/'],
  // The watch page's HTML and words, made of what the watch service answers.
  ['watch/'],
  ['config.ts'],
  // The start configuration's layers: the option catalogue, the file, the variables, their sources.
  ['configuration/'],
  ['settings/', 'startArgs.ts'],
  ['console/'],
  // What the operator watches: the metrics, fed by the events and by what the services count.
  ['metrics/'],
  ['routes/'],
  // The features as modules and the list of parts they start and stop in; the root that calls
  // them; then the entry points.
  ['composition/'],
  ['app.ts'],
  ['bootstrap.ts', 'configCommands.ts', 'backupCommands.ts'],
  ['main.ts', 'cli.ts'],
];

/** The top-level folders whose files are read for imports and circles. */
const TREE = ['server', 'main', 'renderer/src', 'renderer/vite.config.ts', 'bench', 'scripts', 'widget'];
/** What nothing in `server/` may import: what stands above it, and the tests. */
const ABOVE_SERVER = ['main/', 'renderer/', 'bench/', 'test/'];

/** Every relative module specifier of a source file: static imports and re-exports, type-only or not, and literal dynamic imports. */
export function specifiersOf(source: string): string[] {
  const found = new Set<string>();
  for (const m of source.matchAll(/^\s*(?:import|export)\s+(?:type\s+)?(?:[\w*{][^;]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]/gm)) found.add(m[1]!);
  for (const m of source.matchAll(/\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)) found.add(m[1]!);
  return [...found];
}

/** The file a specifier names, from the tree's root, or undefined when it names none (a package, an asset). */
function resolveSpecifier(fromFile: string, spec: string): string | undefined {
  const abs = path.resolve(path.dirname(path.join(ROOT, fromFile)), spec);
  const stem = abs.replace(/\.(js|mjs|cjs)$/, '');
  for (const c of [abs, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.mjs`, `${stem}.js`, path.join(abs, 'index.ts')]) {
    if (fs.existsSync(c) && fs.statSync(c).isFile()) return path.relative(ROOT, c).split(path.sep).join('/');
  }
  return undefined;
}

function sourceFiles(entry: string): string[] {
  const abs = path.join(ROOT, entry);
  if (!fs.existsSync(abs)) return [];
  if (fs.statSync(abs).isFile()) return [entry];
  return fs.readdirSync(abs, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(ts|tsx|mts|mjs|js)$/.test(f) && !f.split(path.sep).some((part) => part === 'node_modules' || part === 'dist'))
    .map((f) => `${entry}/${f.split(path.sep).join('/')}`);
}

/** The import graph of the tree: file -> the files of the tree it imports. */
export function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of TREE.flatMap(sourceFiles)) {
    const source = fs.readFileSync(path.join(ROOT, file), 'utf8');
    graph.set(file, specifiersOf(source).map((s) => resolveSpecifier(file, s)).filter((f): f is string => f !== undefined));
  }
  return graph;
}

/** The room (floor entry) of a server file, and its floor number; undefined when FLOORS places it nowhere. */
export function roomOf(serverFile: string, floors: readonly (readonly string[])[] = FLOORS): { room: string; floor: number } | undefined {
  const inServer = serverFile.replace(/^server\//, '');
  let best: { room: string; floor: number } | undefined;
  floors.forEach((entries, floor) => {
    for (const room of entries) {
      const fits = room.endsWith('/') ? inServer.startsWith(room) : inServer === room;
      if (fits && (!best || room.length > best.room.length)) best = { room, floor };
    }
  });
  return best;
}

/** What breaks the floors in a graph, as lines to show. */
export function floorProblems(graph: Map<string, string[]>, floors: readonly (readonly string[])[] = FLOORS): string[] {
  const problems: string[] = [];
  for (const [file, targets] of graph) {
    if (!file.startsWith('server/')) continue;
    const from = roomOf(file, floors);
    if (!from) {
      problems.push(`${file} stands on no floor: give its folder a floor in FLOORS`);
      continue;
    }
    for (const target of targets) {
      if (ABOVE_SERVER.some((a) => target.startsWith(a))) {
        problems.push(`${file} imports ${target}, which stands above the server`);
        continue;
      }
      if (!target.startsWith('server/')) continue;
      const to = roomOf(target, floors);
      if (!to || to.room === from.room) continue;
      if (to.floor >= from.floor) {
        problems.push(`${file} (floor ${from.floor + 1}, ${from.room}) imports ${target} (floor ${to.floor + 1}, ${to.room}): ${to.floor === from.floor ? 'a neighbour on the same floor' : 'a higher floor'}`);
      }
    }
  }
  return problems;
}

/** The circles of a graph (strongly connected sets of two files or more, or a file importing itself). */
export function circles(graph: Map<string, string[]>): string[][] {
  // Tarjan's algorithm, iterative so that a long chain cannot overflow the stack.
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  for (const start of graph.keys()) {
    if (indexOf.has(start)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
    indexOf.set(start, index); low.set(start, index); index++;
    stack.push(start); onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const targets = graph.get(top.node) ?? [];
      if (top.next < targets.length) {
        const t = targets[top.next++]!;
        if (!graph.has(t)) continue;
        if (!indexOf.has(t)) {
          indexOf.set(t, index); low.set(t, index); index++;
          stack.push(t); onStack.add(t);
          work.push({ node: t, next: 0 });
        } else if (onStack.has(t)) low.set(top.node, Math.min(low.get(top.node)!, indexOf.get(t)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === indexOf.get(top.node)) {
        const set: string[] = [];
        let n: string;
        do { n = stack.pop()!; onStack.delete(n); set.push(n); } while (n !== top.node);
        if (set.length > 1 || targets.includes(top.node)) found.push(set.sort());
      }
    }
  }
  return found;
}

describe('layering: every import points down a floor', () => {
  const graph = importGraph();

  it('reads the whole tree', () => {
    expect([...graph.keys()].filter((f) => f.startsWith('server/')).length).toBeGreaterThan(100);
    for (const top of ['main/', 'renderer/src/', 'bench/']) expect([...graph.keys()].some((f) => f.startsWith(top))).toBe(true);
  });

  it('holds for every file of server/: no import of a neighbour on the same floor, a higher floor, or what stands above the server', () => {
    expect(floorProblems(graph)).toEqual([]);
  });

  it('leaves no circle of imports anywhere in the tree', () => {
    expect(circles(graph).map((c) => c.join(' -> '))).toEqual([]);
  });

  it("is the floor table of docs/architecture.md: the same floors, in the same order, each with the same rooms", () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| (\d+) \| ([^|]+) \|/gm)].map((m) => ({ floor: Number(m[1]), rooms: [...m[2]!.matchAll(/`server\/([^`]+)`/g)].map((r) => r[1]!) }));
    const floors: string[][] = [];
    for (const r of rows) (floors[r.floor - 1] ??= []).push(...r.rooms);
    expect(floors.map((f) => [...f].sort())).toEqual(FLOORS.map((f) => [...f].sort()));
  });

  it('the checks themselves see a climb, a neighbour, a file on no floor and a circle', () => {
    expect(specifiersOf("import type { A } from '../a.js';\nexport { b } from './b.js';\nconst c = await import('./c.js');\nimport './d.js';")).toEqual(['../a.js', './b.js', './d.js', './c.js']);
    const floors = [['core/'], ['storage/', 'media/'], ['routes/']];
    const g = new Map<string, string[]>([
      ['server/core/a.ts', ['server/storage/s.ts']],
      ['server/storage/s.ts', ['server/media/m.ts', 'server/core/a.ts']],
      ['server/media/m.ts', ['server/core/a.ts']],
      ['server/routes/r.ts', ['server/media/m.ts', 'server/routes/q.ts', 'bench/lib.ts']],
      ['server/routes/q.ts', ['server/routes/r.ts']],
      ['server/lost.ts', []],
    ]);
    const problems = floorProblems(g, floors);
    expect(problems.filter((p) => p.startsWith('server/core/a.ts') && p.endsWith('a higher floor'))).toHaveLength(1);
    expect(problems.filter((p) => p.startsWith('server/storage/s.ts') && p.endsWith('a neighbour on the same floor'))).toHaveLength(1);
    expect(problems.filter((p) => p.includes('stands above the server'))).toHaveLength(1);
    expect(problems.filter((p) => p.includes('stands on no floor'))).toHaveLength(1);
    expect(problems).toHaveLength(4);
    expect(circles(g).map((c) => c.join(' '))).toEqual(expect.arrayContaining(['server/core/a.ts server/media/m.ts server/storage/s.ts', 'server/routes/q.ts server/routes/r.ts']));
    expect(circles(g)).toHaveLength(2);
  });
});
