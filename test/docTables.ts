/**
 * Reading the structure of the docs, never their sentences (STYLE.md, Docs: "keep constants and
 * docs in step with a generated table or a structured check, never with a regular expression over
 * a sentence"). A page keeps the code's constants in a table announced by a marker comment,
 * `<!-- table: <name> -->`, with a column `in the code` naming the constant and a column `value`;
 * the tests read those rows and compare each value with the constant. Rewording the prose around a
 * table changes nothing here; changing a constant without its row fails.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './helpers/server.js';

/** The text of a file of the repository (`README.md`, `docs/interface.md`). */
export function readDoc(relativePath: string): string {
  return fs.readFileSync(path.join(ROOT, relativePath), 'utf8');
}

/** The body of the `## <title>` section of `text` (up to the next `## `), or undefined. */
export function section(text: string, title: string): string | undefined {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l === `## ${title}`);
  if (start === -1) return undefined;
  const end = lines.findIndex((l, i) => i > start && l.startsWith('## '));
  return lines.slice(start + 1, end === -1 ? undefined : end).join('\n');
}

/** The cells of one table line, trimmed (`| a | b |` → `['a', 'b']`). */
export function cells(line: string): string[] {
  return line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
}

/**
 * Every markdown table in `text`, as rows keyed by the header's cells. A table is a header line,
 * a `|---|` line, then its rows; `marker` is the `<!-- table: … -->` name on the line before it.
 */
export function tables(text: string): Array<{ marker?: string; header: string[]; rows: Array<Record<string, string>> }> {
  const lines = text.split('\n');
  const found: Array<{ marker?: string; header: string[]; rows: Array<Record<string, string>> }> = [];
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!lines[i]!.trim().startsWith('|') || !/^\|(\s*:?-+:?\s*\|)+\s*$/.test(lines[i + 1]!.trim())) continue;
    if (i > 0 && lines[i - 1]!.trim().startsWith('|')) continue;
    const header = cells(lines[i]!);
    const marker = /^<!-- table: ([\w-]+) -->$/.exec(lines[i - 1]?.trim() ?? '')?.[1];
    const rows: Array<Record<string, string>> = [];
    let j = i + 2;
    for (; j < lines.length && lines[j]!.trim().startsWith('|'); j++) {
      const row = cells(lines[j]!);
      rows.push(Object.fromEntries(header.map((h, k) => [h, row[k] ?? ''])));
    }
    found.push({ marker, header, rows });
    i = j - 1;
  }
  return found;
}

/** The rows of the table marked `<!-- table: <name> -->` in `text`; throws if there is none. */
export function markedTable(text: string, name: string, where: string): Array<Record<string, string>> {
  const table = tables(text).find((t) => t.marker === name);
  if (!table) throw new Error(`${where} has no table marked <!-- table: ${name} -->`);
  return table.rows;
}

/** A cell without its backticks: `` `callbacks.sweepMs` `` → `callbacks.sweepMs`. */
export function code(cell: string): string {
  return cell.replace(/`/g, '').trim();
}

const UNITS: Record<string, number> = {
  ms: 1, s: 1000, min: 60_000, h: 3_600_000,
  B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3,
};

/**
 * A value cell as a number in base units: milliseconds for times, bytes for sizes, the number
 * itself otherwise. `1,000` → 1000, `10 s` → 10000, `64 KiB` → 65536, `1 min 10 s` → 70000,
 * `50 characters` → 50 (a word that is not a unit only names what is counted).
 */
export function quantity(value: string): number {
  const parts = [...value.matchAll(/(\d[\d,]*(?:\.\d+)?)\s*([A-Za-z]+)?/g)];
  if (parts.length === 0) throw new Error(`no number in "${value}"`);
  let total = 0;
  for (const [, n, unit] of parts) {
    const number = Number(n!.replace(/,/g, ''));
    if (unit !== undefined && unit in UNITS) total += number * UNITS[unit]!;
    else if (parts.length === 1) total += number;
    else throw new Error(`"${value}": "${unit}" is not a unit`);
  }
  return total;
}

/** The value at a dotted path of `object` (`ingest.pull.maxBytes`), or undefined. */
export function at(object: unknown, dottedPath: string): unknown {
  return dottedPath.split('.').reduce<unknown>((o, key) => (o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[key] : undefined), object);
}

/** A code value in a table's units: a constant named `…Seconds` is written as a time. */
export function inDocUnits(name: string, value: number): number {
  return /Seconds$/.test(name) ? value * 1000 : value;
}

/** The fenced code blocks of `text`, with their info string (```` ```http ```` → `http`). */
export function fencedBlocks(text: string): Array<{ info: string; body: string }> {
  const blocks: Array<{ info: string; body: string }> = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, k) => k > i && l === '```');
    if (end === -1) break;
    blocks.push({ info: open[1]!.trim(), body: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

/**
 * The one fenced code block between `<!-- recipe: <name> -->` and `<!-- end recipe -->` in `text`:
 * a recipe a test runs as it stands. Throws if the markers or the block are missing.
 */
export function markedBlock(text: string, name: string): { info: string; body: string } {
  const start = text.indexOf(`<!-- recipe: ${name} -->`);
  const end = start === -1 ? -1 : text.indexOf('<!-- end recipe -->', start);
  if (start === -1 || end === -1) throw new Error(`no code block marked <!-- recipe: ${name} --> … <!-- end recipe -->`);
  const blocks = fencedBlocks(text.slice(start, end));
  if (blocks.length !== 1) throw new Error(`the recipe ${name} holds ${blocks.length} code blocks, not one`);
  return blocks[0]!;
}
