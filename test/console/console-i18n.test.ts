/**
 * Every string a person sees in the console and the upload page is in both catalogues, English
 * and Simplified Chinese (issue 13, item 6; STYLE.md "Text people read"):
 *
 * - the console's catalogues (renderer/src/messages/en.ts, zh-CN.ts) have the same keys, each the
 *   same kind (text, or a function taking as many values), none empty;
 * - no console source writes text itself: JSX text, the visible attributes (labels, titles,
 *   placeholders, alt), and sentences in string literals are refused, except on a line marked
 *   `i18n-ignore` (a name the server sends and the code compares);
 * - the upload page (widget/page/upload.js, upload.html) takes every text from its catalogue.
 *
 * test/console/console-languages.test.ts shows the languages, the locale's dates and the dark theme in
 * Chromium.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { RESULT_CODES } from '../../server/core/errors.js';
import { en, type Messages } from '../../renderer/src/messages/en.js';
import { zhCN } from '../../renderer/src/messages/zh-CN.js';
import { ROOT } from '../helpers/server.js';

/** `a.b.c` → kind of each leaf: 'text', or 'fn/<arity>'. */
function shape(value: unknown, at = '', out = new Map<string, string>()): Map<string, string> {
  if (typeof value === 'string') out.set(at, 'text');
  else if (typeof value === 'function') out.set(at, `fn/${value.length}`);
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) shape(v, at ? `${at}.${k}` : k, out);
  else out.set(at, typeof value);
  return out;
}

/** Every text leaf. */
function texts(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object' && typeof value !== 'function') return Object.values(value).flatMap(texts);
  return [];
}

/** Text leaves that are empty. */
function emptyTexts(value: unknown, at = ''): string[] {
  if (typeof value === 'string') return value.trim() === '' && !at.endsWith('listSeparator') ? [at] : [];
  if (value && typeof value === 'object' && typeof value !== 'function') return Object.entries(value).flatMap(([k, v]) => emptyTexts(v, at ? `${at}.${k}` : k));
  return [];
}

/** A catalogue without its result codes' words: English has none (the server's own words are English), Chinese has each (below). */
function withoutResultCodes(m: Messages): unknown {
  return { ...m, serverWords: { ...m.serverWords, resultCodes: {} } };
}

describe('the console catalogues', () => {
  it('have the same keys, each of the same kind, in English and Chinese', () => {
    const a = shape(withoutResultCodes(en));
    const b = shape(withoutResultCodes(zhCN));
    const missingInZh = [...a.keys()].filter((k) => !b.has(k));
    const missingInEn = [...b.keys()].filter((k) => !a.has(k));
    expect({ missingInZh, missingInEn }).toEqual({ missingInZh: [], missingInEn: [] });
    const differing = [...a].filter(([k, kind]) => b.get(k) !== kind).map(([k, kind]) => `${k}: ${kind} in en, ${b.get(k)} in zh-CN`);
    expect(differing).toEqual([]);
    expect([...emptyTexts(en), ...emptyTexts(zhCN)]).toEqual([]);
    expect(a.size).toBeGreaterThan(300);
  });

  it('say every result code of the server in Chinese, so no bare code or English refusal reaches a Chinese page', () => {
    const codes = Object.values(RESULT_CODES).map((d) => d.code);
    const words = zhCN.serverWords.resultCodes;
    expect(codes.filter((c) => !(c in words))).toEqual([]);
    expect(Object.keys(words).filter((c) => !codes.includes(c as never))).toEqual([]);
    for (const w of Object.values(words)) expect(typeof w === 'string' ? w : w('')).toMatch(/[\u4e00-\u9fff]/);
  });

  it('are really translated: Chinese text in the Chinese catalogue', () => {
    const all = texts(zhCN);
    const notChinese = all.filter((t) => !/[\u4e00-\u9fff]/.test(t));
    // Names and codes (AppId, Node.js, C#, HLS) stay as they are; everything else is Chinese.
    expect(notChinese.length / all.length).toBeLessThan(0.05);
  });
});

/** Attributes whose value people see or hear. */
const VISIBLE_ATTRIBUTES = new Set(['aria-label', 'title', 'placeholder', 'alt', 'label', 'ariaLabel', 'confirmLabel', 'help', 'what', 'name']);
/** Names that are the same in every language: the product, the spec's fields, a protocol. */
const TERMS = new Set(['vop', 'AppId', 'AppSecret', 'HTTP', 'HLS', 'ffmpeg', 'ffprobe']);
/** A sentence or a label: two words, starting with a capital or ending like a sentence. */
const SENTENCE = /^(?=.*[A-Za-z]{2,}\s+[A-Za-z]{2,})(?:[A-Z].*|.*[.!?:…)])$/s;
/** Text with letters, Latin or Chinese. */
const WORDS = /[A-Za-z\u4e00-\u9fff]{2,}/;

/** The console's sources that may hold text: everything but the catalogues, the pasted code and the type shims. */
function consoleSources(): string[] {
  const dir = path.join(ROOT, 'renderer/src');
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts'))
    .map((e) => path.join(e.parentPath, e.name))
    .filter((f) => !f.includes(`${path.sep}messages${path.sep}`) && !f.endsWith('integrationSnippets.ts'));
}

