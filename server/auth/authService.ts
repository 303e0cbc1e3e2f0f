import { ApiError, RESULT_CODES } from '../core/errors.js';
import type { AppRecord, Stores } from '../storage/types.js';
import { addressLimitKey } from '../core/addressLimitKey.js';
import { type ApiCaller, inApiNetworks, shownAddress } from './apiNetworks.js';
import type { FailureLimitOptions } from '../core/failureLimit.js';
import { tokenMatches } from '../core/tokens.js';

/** Options of {@link AuthService}. */
export interface AuthOptions {
  /** Spec 5.2: a Timestamp may differ from server time by at most this many seconds. */
  maxClockSkewSeconds: number;
  /** Failed authentications allowed per client address; past it, that address is refused outright. */
  perAddress: FailureLimitOptions;
  /** Failed authentications allowed per AppId; past it, failing calls for that app get 106, good ones pass. */
  perApp: FailureLimitOptions;
}

export const DEFAULT_AUTH_OPTIONS: AuthOptions = {
  maxClockSkewSeconds: 600,
  perAddress: { windowMs: 60_000, maxFailures: 30 },
  perApp: { windowMs: 60_000, maxFailures: 100 },
};

/** The three values of spec section 5, as the caller sent them. */
export interface Credentials {
  appId: string | undefined;
  timestamp: string | undefined;
  token: string | undefined;
}

const TIMESTAMP_RE = /^\d{1,12}$/;

/** Failures that say the AppId names no application: never a key of the per-app limit. */
const UNKEYED_FAILURES: ReadonlySet<string> = new Set([RESULT_CODES.MISSING_PARAMETER.code, RESULT_CODES.APP_NOT_FOUND.code]);

/**
 * Spec section 5: checks AppId, Timestamp and Token, in that order of cheapness, and limits how
 * often a client may fail.
 *
 * Limiting: an address that keeps failing is refused before any check (it is misconfigured or
 * guessing, and good callers are elsewhere). An AppId that keeps failing from many addresses is
 * not locked out, since that would let anyone lock out the real application server: past its
 * limit only the failing calls change answer (106 instead of the failure), good tokens still pass.
 */
export class AuthService {
  /** Per AppId, the latest caller's address as given and as shown: the same caller again costs no address parsing. */
  private readonly lastCaller = new Map<string, { raw: string; shown: string }>();

  /**
   * `stores.counters`: where failures count: in cluster mode every node sees them, so the failure
   * limits hold across nodes; embedded, this process's memory. `stores.apiCallers`: the recent
   * callers, every node's in cluster mode.
   */
  constructor(
    private readonly stores: Pick<Stores, 'apps' | 'counters' | 'apiCallers'>,
    private readonly opts: AuthOptions = DEFAULT_AUTH_OPTIONS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Resolves with the calling application, or throws an {@link ApiError}.
   *
   * An address past its limit is still let in with valid credentials (issue 12, item 4): behind
   * a proxy, or on a shared NAT, the real application server shares its address with whoever
   * fails, and must not be locked out by them. Everything else from that address gets 106.
   *
   * `apiCall`: the call is one the spec makes from the application's server (4.1 to 4.4, the
   * multipart upload), so the application's API networks apply (auth/apiNetworks.ts); the
   * browser paths the page's values open (the upload page, tus) leave it out. The networks are
   * checked only once the token is good, so that a refusal says nothing about a guessed token;
   * that refusal counts towards no failure limit: it is not guessing, and counted per AppId it
   * would let any visitor of the application's pages turn its server's failures into 106.
   */
  async authenticate(creds: Credentials, clientAddress: string, opts: { apiCall?: boolean } = {}): Promise<AppRecord> {
    const now = this.now();
    // Counted per /64 for IPv6 (core/addressLimitKey.ts).
    const addressKey = addressLimitKey(clientAddress);
    let app: AppRecord;
    try {
      app = await this.check(creds, now);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      // Asked only once the check failed: good credentials pass whatever the address's count
      // (above), so a good call costs no read of it (in cluster mode a round trip to the database).
      if (await this.isLimited('address', addressKey, now)) throw new ApiError('TOO_MANY_AUTH_FAILURES', 'try again in a minute');
      await this.recordFailure('address', addressKey, now);
      // Keyed only on an AppId that exists: a made-up one (of any length) adds no key.
      if (creds.appId && !UNKEYED_FAILURES.has(err.code)) {
        const limited = await this.isLimited('app', creds.appId, now);
        await this.recordFailure('app', creds.appId, now);
        if (limited) throw new ApiError('TOO_MANY_AUTH_FAILURES', 'too many failures for this AppId; try again in a minute');
      }
      throw err;
    }
    if (opts.apiCall) {
      const allowed = inApiNetworks(clientAddress, app.apiNetworks);
      this.noteCaller(app.appId, clientAddress, allowed, now);
      if (!allowed) {
        throw new ApiError('ACCESS_DENIED', `this application's API calls are accepted only from its API networks (apiNetworks), and ${clientAddress} is not in them`);
      }
    }
    return app;
  }

