/** The `signing_keys` table's rows and their records (storage/types.ts SigningKey), for both engines. */
import type { SigningKey, SigningKeyPurpose } from '../types.js';

export type SigningKeyRow = {
  purpose: string;
  id: string;
  secret: string;
  created_at: number | string;
  expires_at: number | string | null;
};

export function toSigningKey(r: SigningKeyRow): SigningKey {
  // PostgreSQL's BIGINT reads back as a string.
  const key: SigningKey = { purpose: r.purpose as SigningKeyPurpose, id: r.id, secret: r.secret, createdAt: Number(r.created_at) };
  if (r.expires_at !== null) key.expiresAt = Number(r.expires_at);
  return key;
}
