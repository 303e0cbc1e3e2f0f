/**
 * The admin token vop makes on first start goes on command lines (`vop backup --admin-token
 * <token>`): it never begins with '-', which the CLI's parser reads as an option (a cluster backup
 * test drew one and failed).
 */
import { describe, expect, it } from 'vitest';
import { newAdminToken } from '../../server/composition/dataDir.js';

describe('a generated admin token', () => {
  it('is 32 base64url characters, never beginning with a dash, and new each time', () => {
    // Without the rule, 3,000 tokens hold one beginning with '-' but for odds of 1 in 10^20.
    const tokens = Array.from({ length: 3_000 }, () => newAdminToken());
    for (const t of tokens) expect(t).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{31}$/);
    expect(new Set(tokens).size).toBe(tokens.length);
  });
});
