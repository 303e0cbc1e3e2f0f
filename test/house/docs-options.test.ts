/**
 * The docs give the defaults of createServer's options in tables marked `<!-- table: options -->`
 * (columns `option` and `default`): ingest in docs/uploads.md, processing in docs/processing.md,
 * housekeeping in docs/console.md. This compares every row with the defaults the server runs
 * with, so a default cannot change without its row, while the sentences around the tables stay
 * free to change. It reads rows, never sentences (see docTables.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveOptions } from '../../server/config.js';
import type { BackupOptions } from '../../server/backup/backupOptions.js';
import type { ProcessingOptions } from '../../server/processing/processingOptions.js';
import { at, code, inDocUnits, quantity, readDoc, tables } from '../docTables.js';
import { ROOT } from '../helpers/server.js';

/** Defaults that depend on the machine, written as a rule rather than a value; why each is skipped. */
const COMPUTED: Record<string, string> = {
  'processing.concurrency': 'half the cores, at least 3',
  'processing.memoryLimitBytes': 'max(4 GiB, 2 GiB + 256 MiB a core)',
  'processing.ladder': 'checked against the default ladder table below',
  'backups.dir': 'the data folder’s backups/, absent from the options until the server starts',
};

/**
 * The options a table may give without a default (`—`). Typed, so that a name here that is no
 * option fails the type-check (which main-shell runs over the tests); the rows are held to it,
 * so a misspelt option in a `—` row fails too.
 */
const WITHOUT_DEFAULT: string[] = [
  ...(['ffmpegPath', 'ffprobePath'] satisfies Array<keyof ProcessingOptions>).map((k) => `processing.${k}`),
  ...(['sealKeyFile'] satisfies Array<keyof BackupOptions>).map((k) => `backups.${k}`),
];

/** A default cell as a value: `—` none, `{a: 1}` an object, `true`, a quantity, or a word. */
function parseDefault(cell: string): unknown {
  const text = code(cell);
  if (text === '—') return undefined;
  if (text.startsWith('{')) return JSON.parse(text.replace(/(\w+):/g, '"$1":'));
  if (text === 'true' || text === 'false') return text === 'true';
  // A time of day (`02:00`) is text, not a quantity.
  if (/^\d{2}:\d{2}$/.test(text)) return text;
  if (/^\d/.test(text)) return quantity(text);
  return text;
}

const defaults = resolveOptions({ dataDir: 'x' });
const pages = fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
const optionTables = pages.flatMap((page) => tables(readDoc(page)).filter((t) => t.marker === 'options').map((t) => ({ page, rows: t.rows })));

describe("the docs' tables of option defaults", () => {
  it('are there for ingest, processing and housekeeping', () => {
    const names = optionTables.flatMap((t) => t.rows.map((r) => code(r.option!)));
    for (const group of ['ingest.', 'ingest.pull.', 'processing.', 'housekeeping.']) {
      expect(names.some((n) => n.startsWith(group)), `a table gives ${group}*`).toBe(true);
    }
  });

  it.each(optionTables.map((t) => [t.page, t.rows] as const))('%s: every default is the code’s', (page, rows) => {
    for (const row of rows) {
      for (const name of code(row.option!).split(',').map((n) => n.trim())) {
        if (name in COMPUTED) continue;
        const expected = at(defaults, name);
        const given = parseDefault(row.default!);
        if (given === undefined) expect(WITHOUT_DEFAULT, `${page}: ${name} is given no default`).toContain(name);
        const inUnits = typeof expected === 'number' ? inDocUnits(name, expected) : expected;
        expect(given, `${page}: ${name}`).toEqual(inUnits);
      }
    }
  });

  it("docs/processing.md's default ladder is the code's", () => {
    const ladder = tables(readDoc('docs/processing.md')).find((t) => t.header[0] === '`BitrateLabel`');
    expect(ladder, 'the ladder table (first column `BitrateLabel`)').toBeDefined();
    const rungs = ladder!.rows.map((r) => ({ label: code(r['`BitrateLabel`']!), shortSide: quantity(r['shorter side']!), videoBitrateKbps: quantity(r['video bitrate cap']!) }));
    expect(rungs).toEqual(defaults.processing.ladder.rungs.map((r) => ({ label: r.label, shortSide: r.shortSide, videoBitrateKbps: r.videoBitrateKbps })));
    for (const r of ladder!.rows) expect(quantity(r.audio!), `audio of ${r['`BitrateLabel`']}`).toBe(defaults.processing.ladder.audioBitrateKbps);
  });
});
