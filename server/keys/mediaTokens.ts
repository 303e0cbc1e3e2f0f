/**
 * Signed media addresses: a token in the path, `/media/s/<token>/play/<date>/<file>`, so that
 * `PlayURL + VideoURL` stays an address that works, and an HLS playlist's relative addresses carry
 * the token to every variant and segment as they resolve (Bunny's way, a token over a path prefix;
 * a query string would be lost at the first relative address).
 *
 * A token is `<key id>.<expiry>.<mac>`: the expiry in Unix seconds (base 36), the MAC an
 * HMAC-SHA256 over the video's id and the expiry under the key named, cut to 128 bits. It opens
 * the media of that one video until it expires; checking it reads no database.
 */
import crypto from 'node:crypto';
import type { KeyRing } from './keyRing.js';

/** The path segment after `/media/` that says a token follows. */
export const SIGNED_SEGMENT = 's';

/** Why a token opens nothing. */
export type MediaTokenRefusal = 'malformed' | 'altered' | 'expired';

const TOKEN_RE = /^([a-z0-9]{1,16})\.([a-z0-9]{1,10})\.([A-Za-z0-9_-]{22})$/;

/** Checked tokens kept, so that a player's many requests (segments, Range) cost one HMAC, not one each. */
const MAX_CHECKED = 10_000;

export class MediaTokens {
  /** Tokens checked good, with the video each opens and its expiry (Unix s). */
  private readonly checked = new Map<string, { videoId: string; expires: number }>();

  constructor(private readonly ring: KeyRing) {
    // A key ended (revoked, or its time up): tokens it signed are checked again, and refused.
    ring.onChange(() => this.checked.clear());
  }

  /**
   * A token for `videoId` good for at least `ttlSeconds`. The expiry is rounded up to a step of a
   * tenth of the lifetime (1 s to 60 s), so that every address handed out within one step is the
   * same: an application's list answer is made once per step, not once per call.
   */
  sign(videoId: string, ttlSeconds: number, now = Date.now()): string {
    const key = this.ring.signing();
    const expires = expiryFor(ttlSeconds, now);
    return `${key.id}.${expires.toString(36)}.${mac(key.secret, videoId, expires)}`;
  }

  /** What {@link sign} would name its expiry and key for a lifetime now: the same for every video. */
  epoch(ttlSeconds: number, now = Date.now()): string {
    return `${this.ring.signing().id}.${expiryFor(ttlSeconds, now)}`;
  }

  /** When a token {@link sign} makes now for `ttlSeconds` expires, in Unix seconds. */
  expiryFor(ttlSeconds: number, now = Date.now()): number {
    return expiryFor(ttlSeconds, now);
  }

  /**
   * Whether `token` was checked good for `videoId` before and has not expired: from memory, with
   * no promise, so that a player's many requests under one token cost a map look-up.
   */
  known(token: string, videoId: string, now = Date.now()): boolean {
    const hit = this.checked.get(token);
    return hit !== undefined && hit.videoId === videoId && hit.expires > now / 1000;
  }

  /** Undefined if `token` opens `videoId`'s media now; otherwise why not. */
  async check(token: string, videoId: string, now = Date.now()): Promise<MediaTokenRefusal | undefined> {
    const seconds = Math.floor(now / 1000);
    const m = TOKEN_RE.exec(token);
    if (!m) return 'malformed';
    const [, keyId, expiry, given] = m as unknown as [string, string, string, string];
    const expires = parseInt(expiry, 36);
    // A key the ring does not hold (unknown, or ended): the address was altered or its key revoked.
    const secret = await this.ring.lookup(keyId);
    if (!secret) return 'altered';
    const expected = Buffer.from(mac(secret, videoId, expires));
    if (!crypto.timingSafeEqual(expected, Buffer.from(given))) return 'altered';
    if (expires <= seconds) return 'expired';
    if (this.checked.size >= MAX_CHECKED) this.checked.delete(this.checked.keys().next().value!);
    this.checked.set(token, { videoId, expires });
    return undefined;
  }
}

/** Unix seconds: now + ttl, rounded up to a step of ttl / 10 within 1 to 60 seconds. */
function expiryFor(ttlSeconds: number, now: number): number {
  const step = Math.min(60, Math.max(1, Math.floor(ttlSeconds / 10)));
  return Math.ceil((Math.floor(now / 1000) + ttlSeconds) / step) * step;
}

function mac(secret: Buffer, videoId: string, expires: number): string {
  return crypto.createHmac('sha256', secret).update(`vop-media-v1.${videoId}.${expires}`).digest('base64url').slice(0, 22);
}
