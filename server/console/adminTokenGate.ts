import { ApiError } from '../core/errors.js';
import { addressLimitKey } from '../core/addressLimitKey.js';
import { FailureLimiter, type FailureLimitOptions } from '../core/failureLimiter.js';
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
 * In cluster mode the failures count in the database (`shared`, Stores.counters), so the limit
 * is one for all nodes together, not one per node (issue 11, item 5); the embedded mode counts in
 * this process. The right token is recognised before any counting: it never waits for the
 * database, and still passes while the database is unreachable.
 */
export class AdminTokenGate {
  private readonly failures: FailureLimiter;

  /** `shared`: counters every node of a cluster sees; absent, failures count in this process. */
  constructor(
    private readonly token: string,
    private readonly limit: FailureLimitOptions = DEFAULT_ADMIN_TOKEN_LIMIT,
    private readonly shared?: WindowCounters,
  ) {
    this.failures = new FailureLimiter(limit);
  }

  /** Resolves if `candidate` is the token; rejects with ADMIN_UNAUTHORIZED (with `wrong` as the detail) or TOO_MANY_AUTH_FAILURES. */
  async check(candidate: string, address: string, wrong?: string): Promise<void> {
    if (safeEqual(candidate, this.token)) return;
    if (!this.shared) return this.verifyHere(candidate, address, wrong);
    // One upsert that counts this failure and answers the count with it: two nodes failing the
    // same address at once each see the other's failure, so exactly `maxFailures` get 401.
    const failures = await this.shared.hit(sharedKey(address), this.limit.windowMs);
    if (failures > this.limit.maxFailures) throw tooMany();
    throw new ApiError('ADMIN_UNAUTHORIZED', wrong);
  }

  /** The embedded mode's check: failures counted in this process. */
  private verifyHere(candidate: string, address: string, wrong?: string): void {
    if (safeEqual(candidate, this.token)) return;
    // Counted per /64 for IPv6 (core/addressLimitKey.ts).
    const key = addressLimitKey(address);
    if (this.failures.isLimited(key)) throw tooMany();
    this.failures.recordFailure(key);
    throw new ApiError('ADMIN_UNAUTHORIZED', wrong);
  }
}

/** The shared counter of wrong admin tokens from `address` (per /64 for IPv6: core/addressLimitKey.ts). */
function sharedKey(address: string): string {
  return `admin-token-failures:${addressLimitKey(address)}`;
}

function tooMany(): ApiError {
  return new ApiError('TOO_MANY_AUTH_FAILURES', 'too many wrong admin tokens from this address; wait a minute');
}
