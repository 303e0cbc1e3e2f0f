/**
 * {@link SigningKeyStore} in the embedded database. One process writes it, and DurableDatabase
 * runs a write in memory before it returns, so a check and the write after it with no await
 * between are one step.
 */
import type { SigningKey, SigningKeyPurpose, SigningKeyStore } from '../types.js';
import { toSigningKey, type SigningKeyRow } from '../rows/signingKeyRows.js';
import type { DurableDatabase, SqlParam } from './durableDatabase.js';

const LIVE = 'purpose = ? AND (expires_at IS NULL OR expires_at > ?)';

export class SqlJsSigningKeys implements SigningKeyStore {
  constructor(private readonly db: DurableDatabase) {}

  async list(purpose: SigningKeyPurpose, now: number): Promise<SigningKey[]> {
    return this.db.all<SigningKeyRow>(`SELECT * FROM signing_keys WHERE ${LIVE} ORDER BY created_at DESC, id`, [purpose, now]).map(toSigningKey);
  }

  async addFirst(key: SigningKey, now: number): Promise<SigningKey[]> {
    const live = await this.list(key.purpose, now);
    if (live.length > 0) return live;
    await this.db.write([insert(key)]);
    return this.list(key.purpose, now);
  }

  async rotate(key: SigningKey, othersEndAt: number, now: number): Promise<SigningKey[]> {
    await this.db.write([
      ['UPDATE signing_keys SET expires_at = ? WHERE purpose = ? AND (expires_at IS NULL OR expires_at > ?)', [othersEndAt, key.purpose, othersEndAt]],
      ['DELETE FROM signing_keys WHERE purpose = ? AND expires_at <= ?', [key.purpose, now]],
      insert(key),
    ]);
    return this.list(key.purpose, now);
  }
}

function insert(key: SigningKey): [string, SqlParam[]] {
  return ['INSERT INTO signing_keys (purpose, id, secret, created_at, expires_at) VALUES (?, ?, ?, ?, ?)', [key.purpose, key.id, key.secret, key.createdAt, key.expiresAt ?? null]];
}
