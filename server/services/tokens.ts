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
  const expected = Buffer.from(computeToken(timestamp, secret), 'ascii');
  const given = Buffer.from(token.toLowerCase(), 'utf8');
  if (given.length !== expected.length) {
    crypto.timingSafeEqual(expected, expected); // same work either way
    return false;
  }
  return crypto.timingSafeEqual(given, expected);
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
