import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { KeyRing } from '../keys/keyRing.js';
import type { UploadType } from './ingestOptions.js';

/** What an upload credential grants: uploading the file of one video, until it expires. */
export interface UploadGrant {
  videoId: string;
  appId: string;
  /** Unix ms. */
  expiresAt: number;
  /** needHandleSepcial as the upload page was opened with. */
  keepSource: boolean;
  /** Largest file this grant accepts (from its uploadType). */
  maxBytes: number;
  uploadType: UploadType;
  /**
   * Which secret the application had when the credential was issued ({@link UploadCredentials.secretTag}):
   * rotating the secret ends every credential issued before, as it ends the old tokens.
   */
  secretTag: string;
  /** The key that signed it (the ring's id), as {@link UploadCredentials.verify} read it. */
  keyId?: string;
}

/** The id the key kept before signing keys existed (`<dataDir>/upload-credential.key`) takes in the ring. */
export const LEGACY_KEY_ID = 'legacy';

/**
 * Signs and checks upload credentials: `<payload>.<mac>`, both base64url, the MAC an HMAC-SHA256
 * over the payload with a key only the server knows. The credential is scoped to one video and
 * expires, so a token read from an upload page cannot be replayed for longer, nor against the
 * spec API (which takes only AppId, Timestamp and Token).
 *
 * The keys are the 'uploads' ring's (keys/keyRing.ts): random, kept with the metadata, the same on
 * every node of a cluster (a page's upload resumes through any of them), and rotated by the admin.
 * The payload names its key (`i`); a credential without one was signed with the key kept in
 * `<dataDir>/upload-credential.key`, which the embedded mode takes into its ring as
 * {@link LEGACY_KEY_ID}, so pages opened before an upgrade keep working.
 */
export class UploadCredentials {
  constructor(private readonly ring: KeyRing) {}

  /** The key of `<dataDir>/upload-credential.key`, if there is a sound one: the embedded ring's first key. */
  static legacyKey(dataDir: string): { id: string; secret: string } | undefined {
    let text: string;
    try {
      text = fs.readFileSync(path.join(dataDir, 'upload-credential.key'), 'utf8').trim();
    } catch {
      return undefined;
    }
    return /^[0-9a-f]{64,}$/i.test(text) ? { id: LEGACY_KEY_ID, secret: text.toLowerCase() } : undefined;
  }

  /** Signs `grant` (whose secretTag {@link secretTag} made just before, with the same key). */
  sign(grant: UploadGrant): string {
    const key = this.ring.signing();
    const payload = Buffer.from(
      JSON.stringify({ v: grant.videoId, a: grant.appId, e: grant.expiresAt, k: grant.keepSource, m: grant.maxBytes, t: grant.uploadType, s: grant.secretTag, i: key.id }),
    ).toString('base64url');
    return `${payload}.${mac(key.secret, payload)}`;
  }

  /** The grant, or why the credential is refused ('malformed', 'forged' or 'expired'). */
  async verify(credential: string, now = Date.now()): Promise<{ grant: UploadGrant } | { refused: 'malformed' | 'forged' | 'expired' }> {
    const parts = credential.trim().split('.');
    if (parts.length !== 2 || parts[0]!.length > 2048) return { refused: 'malformed' };
    const [payload, given] = parts as [string, string];
    let raw: { v?: unknown; a?: unknown; e?: unknown; k?: unknown; m?: unknown; t?: unknown; s?: unknown; i?: unknown };
    try {
      raw = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return { refused: 'forged' };
    }
    if (raw === null || typeof raw !== 'object') return { refused: 'forged' };
    const keyId = raw.i === undefined ? LEGACY_KEY_ID : raw.i;
    // An unknown or ended key: as good as forged (its pages must be opened again).
    const secret = typeof keyId === 'string' && /^[a-z0-9]{1,16}$/.test(keyId) ? await this.ring.lookup(keyId) : undefined;
    if (!secret) return { refused: 'forged' };
    const expected = Buffer.from(mac(secret, payload));
    const mine = Buffer.from(given);
    if (mine.length !== expected.length || !crypto.timingSafeEqual(mine, expected)) return { refused: 'forged' };
    if (
      typeof raw.v !== 'string' || typeof raw.a !== 'string' || typeof raw.e !== 'number' || typeof raw.k !== 'boolean' ||
      typeof raw.m !== 'number' || (raw.t !== 'flash' && raw.t !== 'silverlight') || typeof raw.s !== 'string'
    ) {
      return { refused: 'malformed' };
    }
    if (raw.e <= now) return { refused: 'expired' };
    return { grant: { videoId: raw.v, appId: raw.a, expiresAt: raw.e, keepSource: raw.k, maxBytes: raw.m, uploadType: raw.t, secretTag: raw.s, keyId: keyId as string } };
  }

  /**
   * A tag of an application's secret for its credentials to carry: a MAC under the signing key, so
   * that it says nothing of the secret to whoever reads a page, and changes when the secret does.
   */
  secretTag(appSecret: string): string {
    return tag(this.ring.signing().secret, appSecret);
  }

  /** Whether `grant` (as {@link verify} gave it) was issued under `appSecret`, the application's secret now. */
  issuedUnder(grant: UploadGrant, appSecret: string): boolean {
    const secret = grant.keyId === undefined ? undefined : this.ring.find(grant.keyId);
    if (!secret) return false;
    const now = Buffer.from(tag(secret, appSecret));
    const then = Buffer.from(grant.secretTag);
    return now.length === then.length && crypto.timingSafeEqual(now, then);
  }
}

function mac(secret: Buffer, payload: string): string {
  return crypto.createHmac('sha256', secret).update(`vop-upload-v1.${payload}`).digest('base64url');
}

function tag(secret: Buffer, appSecret: string): string {
  return crypto.createHmac('sha256', secret).update(`vop-upload-secret-v1.${appSecret}`).digest('base64url').slice(0, 22);
}
