/**
 * Signed media addresses: a token in the path, `/media/s/<token>/play/<date>/<file>`, so that
 * `PlayURL + VideoURL` stays an address that works, and an HLS playlist's relative addresses carry
 * the token to every variant and segment as they resolve (Bunny's way, a token over a path prefix;
 * a query string would be lost at the first relative address).
 *
 * A token is `<key id>.<expiry>.<scope>.<mac>`: the expiry in Unix seconds (base 36), the scope
 * what it opens of the video (`c` its cover, `m` its media: renditions, downloads, HLS, text
 * tracks), the MAC an HMAC-SHA256 over the scope, the video's id and the expiry under the key
 * named, cut to 128 bits. It opens that part of that one video until it expires; checking it reads
 * no database. A cover's address is the most widely spread (list pages, link previews, a list
 * grant's answers): its token does not open the video.
 *
 * Tokens made before scopes (`<key id>.<expiry>.<mac>`, over the id and the expiry alone) open
 * every part of their video until they expire, at most a day after (MEDIA_TTL_RANGE): a player
 * under way keeps playing. No such token is made any more.
 */
import crypto from 'node:crypto';
import type { KeyRing } from './keyRing.js';

/** The path segment after `/media/` that says a token follows. */
export const SIGNED_SEGMENT = 's';

/** Why a token opens nothing. */
export type MediaTokenRefusal = 'malformed' | 'altered' | 'expired' | 'scope';

/** What a token opens of its video: its cover, or its media (everything else delivery serves). */
export type MediaScope = 'cover' | 'media';

const SCOPE_LETTERS: Record<MediaScope, string> = { cover: 'c', media: 'm' };

/** `<key id>.<expiry>[.<scope>].<mac>`; without the scope, a token made before scopes. */
const TOKEN_RE = /^([a-z0-9]{1,16})\.([a-z0-9]{1,10})\.(?:([cm])\.)?([A-Za-z0-9_-]{22})$/;

/** Checked tokens kept, so that a player's many requests (segments, Range) cost one HMAC, not one each. */
const MAX_CHECKED = 10_000;

export class MediaTokens {
  /** Tokens checked good, with the video each opens, what of it (all: a token made before scopes) and its expiry (Unix s). */
  private readonly checked = new Map<string, { videoId: string; scope: MediaScope | 'all'; expires: number }>();

  constructor(private readonly ring: KeyRing) {
    // A key ended (revoked, or its time up): tokens it signed are checked again, and refused.
    ring.onChange(() => this.checked.clear());
  }

  /**
   * A token for `videoId` good for at least `ttlSeconds`. The expiry is rounded up to a step of a
   * tenth of the lifetime (1 s to 60 s), so that every address handed out within one step is the
   * same: an application's list answer is made once per step, not once per call.
   */
  sign(videoId: string, ttlSeconds: number, scope: MediaScope, now = Date.now()): string {
    const key = this.ring.signing();
    const expires = expiryFor(ttlSeconds, now);
    const letter = SCOPE_LETTERS[scope];
    return `${key.id}.${expires.toString(36)}.${letter}.${mac(key.secret, `${letter}.${videoId}`, expires)}`;
  }

  /** What {@link sign} would name its expiry and key for a lifetime now: the same for every video. */
  epoch(ttlSeconds: number, now = Date.now()): string {
    return `${this.ring.signing().id}.${expiryFor(ttlSeconds, now)}`;
  }

  /** When a token {@link sign} makes now for `ttlSeconds` expires, in Unix seconds. */
  expiryFor(ttlSeconds: number, now = Date.now()): number {
    return expiryFor(ttlSeconds, now);
  }

  /** The expiry written in `token` (Unix seconds), unchecked; undefined for what is no token. */
  expiryOf(token: string): number | undefined {
    const m = TOKEN_RE.exec(token);
    return m ? parseInt(m[2]!, 36) : undefined;
  }

  /**
   * Whether `token` was checked good for `videoId` before and has not expired: from memory, with
   * no promise, so that a player's many requests under one token cost a map look-up.
   */
  known(token: string, videoId: string, scope: MediaScope, now = Date.now()): boolean {
    const hit = this.checked.get(token);
    return hit !== undefined && hit.videoId === videoId && (hit.scope === scope || hit.scope === 'all') && hit.expires > now / 1000;
  }

  /** Undefined if `token` opens `scope` of `videoId` now; otherwise why not. */
  async check(token: string, videoId: string, scope: MediaScope, now = Date.now()): Promise<MediaTokenRefusal | undefined> {
    const seconds = Math.floor(now / 1000);
    const m = TOKEN_RE.exec(token);
    if (!m) return 'malformed';
    const [, keyId, expiry, letter, given] = m as unknown as [string, string, string, string | undefined, string];
    const expires = parseInt(expiry, 36);
    // A key the ring does not hold (unknown, or ended): the address was altered or its key revoked.
    const secret = await this.ring.lookup(keyId);
    if (!secret) return 'altered';
    const expected = Buffer.from(mac(secret, letter === undefined ? videoId : `${letter}.${videoId}`, expires));
    if (!crypto.timingSafeEqual(expected, Buffer.from(given))) return 'altered';
    if (expires <= seconds) return 'expired';
    const opens = letter === undefined ? 'all' : letter === SCOPE_LETTERS.cover ? 'cover' : 'media';
    if (this.checked.size >= MAX_CHECKED) this.checked.delete(this.checked.keys().next().value!);
    this.checked.set(token, { videoId, scope: opens, expires });
    return opens === 'all' || opens === scope ? undefined : 'scope';
  }
}

/** Unix seconds: now + ttl, rounded up to a step of ttl / 10 within 1 to 60 seconds. */
function expiryFor(ttlSeconds: number, now: number): number {
  const step = Math.min(60, Math.max(1, Math.floor(ttlSeconds / 10)));
  return Math.ceil((Math.floor(now / 1000) + ttlSeconds) / step) * step;
}

/** The MAC of `subject` (`<scope letter>.<video id>`, or the video id alone for a token made before scopes) and `expires`. */
function mac(secret: Buffer, subject: string, expires: number): string {
  return crypto.createHmac('sha256', secret).update(`vop-media-v1.${subject}.${expires}`).digest('base64url').slice(0, 22);
}
