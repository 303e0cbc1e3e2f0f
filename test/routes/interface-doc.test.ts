/**
 * docs/interface.md is the interface as vop implements it, for integrators, and the one home of
 * the API, the callback, the result codes and the decisions on what the specification leaves open
 * (STYLE.md, Docs: a second copy of the same text is a future contradiction). This keeps its
 * result-code table the one catalogue's (server/core/errors.ts), its sections all there, no second
 * copy of its decisions elsewhere, and the README pointing at it. Its checks read headings,
 * tables and links, never sentences.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RESULT_CODES } from '../../server/core/errors.js';
import { ROOT } from '../helpers/server.js';
import { code, readDoc, section, tables } from '../docTables.js';

const doc = readDoc('docs/interface.md');
const readme = readDoc('README.md');
const DECISIONS = 'Decisions on what the specification leaves open';

function codeRows(): Array<{ code: string; message: string; http: number; when: string }> {
  const body = section(doc, 'Result codes (7)');
  expect(body, 'docs/interface.md has a "## Result codes (7)" section').toBeDefined();
  const table = tables(body!).find((t) => t.header[0] === 'code');
  expect(table, 'a table whose first column is "code"').toBeDefined();
  return table!.rows.map((r) => ({ code: code(r.code!), message: r.message!, http: Number(r['HTTP (spec API)']), when: r.when ?? '' }));
}

const catalogue = Object.values(RESULT_CODES);

describe('docs/interface.md', () => {
  it('lists every result code of server/core/errors.ts once, with its message and the HTTP status an application sees', () => {
    const rows = codeRows();
    expect(new Set(rows.map((r) => r.code)).size, 'a code listed twice').toBe(rows.length);
    const byCode = new Map(rows.map((r) => [r.code, r]));
    for (const def of catalogue) {
      const http = def.transport ? def.httpStatus : 200;
      const row = byCode.get(def.code);
      expect(row, `docs/interface.md lacks the row | \`${def.code}\` | ${def.message} | ${http} | … |`).toBeDefined();
      expect(row!.message, `code ${def.code}`).toBe(def.message);
      expect(row!.http, `code ${def.code}`).toBe(http);
      expect(row!.when.length, `code ${def.code} needs a "when"`).toBeGreaterThan(5);
    }
    const known = new Set<string>(catalogue.map((d) => d.code));
    expect(rows.filter((r) => !known.has(r.code)).map((r) => r.code), 'rows without a catalogue entry').toEqual([]);
  });

  it('is the only home of the decisions on what the specification leaves open', () => {
    const ours = section(doc, DECISIONS);
    expect(ours, `docs/interface.md has "## ${DECISIONS}"`).toBeDefined();
    expect(ours!.split('\n').filter((l) => l.startsWith('- **')).length, 'its decisions, one bullet each').toBeGreaterThanOrEqual(20);
    // No other page keeps a copy: a heading about the decisions, or one of the decisions' bullets.
    const bullets = ours!.split('\n').filter((l) => l.startsWith('- **'));
    const others = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && f !== 'interface.md').map((f) => `docs/${f}`)];
    for (const file of others) {
      const text = readDoc(file);
      const headings = text.split('\n').filter((l) => /^#+ /.test(l) && /decisions/i.test(l));
      expect(headings, `${file} has a section of decisions: they belong in docs/interface.md`).toEqual([]);
      const lines = new Set(text.split('\n'));
      expect(bullets.filter((b) => lines.has(b)), `${file} repeats decisions of docs/interface.md`).toEqual([]);
    }
  });

  it('covers every call of the spec, its statuses and the callback vop sends', () => {
    const headings = doc.split('\n').filter((l) => l.startsWith('## '));
    for (const heading of ['## 4.1 Get one video', '## 4.2 Register a video', "## 4.3 One uploader's videos", '## 4.4 All videos', '## 4.5 Sending the file', '## Authentication (5)', '## Fields (2)', '## Statuses (3)', '## The status callback (6)', '## Limits (8)']) {
      expect(headings.some((h) => h.startsWith(heading)), heading).toBe(true);
    }
    for (const p of ['/Api/Video/Get', '/Api/Video/Post', '/Api/Video/GetUserVideoListByAId', '/Api/Video/GetList', 'initUploadWidget.js', 'initUploadABoxWidget.js', 'webhook-signature', 'MediaSever', 'needHandleSepcial']) {
      expect(doc).toContain(p);
    }
    const statuses = tables(section(doc, 'Statuses (3)') ?? '').find((t) => t.header[0] === 'value');
    expect(statuses, 'the statuses table').toBeDefined();
    expect(statuses!.rows.map((r) => Number(r.value)).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('is what the README links for the interface, not a file outside the repository', () => {
    expect(readme).not.toContain('../shared/');
    expect(readme).toContain('](docs/interface.md');
  });
});
