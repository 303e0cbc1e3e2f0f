import { ApiError } from '../core/errors.js';
import { addressLimitKey } from '../core/addressLimitKey.js';
import type { FailureLimitOptions } from '../core/failureLimit.js';
import { safeEqual } from '../core/tokens.js';
import type { WindowCounters } from '../storage/types.js';

/** Wrong admin tokens allowed per address and minute, by the console's login and bearer tokens together. */
export const DEFAULT_ADMIN_TOKEN_LIMIT: FailureLimitOptions = { windowMs: 60_000, maxFailures: 10 };

/**
 * The one check of the admin token, for the console's login and the `Authorization: Bearer`
 * header alike, with one failure limit per address (issue 12, item 4). The right token always
 * passes, even from an address past its limit: whoever guesses from the admin's own address (a
 * shared proxy, the same machine) must not lock the admin out. A wrong one from such an address
 * gets 106 (429).
 *
 * The failures count in Stores.counters: in cluster mode the database's, so the limit is one for
 * all nodes together, not one per node (issue 11, item 5); in the embedded mode this process's
 * memory. The right token is recognised before any counting: it never waits for the database,
 * and still passes while the database is unreachable.
 */
export class AdminTokenGate {
  /** `counters`: where the failures count (Stores.counters). */
  constructor(
    private readonly token: string,
    private readonly counters: WindowCounters,
    private readonly limit: FailureLimitOptions = DEFAULT_ADMIN_TOKEN_LIMIT,
  ) {}

  /** Resolves if `candidate` is the token; rejects with ADMIN_UNAUTHORIZED (with `wrong` as the detail) or TOO_MANY_AUTH_FAILURES. */
  async check(candidate: string, address: string, wrong?: string): Promise<void> {
    if (safeEqual(candidate, this.token)) return;
    // One hit that counts this failure and answers the count with it (in cluster mode one upsert):
    // two nodes failing the same address at once each see the other's failure, so exactly
    // `maxFailures` get 401.
    const failures = await this.counters.hit(failureKey(address), this.limit.windowMs);
    if (failures > this.limit.maxFailures) throw tooMany();
    throw new ApiError('ADMIN_UNAUTHORIZED', wrong);
  }
}

/** The counter of wrong admin tokens from `address` (per /64 for IPv6: core/addressLimitKey.ts). */
function failureKey(address: string): string {
  return `admin-token-failures:${addressLimitKey(address)}`;
}

function tooMany(): ApiError {
  return new ApiError('TOO_MANY_AUTH_FAILURES', 'too many wrong admin tokens from this address; wait a minute');
}