  /**
   * The last few addresses an application's API calls came from, newest first (in cluster mode
   * those every node saw, each `lastSeen` up to a minute behind: postgres/postgresApiCallers.ts).
   */
  async recentCallers(appId: string): Promise<ApiCaller[]> {
    return this.stores.apiCallers.recent(appId);
  }

  /**
   * Records the caller in the background: an API call never waits for it, and a failed write
   * (the database's, in cluster mode) is the store's to try again on a later call.
   */
  private noteCaller(appId: string, address: string, allowed: boolean, now: number): void {
    const last = this.lastCaller.get(appId);
    const shown = last?.raw === address ? last.shown : shownAddress(address);
    // Keys are AppIds that passed the token check: bounded by the applications there are.
    if (last?.raw !== address) this.lastCaller.set(appId, { raw: address, shown });
    this.stores.apiCallers.record(appId, shown, allowed, now).catch(() => undefined);
  }

  /** Whether `key` (an address key, or an AppId that exists) has used up its failures. */
  private async isLimited(kind: 'address' | 'app', key: string, now: number): Promise<boolean> {
    const limit = kind === 'address' ? this.opts.perAddress : this.opts.perApp;
    return (await this.stores.counters.count(failureKey(kind, key), limit.windowMs, now)) >= limit.maxFailures;
  }

  private async recordFailure(kind: 'address' | 'app', key: string, now: number): Promise<void> {
    await this.stores.counters.hit(failureKey(kind, key), (kind === 'address' ? this.opts.perAddress : this.opts.perApp).windowMs, now);
  }

  /** The checks alone, without limiting (the widget page reuses them). */
  async check(creds: Credentials, now = this.now()): Promise<AppRecord> {
    const { appId, timestamp, token } = creds;
    if (!appId) throw new ApiError('MISSING_PARAMETER', 'AppId');
    if (!timestamp) throw new ApiError('MISSING_PARAMETER', 'Timestamp');
    if (!token) throw new ApiError('MISSING_PARAMETER', 'Token');
    const app = await this.stores.apps.get(appId);
    if (!app) throw new ApiError('APP_NOT_FOUND');
    if (app.disabled) throw new ApiError('APP_DISABLED');
    if (!TIMESTAMP_RE.test(timestamp)) throw new ApiError('TIMESTAMP_MALFORMED', 'Timestamp must be Unix time in whole seconds');
    const skew = Math.abs(Number(timestamp) - Math.floor(now / 1000));
    if (skew > this.opts.maxClockSkewSeconds) {
      throw new ApiError('TIMESTAMP_EXPIRED', `Timestamp differs from server time by ${skew} s (at most ${this.opts.maxClockSkewSeconds} s allowed)`);
    }
    if (!tokenMatches(token, timestamp, app.secret)) throw new ApiError('SECRET_KEY_ERROR');
    return app;
  }
}

/** The counter of a failure limit's key: `auth-failures:address:<address key>` or `auth-failures:app:<AppId>`. */
export function failureKey(kind: 'address' | 'app', key: string): string {
  return `auth-failures:${kind}:${key}`;
}
