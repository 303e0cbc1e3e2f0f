/**
 * The status callback's section of docs/interface.md is what application developers build their
 * verifiers from: its test vector, its verifier, its retry schedule and its table of defaults must
 * be what the code sends. Everything is read from the page's structure (the `http` code block,
 * the `js` code block, the tables), never from its sentences (see docTables.ts).
 */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildCallbackRequest } from '../../server/callbacks/callbackRequest.js';
import { DEFAULT_CALLBACK_OPTIONS } from '../../server/callbacks/options.js';
import { resolveOptions } from '../../server/config.js';
import { backoffDelay } from '../../server/core/retry.js';
import { at, code, fencedBlocks, inDocUnits, markedTable, quantity, readDoc, section, tables } from '../docTables.js';

const callback = section(readDoc('docs/interface.md'), 'The status callback (6)');

/** The test vector: the request (headers, body) of the `http` block and the AppSecret of its table. */
function testVector(): { headers: Record<string, string>; body: string; secret: string } {
  expect(callback, 'docs/interface.md has a "## The status callback (6)" section').toBeDefined();
  const block = fencedBlocks(callback!).find((b) => b.info === 'http' && b.body.startsWith('POST '));
  expect(block, 'the section has the request as an ```http block').toBeDefined();
  const [head, body] = block!.body.split('\n\n') as [string, string];
  const headers = Object.fromEntries(head.split('\n').slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const secret = code(markedTable(callback!, 'test-vector', 'the callback section').find((r) => r['test vector'] === 'AppSecret')?.value ?? '');
  expect(secret, 'the test vector table gives the AppSecret').toMatch(/^[0-9a-f]{40}$/);
  return { headers, body: body.trim(), secret };
}

/** The page's `verifyCallback`: the function, cut from the `js` block at its closing line. */
function verifierSource(): string {
  const block = fencedBlocks(callback!).find((b) => b.info === 'js' && b.body.includes('function verifyCallback('));
  expect(block, "the section's js block with verifyCallback").toBeDefined();
  const lines = block!.body.split('\n');
  const start = lines.findIndex((l) => l.startsWith('function verifyCallback('));
  const end = lines.findIndex((l, i) => i > start && l === '}');
  return lines.slice(start, end + 1).join('\n');
}

describe('docs/interface.md on the status callback', () => {
  it('shows a test vector that is exactly what vop sends, and that verifies independently', () => {
    const { headers, body, secret } = testVector();
    const fields = new URLSearchParams(body);
    const sent = buildCallbackRequest({
      deliveryId: headers['webhook-id']!,
      appId: fields.get('AppId')!,
      secret,
      videoId: fields.get('VideoId')!,
      videoStatus: Number(fields.get('VideoStatus')),
      test: false,
      timestamp: Number(headers['webhook-timestamp']),
    });
    expect(sent.body).toBe(body);
    expect(sent.headers['webhook-signature']).toBe(headers['webhook-signature']);
    // As an application would check it: HMAC-SHA256 of id.timestamp.body with the secret's bytes.
    const mac = crypto.createHmac('sha256', secret).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`).digest('base64');
    expect(headers['webhook-signature']).toBe(`v1,${mac}`);
    // Nothing the spec API accepts: no Token in a callback.
    expect([...fields.keys()].sort()).toEqual(['AppId', 'Timestamp', 'VideoId', 'VideoStatus']);
  });

  it('has a verifier that accepts its test vector, and refuses it altered, late or with another secret', () => {
    const { headers, body, secret } = testVector();
    const source = verifierSource();
    type Verify = (h: Record<string, string>, raw: string, now?: number) => boolean;
    const make = (appSecret: string) => new Function('crypto', 'APP_ID', 'APP_SECRET', `${source}\nreturn verifyCallback;`)(crypto, new URLSearchParams(body).get('AppId'), appSecret) as Verify;
    const now = Number(headers['webhook-timestamp']);
    expect(make(secret)(headers, body, now)).toBe(true);
    expect(make(secret)(headers, body.replace('VideoStatus=1', 'VideoStatus=7'), now)).toBe(false);
    expect(make(secret)(headers, body, now + 3600)).toBe(false);
    expect(make(secret.replace(/^0/, '1'))(headers, body, now)).toBe(false);
  });

  it('gives the retry schedule the code follows, wait by wait, and the number of retries within the window', () => {
    const cfg = { ...DEFAULT_CALLBACK_OPTIONS.retry, jitter: false };
    // The retries the window allows, as the queue schedules them (each counted from the last).
    const starts: number[] = [0];
    while (starts.at(-1)! + backoffDelay(cfg, starts.length) <= DEFAULT_CALLBACK_OPTIONS.windowMs) {
      starts.push(starts.at(-1)! + backoffDelay(cfg, starts.length));
    }
    const lastRetry = starts.length - 1;

    const schedule = tables(callback!).find((t) => t.header[0] === 'retry');
    expect(schedule, 'the schedule table (first column "retry")').toBeDefined();
    const byName = new Map(schedule!.rows.map((r) => [r.retry!, r]));
    const waits = byName.get('waits');
    const atAbout = byName.get('at about');
    expect(waits && atAbout, 'the schedule has the rows "waits" and "at about"').toBeTruthy();
    for (const column of schedule!.header.slice(1)) {
      // A column is one retry ("3") or a run of them ("10 … 31"), its cells likewise.
      const [first, last = first] = column.split('…').map((n) => Number(n.trim()));
      expect(Number.isInteger(first) && Number.isInteger(last), `column "${column}"`).toBe(true);
      const [waitFirst] = waits![column]!.split('…');
      expect(quantity(waitFirst!), `wait before retry ${first}`).toBe(backoffDelay(cfg, first!));
      const [atFirst, atLast = atFirst] = atAbout![column]!.split('…');
      // "at about": to the minute past the first hour.
      expect(Math.abs(quantity(atFirst!) - starts[first!]!), `time of retry ${first}`).toBeLessThan(60_000);
      expect(Math.abs(quantity(atLast!) - starts[last!]!), `time of retry ${last}`).toBeLessThan(60_000);
      if (column === schedule!.header.at(-1)) expect(last, 'the last retry the window allows').toBe(lastRetry);
    }
    expect(lastRetry + 1, 'attempts in all').toBe(32);
  });

  it("gives the callbacks option's defaults in its table, row for row", () => {
    const defaults = resolveOptions({ dataDir: 'x' });
    const rows = markedTable(callback!, 'callbacks', 'the callback section');
    const names = rows.map((r) => code(r['in the code']!));
    for (const key of ['retry.baseDelayMs', 'retry.maxDelayMs', 'windowMs', 'timeoutMs', 'sweepMs', 'responseExcerptBytes', 'concurrency']) {
      expect(names, `a row for callbacks.${key}`).toContain(`callbacks.${key}`);
    }
    for (const row of rows) {
      const name = code(row['in the code']!);
      const value = at(defaults, name);
      expect(typeof value, `${name} is an option of createServer`).toBe('number');
      expect(quantity(row.value!), name).toBe(inDocUnits(name, value as number));
    }
  });
});
