/**
 * The signing keys as the admin handles them (admin API, console): which exist, and rotating them.
 * A rotation makes a new key the one that signs; the old ones go on checking what they signed
 * until the longest of it has expired (so no address or upload page handed out stops working),
 * or, with `revokeOld`, stop at once (a key or an address leaked: everything signed before is
 * refused, and must be asked for again).
 */
import { ApiError } from '../core/errors.js';
import type { KeyInfo, KeyRing } from '../keys/keyRing.js';
import type { SigningKeyPurpose } from '../storage/types.js';

export const SIGNING_KEY_PURPOSES: readonly SigningKeyPurpose[] = ['media', 'uploads', 'console'];

/** A key as the admin API shows it. */
export interface KeyView {
  id: string;
  signing: boolean;
  createdAt: string;
  /** When it stops checking anything; null for the key that signs. */
  expiresAt: string | null;
}

export class SigningKeysService {
  constructor(
    private readonly rings: Record<SigningKeyPurpose, KeyRing>,
    /** How long an old key of each purpose must go on checking: the longest life of what it signed, in ms. */
    private readonly longestUseMs: Record<SigningKeyPurpose, number>,
    private readonly now: () => number = Date.now,
  ) {}

  list(): Record<SigningKeyPurpose, KeyView[]> {
    return { media: this.rings.media.describe().map(view), uploads: this.rings.uploads.describe().map(view), console: this.rings.console.describe().map(view) };
  }

  async rotate(purpose: string | undefined, revokeOld: unknown): Promise<KeyView[]> {
    if (!SIGNING_KEY_PURPOSES.includes(purpose as SigningKeyPurpose)) {
      throw new ApiError('NOT_FOUND', `no signing keys "${purpose}" (there are: ${SIGNING_KEY_PURPOSES.join(', ')})`);
    }
    if (revokeOld !== undefined && typeof revokeOld !== 'boolean') throw new ApiError('INVALID_PARAMETER', 'revokeOld must be true or false');
    const p = purpose as SigningKeyPurpose;
    const now = this.now();
    return (await this.rings[p].rotate(revokeOld ? now : now + this.longestUseMs[p])).map(view);
  }
}

function view(k: KeyInfo): KeyView {
  return { id: k.id, signing: k.signing, createdAt: new Date(k.createdAt).toISOString(), expiresAt: k.expiresAt === undefined ? null : new Date(k.expiresAt).toISOString() };
}
