/**
 * The README is a front door and docs/ has one page per subject, linked to each other by relative
 * links (STYLE.md, Docs). A link to a page, an image or a heading that is not there fails here,
 * naming the file, the link and what is missing; and the README stays a front door, short enough
 * to read at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/server.js';

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a markdown text's headings (a repeated heading gets -1, -2, … as on GitHub). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6} (.+)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.add(n === 0 ? base : `${base}-${n}`);
  }
  return found;
}

/** Every `[text](target)` and `![alt](target)` outside code, with its line number. */
export function links(text: string): Array<{ target: string; line: number }> {
  const found: Array<{ target: string; line: number }> = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) return;
    const prose = line.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) found.push({ target: m[1]!, line: i + 1 });
  });
  return found;
}

/** What is wrong with the relative links of `file` (a path from the repository's root). */
export function brokenLinks(file: string, text: string, exists: (p: string) => boolean, read: (p: string) => string): string[] {
  const problems: string[] = [];
  for (const { target, line } of links(text)) {
    if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
    const [pathPart, anchor] = target.split('#') as [string, string | undefined];
    const resolved = pathPart === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), pathPart));
    if (!exists(resolved)) {
      problems.push(`${file}:${line}: ${target}: no file ${resolved}`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor)) {
      problems.push(`${file}:${line}: ${target}: ${resolved} has no heading #${anchor}`);
    }
  }
  return problems;
}

const pages = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const exists = (p: string) => fs.existsSync(path.join(ROOT, p));
const read = (p: string) => fs.readFileSync(path.join(ROOT, p), 'utf8');

describe('links between the README and docs/', () => {
  it('finds a broken page, image or heading (the checker itself)', () => {
    const files: Record<string, string> = { 'docs/a.md': '# A\n\n## Two words\n', 'docs/b.md': '' };
    const text = '[ok](a.md#two-words) [no page](c.md) [no heading](a.md#three) ![img](shots/x.png) `[code](z.md)` [web](https://x.org)\n';
    const problems = brokenLinks('docs/b.md', text, (p) => p in files, (p) => files[p]!);
    expect(problems).toEqual([
      'docs/b.md:1: c.md: no file docs/c.md',
      'docs/b.md:1: a.md#three: docs/a.md has no heading #three',
      'docs/b.md:1: shots/x.png: no file docs/shots/x.png',
    ]);
    expect(slug('Resumable upload: tus 1.0 at `/upload/tus/`')).toBe('resumable-upload-tus-10-at-uploadtus');
    expect(slug("One upload's way through the code")).toBe('one-uploads-way-through-the-code');
  });

  it.each(pages)('%s: every relative link reaches its file and heading', (page) => {
    expect(brokenLinks(page, read(page), exists, read)).toEqual([]);
  });

  it('keeps the README a front door: at most 300 lines, linking every page of docs/', () => {
    const readme = read('README.md');
    expect(readme.split('\n').length, 'README.md lines').toBeLessThanOrEqual(301);
    for (const page of pages.filter((p) => p !== 'README.md')) expect(readme, `README links ${page}`).toContain(`](${page})`);
  });
});
