/**
 * docs/interface.md is the interface as vop implements it, for integrators (issue 13, item 7).
 * This keeps its result-code table the one catalogue's (server/core/errors.ts), its decisions the
 * README's, and the README pointing at it rather than at a spec outside the repository.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RESULT_CODES } from '../server/core/errors.js';
import { ROOT } from './helpers/server.js';

const doc = fs.readFileSync(path.join(ROOT, 'docs/interface.md'), 'utf8');
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The text of one `## ` section of `text`, without its heading line. */
function section(text: string, title: string, where: string): string {
  const start = text.indexOf(`\n## ${title}\n`);
  expect(start, `${where} has no "## ${title}" section`).toBeGreaterThanOrEqual(0);
  const next = text.indexOf('\n## ', start + 1);
  return text.slice(start + `\n## ${title}\n`.length, next === -1 ? undefined : next);
}

function codeRows(): Array<{ code: string; message: string; http: number; when: string }> {
  return section(doc, 'Result codes (7)', 'docs/interface.md')
    .split('\n')
    .filter((line) => /^\|\s*`/.test(line))
    .map((line) => {
      const cells = line.split('|').slice(1, -1).map((c) => c.trim());
      return { code: cells[0]!.replace(/`/g, ''), message: cells[1]!, http: Number(cells[2]), when: cells[3] ?? '' };
    });
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

  it("states the README's decisions on what the spec leaves open, word for word", () => {
    const ours = section(doc, 'Decisions on what the specification leaves open', 'docs/interface.md');
    const theirs = section(readme, 'Decisions on what the spec leaves open', 'README.md').trim();
    expect(ours).toContain(theirs);
  });

  it("covers every call of the spec, its statuses and the callback vop sends", () => {
    for (const heading of ['## 4.1 Get one video', '## 4.2 Register a video', "## 4.3 One uploader's videos", '## 4.4 All videos', '## 4.5 Sending the file', '## Authentication (5)', '## Fields (2)', '## Statuses (3)', '## The status callback (6)', '## Limits (8)']) {
      expect(doc).toContain(heading);
    }
    for (const p of ['/Api/Video/Get', '/Api/Video/Post', '/Api/Video/GetUserVideoListByAId', '/Api/Video/GetList', 'initUploadWidget.js', 'initUploadABoxWidget.js', 'webhook-signature', 'MediaSever', 'needHandleSepcial']) {
      expect(doc).toContain(p);
    }
    const statuses = section(doc, 'Statuses (3)', 'docs/interface.md');
    for (let s = 0; s <= 8; s++) expect(statuses, `status ${s}`).toMatch(new RegExp(`^\\| ${s} \\|`, 'm'));
  });

  it('is what the README links for the interface, not a file outside the repository', () => {
    expect(readme).not.toContain('../shared/');
    expect(readme).toContain('docs/interface.md');
  });
});
