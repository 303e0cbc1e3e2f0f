/**
 * {@link SigningKeyStore} in PostgreSQL (`signing_keys`, migration 14): the same keys for every
 * node. Adding the first key and rotating lock the table against each other, so two nodes starting
 * at once store one first key, and two rotations at once leave one key signing.
 */
import type { SigningKey, SigningKeyPurpose, SigningKeyStore } from '../types.js';
import { toSigningKey, type SigningKeyRow } from '../rows/signingKeyRows.js';
import type { PostgresDatabase, Queryable } from './postgresDatabase.js';

const LIVE = 'purpose = $1 AND (expires_at IS NULL OR expires_at > $2)';

export class PostgresSigningKeys implements SigningKeyStore {
  constructor(private readonly db: Pick<PostgresDatabase, 'query' | 'transaction'>) {}

  list(purpose: SigningKeyPurpose, now: number): Promise<SigningKey[]> {
    return live(this.db, purpose, now);
  }

  addFirst(key: SigningKey, now: number): Promise<SigningKey[]> {
    return this.db.transaction(async (tx) => {
      // SHARE ROW EXCLUSIVE conflicts with itself: one adder or rotator at a time; readers go on.
      await tx.query('LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE');
      const before = await live(tx, key.purpose, now);
      if (before.length > 0) return before;
      await insert(tx, key);
      return live(tx, key.purpose, now);
    });
  }

  rotate(key: SigningKey, othersEndAt: number, now: number): Promise<SigningKey[]> {
    return this.db.transaction(async (tx) => {
      await tx.query('LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE');
      await tx.query('UPDATE signing_keys SET expires_at = $2 WHERE purpose = $1 AND (expires_at IS NULL OR expires_at > $2)', [key.purpose, othersEndAt]);
      await tx.query('DELETE FROM signing_keys WHERE purpose = $1 AND expires_at <= $2', [key.purpose, now]);
      await insert(tx, key);
      return live(tx, key.purpose, now);
    });
  }
}

async function live(db: Queryable, purpose: SigningKeyPurpose, now: number): Promise<SigningKey[]> {
  const { rows } = await db.query<SigningKeyRow>(`SELECT * FROM signing_keys WHERE ${LIVE} ORDER BY created_at DESC, id`, [purpose, now]);
  return rows.map(toSigningKey);
}

async function insert(db: Queryable, key: SigningKey): Promise<void> {
  await db.query('INSERT INTO signing_keys (purpose, id, secret, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)', [key.purpose, key.id, key.secret, key.createdAt, key.expiresAt ?? null]);
}
