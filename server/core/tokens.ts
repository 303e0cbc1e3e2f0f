import crypto from 'node:crypto';

/** Spec 5.3: Token = lowercase hex MD5 of `<Timestamp><AppSecret>`, UTF-8. */
export function computeToken(timestamp: string, secret: string): string {
  return crypto.createHash('md5').update(`${timestamp}${secret}`, 'utf8').digest('hex');
}

/**
 * True if `token` is the spec's token for this timestamp and secret. Uppercase hex is accepted
 * too (some MD5 helpers print it). Compared in constant time, so the answer's timing says nothing
 * about how much of a guess was right.
 */
export function tokenMatches(token: string, timestamp: string, secret: string): boolean {
  const expected = expectedToken(timestamp, secret);
  const given = Buffer.from(token.toLowerCase(), 'utf8');
  if (given.length !== expected.length) {
    crypto.timingSafeEqual(expected, expected); // same work either way
    return false;
  }
  return crypto.timingSafeEqual(given, expected);
}

/**
 * Expected tokens as recently computed, by timestamp and secret. An application server sends
 * the same Timestamp (whole seconds) and Token on all its calls within a second, so most calls
 * would hash the same input again: the MD5 was a twentieth of a detail call's CPU. A hit or miss
 * depends only on whether that timestamp was asked for lately, never on the token given.
 */
const expectedTokens = new Map<string, Buffer>();
const EXPECTED_TOKENS_KEPT = 1_024;

function expectedToken(timestamp: string, secret: string): Buffer {
  const key = `${timestamp.length}:${timestamp}${secret}`; // the length makes the pair unambiguous
  let expected = expectedTokens.get(key);
  if (!expected) {
    if (expectedTokens.size >= EXPECTED_TOKENS_KEPT) expectedTokens.clear();
    expected = Buffer.from(computeToken(timestamp, secret), 'ascii');
    expectedTokens.set(key, expected);
  }
  return expected;
}

/** A new AppSecret: 160 random bits as 40 hex characters (the issue asks for at least 128). */
export function generateSecret(): string {
  return crypto.randomBytes(20).toString('hex');
}

/** A new AppId: 96 random bits as 24 hex characters; not secret, but not guessable either. */
export function generateAppId(): string {
  return crypto.randomBytes(12).toString('hex');
}

/** Constant-time comparison of two strings of any length (admin tokens, scoped credentials). */
export function safeEqual(a: string, b: string): boolean {
  const ha = crypto.createHash('sha256').update(a).digest();
  const hb = crypto.createHash('sha256').update(b).digest();
  return crypto.timingSafeEqual(ha, hb);
}

/**
 * About how many bits of guessing a token given by a person holds: its length times the bits of
 * the smallest alphabet it is written in (digits, hex, letters of one case, both cases with
 * digits, anything printable), less when a handful of characters is all it uses. Right for
 * random text, an upper bound for a phrase: it catches the short and the repetitive.
 */
export function tokenStrengthBits(token: string): number {
  const chars = [...token];
  const alphabet = /^[0-9]+$/.test(token)
    ? 10
    : /^[0-9a-f]+$/i.test(token) && !/[g-z]/i.test(token)
      ? 16
      : /^[a-z]+$/.test(token) || /^[A-Z]+$/.test(token)
        ? 26
        : /^[A-Za-z0-9_-]+$/.test(token)
          ? 64
          : 94;
  // A handful of characters repeated (`aaaa…`, `abab…`) holds only what that handful gives.
  const distinct = new Set(chars).size;
  return Math.floor(chars.length * Math.log2(distinct < 8 ? Math.max(2, distinct) : alphabet));
}

/** The fewest bits of guessing an admin token should hold: what a generated one holds is 192. */
export const ADMIN_TOKEN_MIN_BITS = 128;
