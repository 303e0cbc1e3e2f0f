import crypto from 'node:crypto';
import path from 'node:path';
import { loadOrCreateSecret } from '../storage/secretFile.js';
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
}

/**
 * Signs and checks upload credentials: `<payload>.<mac>`, both base64url, the MAC an HMAC-SHA256
 * over the payload with a key only the server knows. The credential is scoped to one video and
 * expires, so a token read from an upload page cannot be replayed for longer, nor against the
 * spec API (which takes only AppId, Timestamp and Token).
 */
export class UploadCredentials {
  private constructor(private readonly key: Buffer) {}

  /** Loads the key from `<dataDir>/upload-credential.key`, creating it (0600) on first start. */
  static open(dataDir: string): UploadCredentials {
    const hex = loadOrCreateSecret(
      path.join(dataDir, 'upload-credential.key'),
      () => crypto.randomBytes(32).toString('hex'),
      // Shorter (or not hex: Buffer.from drops from the first bad digit) is replaced.
      (text) => Buffer.from(text, 'hex').length >= 32,
    );
    return new UploadCredentials(Buffer.from(hex, 'hex'));
  }

  /**
   * The key derived from a secret every node of a cluster shares (the admin token, the same on
   * every node), instead of each node's own file: a credential one node gave an upload page is
   * good on every node, so that page's upload resumes through any of them.
   */
  static shared(secret: string): UploadCredentials {
    return new UploadCredentials(crypto.createHmac('sha256', secret).update('vop upload credentials v1').digest());
  }

  sign(grant: UploadGrant): string {
    const payload = Buffer.from(
      JSON.stringify({ v: grant.videoId, a: grant.appId, e: grant.expiresAt, k: grant.keepSource, m: grant.maxBytes, t: grant.uploadType, s: grant.secretTag }),
    ).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** The grant, or why the credential is refused ('malformed', 'forged' or 'expired'). */
  verify(credential: string, now = Date.now()): { grant: UploadGrant } | { refused: 'malformed' | 'forged' | 'expired' } {
    const parts = credential.trim().split('.');
    if (parts.length !== 2 || parts[0]!.length > 2048) return { refused: 'malformed' };
    const [payload, mac] = parts as [string, string];
    const expected = Buffer.from(this.mac(payload));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) return { refused: 'forged' };
    let raw: { v?: unknown; a?: unknown; e?: unknown; k?: unknown; m?: unknown; t?: unknown; s?: unknown };
    try {
      raw = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return { refused: 'malformed' };
    }
    if (
      typeof raw.v !== 'string' || typeof raw.a !== 'string' || typeof raw.e !== 'number' || typeof raw.k !== 'boolean' ||
      typeof raw.m !== 'number' || (raw.t !== 'flash' && raw.t !== 'silverlight') || typeof raw.s !== 'string'
    ) {
      return { refused: 'malformed' };
    }
    if (raw.e <= now) return { refused: 'expired' };
    return { grant: { videoId: raw.v, appId: raw.a, expiresAt: raw.e, keepSource: raw.k, maxBytes: raw.m, uploadType: raw.t, secretTag: raw.s } };
  }

  /**
   * A tag of an application's secret for its credentials to carry: a MAC under this key, so that
   * it says nothing of the secret to whoever reads a page, and changes when the secret does.
   */
  secretTag(appSecret: string): string {
    return crypto.createHmac('sha256', this.key).update(`vop-upload-secret-v1.${appSecret}`).digest('base64url').slice(0, 22);
  }

  /** Whether `grant` was issued under `appSecret`, the application's secret now. */
  issuedUnder(grant: UploadGrant, appSecret: string): boolean {
    const now = Buffer.from(this.secretTag(appSecret));
    const then = Buffer.from(grant.secretTag);
    return now.length === then.length && crypto.timingSafeEqual(now, then);
  }

  private mac(payload: string): string {
    return crypto.createHmac('sha256', this.key).update(`vop-upload-v1.${payload}`).digest('base64url');
  }
}
