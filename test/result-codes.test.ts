/**
 * The README publishes the result-code table (issue 2, item 4); this keeps it and the one
 * catalogue, server/core/errors.ts, the same table. A code added to the catalogue without its README
 * row fails here, with the row to add in the message.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveOptions } from '../server/config.js';
import { RESULT_CODES } from '../server/core/errors.js';
import { DEFAULT_AUTH_OPTIONS } from '../server/auth/authService.js';
import { DEFAULT_VIDEO_OPTIONS } from '../server/services/videoService.js';
import { ROOT } from './helpers/server.js';

const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The text of one `## ` section of the README. */
function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  expect(start, `README has no "## ${title}" section`).toBeGreaterThanOrEqual(0);
  const next = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, next === -1 ? undefined : next);
}

interface Row {
  code: string;
  message: string;
  specHttp: number;
  adminHttp: number;
  when: string;
}

function tableRows(): Row[] {
  return section('Result codes')
    .split('\n')
    .filter((line) => /^\|\s*`/.test(line))
    .map((line) => {
      const cells = line.split('|').slice(1, -1).map((c) => c.trim());
      return { code: cells[0]!.replace(/`/g, ''), message: cells[1]!, specHttp: Number(cells[2]), adminHttp: Number(cells[3]), when: cells[4] ?? '' };
    });
}

const catalogue = Object.values(RESULT_CODES);

describe("README's result-code table", () => {
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
      expect(row, `README lacks the row ${expectedRow}`).toBeDefined();
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
    expect(extra, 'README rows without a catalogue entry').toEqual([]);
  });

  it('keeps the two codes the spec fixes', () => {
    expect(RESULT_CODES.OK).toMatchObject({ code: '1', message: 'OK' });
    expect(RESULT_CODES.SECRET_KEY_ERROR).toMatchObject({ code: '104', message: 'App SecretKey Error' });
  });
});

describe("README's decisions match the code's defaults", () => {
  const decisions = section('Decisions on what the spec leaves open');

  it('states the maximum page size and the default page sizes', () => {
    expect(decisions).toContain(`\`PageSize\` is at most **${DEFAULT_VIDEO_OPTIONS.maxPageSize}**`);
    expect(decisions).toContain(`size ${DEFAULT_VIDEO_OPTIONS.defaultUserPageSize} for 4.3, ${DEFAULT_VIDEO_OPTIONS.defaultListPageSize} for 4.4`);
  });

  it('states the failure limits', () => {
    expect(DEFAULT_AUTH_OPTIONS.perAddress.windowMs).toBe(60_000);
    expect(DEFAULT_AUTH_OPTIONS.perApp.windowMs).toBe(60_000);
    expect(decisions).toContain('fixed 60-second');
    expect(decisions).toContain(`A client address with ${DEFAULT_AUTH_OPTIONS.perAddress.maxFailures} failures`);
    expect(decisions).toContain(`An \`AppId\` with ${DEFAULT_AUTH_OPTIONS.perApp.maxFailures} failures`);
    expect(decisions).toContain(`exactly ${DEFAULT_AUTH_OPTIONS.maxClockSkewSeconds} s passes`);
  });

  it('states the body limit', () => {
    expect(resolveOptions({ dataDir: 'x' }).maxBodyBytes).toBe(64 * 1024);
    expect(decisions).toContain('64 KiB at most');
  });
});