/** The text a source writes itself, as `file:line: text`. */
function hardCodedText(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const lines = text.split('\n');
  const found: string[] = [];
  const report = (node: ts.Node, what: string) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
    if (lines[line]?.includes('i18n-ignore')) return;
    found.push(`${path.relative(ROOT, file)}:${line + 1}: ${what.trim()}`);
  };
  const inVisibleAttribute = (node: ts.Node): boolean => {
    for (let p: ts.Node | undefined = node.parent; p; p = p.parent) {
      if (ts.isJsxAttribute(p)) return VISIBLE_ATTRIBUTES.has(p.name.getText(source));
      if (ts.isJsxElement(p) || ts.isJsxSelfClosingElement(p) || ts.isCallExpression(p)) return false;
    }
    return false;
  };
  const inJsxChild = (node: ts.Node): boolean => {
    for (let p: ts.Node | undefined = node.parent; p; p = p.parent) {
      if (ts.isJsxExpression(p)) return !!p.parent && (ts.isJsxElement(p.parent) || ts.isJsxFragment(p.parent));
      if (ts.isCallExpression(p) || ts.isJsxAttribute(p)) return false;
    }
    return false;
  };
  const visit = (node: ts.Node) => {
    if (ts.isJsxText(node)) {
      // Code shown as code (<code>npm start</code>) and names the same in every language are not text to translate.
      const element = ts.isJsxElement(node.parent) ? node.parent.openingElement.tagName.getText(source) : '';
      if (WORDS.test(node.text) && element !== 'code' && !TERMS.has(node.text.trim())) report(node, node.text);
    } else if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) {
      const value = ts.isTemplateExpression(node) ? [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join(' ') : node.text;
      const isModuleName = ts.isImportDeclaration(node.parent) || ts.isExportDeclaration(node.parent) || ts.isExternalModuleReference(node.parent);
      if (!isModuleName && !TERMS.has(value.trim()) && WORDS.test(value) && (SENTENCE.test(value.trim()) || ((inVisibleAttribute(node) || inJsxChild(node)) && /[A-Za-z]{2,}/.test(value) && !/^[\w./:-]+$/.test(value)))) {
        report(node, value);
      }
      if (ts.isTemplateExpression(node)) node.templateSpans.forEach((s) => visit(s.expression));
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the console sources', () => {
  it('write no text themselves: every string people see comes from the catalogue', () => {
    const found = consoleSources().flatMap(hardCodedText);
    expect(found).toEqual([]);
  });

  it('the check finds text written in a page (it can fail)', () => {
    const probe = path.join(ROOT, 'renderer/src/.i18n-probe.tsx');
    fs.writeFileSync(probe, `export const P = () => <p title="Save the file">Hello there <b>{'Not translated.'}</b></p>;\nexport const m = 'A sentence of the page.';\n`);
    try {
      expect(hardCodedText(probe).map((f) => f.replace(/^.*?: /, ''))).toEqual(['Save the file', 'Hello there', 'Not translated.', 'A sentence of the page.']);
    } finally {
      fs.rmSync(probe);
    }
  });
});

describe('the upload page', () => {
  const page = fs.readFileSync(path.join(ROOT, 'widget/page/upload.js'), 'utf8');
  const html = fs.readFileSync(path.join(ROOT, 'widget/page/upload.html'), 'utf8');

  it('writes no sentence outside its catalogue', () => {
    // The catalogue is the block between the two markers; the rest of the script says things through it.
    const start = page.indexOf('// ---- messages ----');
    const end = page.indexOf('// ---- end of messages ----');
    expect(start).toBeGreaterThan(0);
    expect(end).toBeGreaterThan(start);
    const rest = page.slice(0, start) + page.slice(end);
    const source = ts.createSourceFile('upload.js', rest, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
    const found: string[] = [];
    const visit = (node: ts.Node) => {
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
        if (SENTENCE.test(node.text.trim()) && !node.text.startsWith('upload page:')) found.push(node.text);
      } else if (ts.isTemplateExpression(node)) {
        const value = [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join(' ');
        if (SENTENCE.test(value.trim()) && !/^ErrorCode : /.test(value)) found.push(value);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    expect(found).toEqual([]);
  });

  it('marks every text of its HTML for the catalogue', () => {
    // Each element with text of its own carries data-i18n: the script puts the chosen language's text there.
    const body = html.slice(html.indexOf('<body>'));
    const unmarked = [...body.matchAll(/<([a-z0-9]+)([^>]*)>([^<]*[A-Za-z]{2,}[^<]*)</g)].filter((m) => !/data-i18n=/.test(m[2]!)).map((m) => m[3]!.trim());
    expect(unmarked).toEqual([]);
    const attrs = [...body.matchAll(/\s(aria-label|title|placeholder)="([^"]*[A-Za-z]{2,}[^"]*)"/g)].map((m) => m[0]);
    const marked = [...body.matchAll(/data-i18n-(aria-label|title|placeholder)=/g)].length;
    expect(marked).toBe(attrs.length);
  });
});
