/**
 * docs/interface.md publishes the result-code table; this keeps it and the one catalogue,
 * server/core/errors.ts, the same table. A code added to the catalogue without its row fails here, with
 * the row to add in the message. It also keeps the page's table of limits (`<!-- table: limits -->`)
 * the code's defaults, row by row: each row names its constant, so the sentences around it can
 * change freely and a constant cannot change without its row.
 */
import { describe, expect, it } from 'vitest';
import { resolveOptions } from '../../server/config.js';
import { RESULT_CODES } from '../../server/core/errors.js';
import { FIELD_LIMITS, MAX_TAGS } from '../../server/services/fields.js';
import { at, code, inDocUnits, markedTable, quantity, readDoc, section, tables } from '../docTables.js';

const doc = readDoc('docs/interface.md');

interface Row {
  code: string;
  message: string;
  specHttp: number;
  adminHttp: number;
  when: string;
}

function tableRows(): Row[] {
  const body = section(doc, 'Result codes (7)');
  expect(body, 'docs/interface.md has a "## Result codes (7)" section').toBeDefined();
  const table = tables(body!).find((t) => t.header[0] === 'code');
  expect(table, 'the section has a table whose first column is "code"').toBeDefined();
  return table!.rows.map((r) => ({
    code: code(r.code!),
    message: r.message!,
    specHttp: Number(r['HTTP (spec API)']),
    adminHttp: Number(r['HTTP (admin API)']),
    when: r.when ?? '',
  }));
}

const catalogue = Object.values(RESULT_CODES);

describe("docs/interface.md's result-code table", () => {
  it('has no code twice, and the catalogue neither', () => {
    const codes = tableRows().map((r) => r.code);
    expect(new Set(codes).size).toBe(codes.length);
    expect(new Set(catalogue.map((d) => d.code)).size).toBe(catalogue.length);
  });

  it('lists every code of server/core/errors.ts with its message and HTTP statuses', () => {
    const rows = new Map(tableRows().map((r) => [r.code, r]));
    for (const def of catalogue) {
      const expectedRow = `| \`${def.code}\` | ${def.message} | ${def.transport ? def.httpStatus : 200} | ${def.httpStatus} | … |`;
      const row = rows.get(def.code);
      expect(row, `docs/interface.md lacks the row ${expectedRow}`).toBeDefined();
      expect(row!.message, `code ${def.code}`).toBe(def.message);
      // Application-level failures answer HTTP 200 on the spec API; transport-level ones keep theirs.
      expect(row!.specHttp, `code ${def.code}, spec API`).toBe(def.transport ? def.httpStatus : 200);
      expect(row!.adminHttp, `code ${def.code}, admin API`).toBe(def.httpStatus);
      expect(row!.when.length, `code ${def.code} needs a "when"`).toBeGreaterThan(5);
    }
  });

  it('lists no code the catalogue does not have', () => {
    const known = new Set<string>(catalogue.map((d) => d.code));
    const extra = tableRows().filter((r) => !known.has(r.code)).map((r) => r.code);
    expect(extra, 'rows without a catalogue entry').toEqual([]);
  });

  it('keeps the two codes the spec fixes', () => {
    expect(RESULT_CODES.OK).toMatchObject({ code: '1', message: 'OK' });
    expect(RESULT_CODES.SECRET_KEY_ERROR).toMatchObject({ code: '104', message: 'App SecretKey Error' });
  });
});

describe("docs/interface.md's limits are the code's defaults", () => {
  const rows = markedTable(doc, 'limits', 'docs/interface.md');
  const defaults = resolveOptions({ dataDir: 'x' });
  /** A row's constant: a field limit, or an option of createServer at its default. */
  const constant = (name: string): unknown =>
    name.startsWith('FIELD_LIMITS.') ? FIELD_LIMITS[name.slice('FIELD_LIMITS.'.length) as keyof typeof FIELD_LIMITS] : name === 'MAX_TAGS' ? MAX_TAGS : at(defaults, name);

  it('gives the page sizes, the failure limits and their windows, the clock difference and the body limit', () => {
    const names = rows.map((r) => code(r['in the code']!));
    for (const name of [
      'videos.maxPageSize', 'videos.defaultUserPageSize', 'videos.defaultListPageSize',
      'auth.perAddress.maxFailures', 'auth.perApp.maxFailures', 'auth.perAddress.windowMs', 'auth.perApp.windowMs',
      'auth.maxClockSkewSeconds', 'maxBodyBytes', 'videos.registrationsPerMinute',
    ]) {
      expect(names, `a row for ${name}`).toContain(name);
    }
    expect(new Set(names).size, 'a constant given twice').toBe(names.length);
  });

  it('gives each row the value the code has', () => {
    for (const row of rows) {
      const name = code(row['in the code']!);
      const value = constant(name);
      expect(typeof value, `${name} names a constant of the code`).toBe('number');
      expect(quantity(row.value!), name).toBe(inDocUnits(name, value as number));
    }
  });
});
