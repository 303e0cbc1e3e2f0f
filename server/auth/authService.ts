import { ApiError, RESULT_CODES } from '../core/errors.js';
import type { ApiCallerStore, AppRecord, AppStore, WindowCounters } from '../storage/types.js';
import { addressLimitKey } from '../core/addressLimitKey.js';
import { type ApiCaller, inApiNetworks, RecentApiCallers } from './apiNetworks.js';
import { FailureLimiter, type FailureLimitOptions } from '../core/failureLimiter.js';
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

/** How often a node writes the same recent caller to the shared store (cluster mode). */
const SHARE_CALLER_EVERY_MS = 60_000;
/** Callers this node remembers writing; past this the memory starts again (a write more each). */
const MAX_SHARED_CALLER_KEYS = 10_000;

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
  private readonly byAddress: FailureLimiter;
  private readonly byApp: FailureLimiter;
  private readonly callers = new RecentApiCallers();
  /** When this node last wrote each caller (`appId\naddress`) to the shared store, and its verdict then. */
  private readonly sharedAt = new Map<string, { at: number; allowed: boolean }>();

  /**
   * `shared`: counters every node of a cluster sees (Stores.counters); the failure limits then
   * hold across nodes. Absent (the embedded mode): counted in this process.
   */
  constructor(
    private readonly apps: AppStore,
    private readonly opts: AuthOptions = DEFAULT_AUTH_OPTIONS,
    private readonly now: () => number = Date.now,
    private readonly shared?: WindowCounters,
    /** Cluster mode: the recent callers every node sees (else this process's only). */
    private readonly sharedCallers?: ApiCallerStore,
  ) {
    this.byAddress = new FailureLimiter(opts.perAddress);
    this.byApp = new FailureLimiter(opts.perApp);
  }

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
      const caller = this.callers.note(app.appId, clientAddress, allowed, now);
      if (this.sharedCallers) this.shareCaller(app.appId, caller, now);
      if (!allowed) {
        throw new ApiError('ACCESS_DENIED', `this application's API calls are accepted only from its API networks (apiNetworks), and ${clientAddress} is not in them`);
      }
    }
    return app;
  }

  /**
   * The last few addresses an application's API calls came from, newest first: in cluster mode
   * those every node saw (each `lastSeen` up to {@link SHARE_CALLER_EVERY_MS} behind), otherwise
   * this process's.
   */
  async recentCallers(appId: string): Promise<ApiCaller[]> {
    return this.sharedCallers ? this.sharedCallers.recent(appId) : this.callers.of(appId);
  }

  /**
   * Writes a caller to the shared store when it is new to this node, its verdict changed, or it
   * was last written a minute ago or more: at most one write a minute per caller and node, in
   * the background (an API call never waits for it; a failed write is tried on a later call).
   */
  private shareCaller(appId: string, caller: ApiCaller, now: number): void {
    const key = `${appId}\n${caller.address}`;
    const last = this.sharedAt.get(key);
    if (last && last.allowed === caller.allowed && now - last.at < SHARE_CALLER_EVERY_MS) return;
    // Bounded: apps x their recent addresses in practice; cleared whole if something floods it.
    if (this.sharedAt.size >= MAX_SHARED_CALLER_KEYS) this.sharedAt.clear();
    this.sharedAt.set(key, { at: now, allowed: caller.allowed });
    this.sharedCallers!.record(appId, caller.address, caller.allowed, now).catch(() => this.sharedAt.delete(key));
  }

  /** Whether `key` (an address key, or an AppId that exists) has used up its failures. */
  private async isLimited(kind: 'address' | 'app', key: string, now: number): Promise<boolean> {
    const limit = kind === 'address' ? this.opts.perAddress : this.opts.perApp;
    if (this.shared) return (await this.shared.count(`auth-failures:${kind}:${key}`, limit.windowMs, now)) >= limit.maxFailures;
    return (kind === 'address' ? this.byAddress : this.byApp).isLimited(key, now);
  }

  private async recordFailure(kind: 'address' | 'app', key: string, now: number): Promise<void> {
    if (this.shared) await this.shared.hit(`auth-failures:${kind}:${key}`, (kind === 'address' ? this.opts.perAddress : this.opts.perApp).windowMs, now);
    else (kind === 'address' ? this.byAddress : this.byApp).recordFailure(key, now);
  }

  /** Keys the failure limits hold now in this process (addresses, AppIds): bounded whatever callers send. */
  limiterKeys(): { addresses: number; apps: number } {
    return { addresses: this.byAddress.size, apps: this.byApp.size };
  }

  /** The checks alone, without limiting (the widget page reuses them). */
  async check(creds: Credentials, now = this.now()): Promise<AppRecord> {
    const { appId, timestamp, token } = creds;
    if (!appId) throw new ApiError('MISSING_PARAMETER', 'AppId');
    if (!timestamp) throw new ApiError('MISSING_PARAMETER', 'Timestamp');
    if (!token) throw new ApiError('MISSING_PARAMETER', 'Token');
    const app = await this.apps.get(appId);
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
