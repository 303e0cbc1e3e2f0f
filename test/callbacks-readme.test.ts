/**
 * The README's status-callback section is what application developers build their verifiers
 * from: its test vector and its retry schedule must be what the code sends.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildCallbackRequest } from '../server/callbacks/callbackRequest.js';
import { DEFAULT_CALLBACK_OPTIONS } from '../server/callbacks/options.js';
import { backoffDelay } from '../server/core/retry.js';
import { ROOT } from './helpers/server.js';

const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

describe('the README on the status callback', () => {
  it('shows a test vector that is exactly what vop sends, and that verifies independently', () => {
    const block = /```\nPOST \/vop\/callback HTTP\/1\.1\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'the request example in the README').toBeTruthy();
    const [head, body] = block!.split('\n\n') as [string, string];
    const headers = Object.fromEntries(head.split('\n').map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const fields = new URLSearchParams(body.trim());
    const secret = /AppSecret\s+`([0-9a-f]{40})`/.exec(readme)?.[1];
    expect(secret, 'the test vector secret').toBeTruthy();

    const sent = buildCallbackRequest({
      deliveryId: headers['webhook-id']!,
      appId: fields.get('AppId')!,
      secret: secret!,
      videoId: fields.get('VideoId')!,
      videoStatus: Number(fields.get('VideoStatus')),
      test: false,
      timestamp: Number(headers['webhook-timestamp']),
    });
    expect(sent.body).toBe(body.trim());
    expect(sent.headers['webhook-signature']).toBe(headers['webhook-signature']);
    // As an application would check it, from the README's own words.
    const mac = crypto.createHmac('sha256', secret!).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body.trim()}`).digest('base64');
    expect(headers['webhook-signature']).toBe(`v1,${mac}`);
    // Nothing the spec API accepts (issue 12, item 2).
    expect([...fields.keys()].sort()).toEqual(['AppId', 'Timestamp', 'VideoId', 'VideoStatus']);
  });

  it("has a verifier that accepts its test vector, and refuses it altered, late or with another secret", () => {
    const block = /```\nPOST \/vop\/callback HTTP\/1\.1\n([\s\S]*?)```/.exec(readme)![1]!;
    const [head, body] = block.split('\n\n') as [string, string];
    const headers = Object.fromEntries(head.split('\n').map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const secret = /AppSecret\s+`([0-9a-f]{40})`/.exec(readme)![1]!;
    const source = /function verifyCallback[\s\S]*?\n}\n/.exec(readme)?.[0];
    expect(source, "the README's verifyCallback").toBeTruthy();
    type Verify = (h: Record<string, string>, raw: string, now?: number) => boolean;
    const make = (appSecret: string) => new Function('crypto', 'APP_ID', 'APP_SECRET', `${source}\nreturn verifyCallback;`)(crypto, new URLSearchParams(body.trim()).get('AppId'), appSecret) as Verify;
    const at = Number(headers['webhook-timestamp']);
    expect(make(secret)(headers, body.trim(), at)).toBe(true);
    expect(make(secret)(headers, body.trim().replace('VideoStatus=1', 'VideoStatus=7'), at)).toBe(false);
    expect(make(secret)(headers, body.trim(), at + 3600)).toBe(false);
    expect(make(secret.replace(/^0/, '1'))(headers, body.trim(), at)).toBe(false);
  });

  it('gives the default retry schedule the code follows: 10 s doubling to 1 h, 32 attempts within 24 h', () => {
    const cfg = { ...DEFAULT_CALLBACK_OPTIONS.retry, jitter: false };
    const waits = [1, 2, 3, 9, 10, 11].map((n) => backoffDelay(cfg, n) / 1000);
    expect(waits).toEqual([10, 20, 40, 2560, 3600, 3600]);
    let at = 0;
    let retries = 0;
    while (at + backoffDelay(cfg, retries + 1) <= DEFAULT_CALLBACK_OPTIONS.windowMs) {
      at += backoffDelay(cfg, ++retries);
    }
    expect(retries + 1).toBe(32);
    expect(DEFAULT_CALLBACK_OPTIONS.timeoutMs).toBe(10_000);
    expect(readme).toContain('32 attempts in all');
  });
});
