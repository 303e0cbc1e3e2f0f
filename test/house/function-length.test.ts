/**
 * No function in `server/` runs over MAX_LINES lines (../shared/STYLE.md, "a function
 * past ~60 is usually two things"). The limit is the point where a reader can no longer hold a
 * function in view: past it, its phases want names of their own.
 *
 * A function's length is the span of its lines, first to last, so a function counts the nested
 * functions it holds, and each nested one is measured again on its own.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(import.meta.dirname, '../..');
const SERVER = path.join(ROOT, 'server');

/** The most lines a function may span. */
const MAX_LINES = 120;

/**
 * Functions known to be over the limit, as `file name` (file from the tree's root). The list may
 * only shrink: an entry no longer over the limit (or gone) fails the test, so it cannot go stale.
 * Each entry says, above it, why it is still here.
 */
const KNOWN_LONG: ReadonlySet<string> = new Set<string>([]);

/** One function-like node: where it starts, what it is called, and how many lines it spans. */
interface FunctionSpan {
  line: number;
  name: string;
  lines: number;
}

/** A readable name for a function-like node: its own, or the one it is bound to, or `<anonymous>`. */
function nameOf(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const own = node.name;
  if (own && (ts.isIdentifier(own) || ts.isPrivateIdentifier(own) || ts.isStringLiteral(own) || ts.isNumericLiteral(own))) {
    const prefix = ts.isGetAccessorDeclaration(node) ? 'get ' : ts.isSetAccessorDeclaration(node) ? 'set ' : '';
    return prefix + own.text;
  }
  if (own) return own.getText(source);
  // An arrow or function expression takes the name of what holds it: `const x = () => …`,
  // `{ x: () => … }`, `this.x = () => …`.
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) {
    return parent.name.getText(source);
  }
  if (ts.isBinaryExpression(parent) && parent.right === node) return parent.left.getText(source);
  return '<anonymous>';
}

/** Every function-like node with a body in one source text, with its span of lines. */
function functionSpans(fileName: string, text: string): FunctionSpan[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const spans: FunctionSpan[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node)
        || ts.isFunctionExpression(node) || ts.isConstructorDeclaration(node)
        || ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node))
      && node.body !== undefined
    ) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      spans.push({ line: first + 1, name: nameOf(node, source), lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return spans;
}

/** Every `.ts` file under server/, from the tree's root. */
function serverFiles(): string[] {
  return fs.readdirSync(SERVER, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => `server/${f.split(path.sep).join('/')}`)
    .sort();
}

describe('function length: no function in server/ over 120 lines', () => {
  const long = serverFiles().flatMap((file) =>
    functionSpans(file, fs.readFileSync(path.join(ROOT, file), 'utf8'))
      .filter((s) => s.lines > MAX_LINES)
      .map((s) => ({ ...s, file })));

  it('holds for every function, known exceptions aside', () => {
    const offenders = long
      .filter((s) => !KNOWN_LONG.has(`${s.file} ${s.name}`))
      .map((s) => `${s.file}:${s.line} ${s.name} (${s.lines} lines)`);
    expect(offenders, `split these into named steps of at most ${MAX_LINES} lines`).toEqual([]);
  });

  it('keeps the composition root short: buildServer calls the feature modules, at most 80 lines', () => {
    const root = functionSpans('server/app.ts', fs.readFileSync(path.join(ROOT, 'server/app.ts'), 'utf8')).find((s) => s.name === 'buildServer');
    expect(root, 'server/app.ts has a buildServer').toBeDefined();
    expect(root!.lines).toBeLessThanOrEqual(80);
  });

  it('lists no exception that is no longer over the limit', () => {
    const stillLong = new Set(long.map((s) => `${s.file} ${s.name}`));
    const stale = [...KNOWN_LONG].filter((k) => !stillLong.has(k));
    expect(stale, 'now within the limit: take it off KNOWN_LONG').toEqual([]);
  });

  it('the measure counts a function\'s lines, nested ones included, and names each kind', () => {
    const spans = functionSpans('x.ts', [
      'function outer() {', //  1
      '  const inner = () => {', // 2
      '    return 1;',
      '  };',
      '  return inner;',
      '}', // 6
      'class A {',
      '  constructor() {}', // 8
      '  get size() { return 1; }', // 9
      '  run() {', // 10
      '    const f = function () {',
      '    };',
      '  }',
      '}',
      'const o = { go: () => 1 };', // 15
    ].join('\n'));
    expect(spans).toEqual([
      { line: 1, name: 'outer', lines: 6 },
      { line: 2, name: 'inner', lines: 3 },
      { line: 8, name: 'constructor', lines: 1 },
      { line: 9, name: 'get size', lines: 1 },
      { line: 10, name: 'run', lines: 4 },
      { line: 11, name: 'f', lines: 2 },
      { line: 15, name: 'go', lines: 1 },
    ]);
  });
});
